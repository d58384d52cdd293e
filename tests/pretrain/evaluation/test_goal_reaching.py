import json

from pretrain.evaluation.goal_reaching import goal_eval
from pretrain.export import export_run
from pretrain.run.config import load_config
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
