import json

from pretrain.config import load_config
from pretrain.evaluation.goal_reaching import goal_eval
from pretrain.export import export_run
from pretrain.run.trainer import train


def test_zero_shot_goals_are_reached_far_better_than_by_an_untrained_checkpoint(tmp_path):
    config = load_config("point_mass", ["epochs=40", "eval_every=40", "save_every=40", "torch_threads=1",
                                        "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    export_run(tmp_path / "run", tmp_path / "ckpt")
    result = goal_eval(str(tmp_path / "ckpt"), tmp_path / "out", n_goals=20, seed=0)
    trained, untrained = result["trained"], result["untrained"]
    assert trained["ci95"][0] <= trained["mean"] <= trained["ci95"][1] and len(trained["distances"]) == 20
    # The median: a goal outside the region phi has learned in 40 epochs can send the agent off, dominating the mean.
    assert trained["median"] < 0.25 * untrained["median"], (trained["median"], untrained["median"])
    assert json.loads((tmp_path / "out" / "goal_reaching.json").read_text())["n_goals"] == 20
    assert (tmp_path / "out" / "goal_paths.png").stat().st_size > 1000


def test_a_baseline_of_another_env_is_refused_before_the_rollouts(tmp_path, monkeypatch):
    import pytest

    from pretrain.evaluation import goal_reaching

    def no_rollouts(*args, **kwargs):
        raise AssertionError("rolled out before the baseline was checked")

    monkeypatch.setattr(goal_reaching, "reach_goals", no_rollouts)
    with pytest.raises(ValueError, match="the baseline half_cheetah has env_id 'metra/HalfCheetah-v0', but ant has "
                                         "'metra/Ant-v0'"):
        goal_eval("ant", tmp_path / "out", n_goals=2, baseline_checkpoint="half_cheetah")
    assert not (tmp_path / "out").exists()


def test_a_bundled_checkpoint_of_an_older_release_gets_its_untrained_baseline_and_the_goals_within_reach(tmp_path):
    """The bundled half_cheetah's provenance lists cic_knn_k at the default of the release that wrote it (12, now
    16): an option of another algorithm, which building the untrained baseline must drop, not refuse."""
    from metra_gym.skill_policy import SkillPolicy
    from pretrain.config import PretrainConfig

    recorded = SkillPolicy.from_pretrained("half_cheetah").config["provenance"]["config"]
    assert recorded["cic_knn_k"] != PretrainConfig().cic_knn_k  # what makes this case; else pick another checkpoint
    result = goal_eval("half_cheetah", tmp_path / "out", n_goals=14, seed=1000)
    low, high = result["skills_reach"]["low"][0], result["skills_reach"]["high"][0]
    assert low < -10 and high > 10  # the trained skills run tens of metres both ways in 200 steps
    inside = [low <= g[0] <= high for g in result["goals"]]
    assert 2 <= sum(inside) < 14  # goals up to 100 m away: some beyond the runners' reach (seed 1000: goal 13)
    assert result["within_reach"]["n_goals"] == sum(inside)
    near = [d for d, i in zip(result["trained"]["distances"], inside) if i]
    assert abs(result["within_reach"]["trained"]["mean"] - sum(near) / len(near)) < 1e-3
    assert set(result["within_reach"]) == {"n_goals", "trained", "untrained"}


def test_goals_within_reach_lie_inside_the_skills_box_on_every_coordinate():
    import numpy as np

    from pretrain.evaluation.goal_reaching import within_reach

    box = np.array([[-1.0, -2.0], [1.0, 2.0]])
    goals = np.array([[0.0, 0.0], [1.0, -2.0], [1.5, 0.0], [0.0, -2.5], [-3.0, 3.0]])
    assert within_reach(goals, box).tolist() == [True, True, False, False, False]
    assert within_reach(np.array([[-5.0], [0.5], [5.0]]), box[:, :1]).tolist() == [False, True, False]


def test_standing_still_is_what_skills_that_do_not_move_score(tmp_path):
    """The floor of the comparison's zero-shot numbers: skills whose actions are all 0 (the point mass then stays
    where it was reset) end exactly as far from the goals as ``standing_still`` says, on the same resets and goals."""
    import pytest
    import torch

    from metra_gym.skill_policy import SkillPolicy
    from pretrain.evaluation.goal_reaching import reach_goals, standing_still
    from pretrain.export import export_untrained

    export_untrained(load_config("point_mass", ["torch_threads=1"]), tmp_path / "still")
    policy = SkillPolicy.from_pretrained(tmp_path / "still")
    with torch.no_grad():
        policy.actor.mu.weight.zero_()
        policy.actor.mu.bias.zero_()
    policy._numpy_actor = None  # the single-observation path reads its own copy of the weights
    reached = reach_goals(policy, n_goals=6, steps=20, seed=3)
    assert reached["mean"] == pytest.approx(standing_still(policy.env_id, 6, 3, policy.config["env_kwargs"]), abs=1e-6)
    assert standing_still(policy.env_id, 6, 3) != pytest.approx(standing_still(policy.env_id, 6, 4))
