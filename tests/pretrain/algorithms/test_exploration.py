"""What the exploration methods (ICM, LBS, RND, APT, Disagreement, APS) share with the run machinery: no skill input
(APS's task vector is its skill), a plain exported policy that skill environments refuse, and learning for real on
the point mass: every method's training trajectories cover more than random actions do."""

import json

import gymnasium as gym
import numpy as np
import pytest
import torch as th

import metra_gym
from metra_gym.skill_checkpoint.format import CheckpointError, read_config
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms import algorithm_class
from pretrain.cli import main
from pretrain.config import REGISTRY, load_config
from pretrain.run.coverage import SkillRollouts, coverage
from pretrain.run.envs import env_factory
from pretrain.run.trainer import train

EXPLORATION = [algo for algo, entry in REGISTRY.items() if not entry.skills or algo == "aps"]
TINY = ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1", "save_replay_buffer=false",
        "eval_skills=4"]


def _exported(tmp_path, algo: str):
    train(load_config("point_mass", [f"algo={algo}", *TINY]), tmp_path / "run", verbose=0)
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt")]) == 0
    return tmp_path / "ckpt"


def test_the_six_exploration_methods_are_the_papers():
    assert EXPLORATION == ["icm", "lbs", "rnd", "apt", "disagreement", "aps"]


def test_an_exploration_method_exports_a_plain_policy_that_acts_like_the_sb3_actor(tmp_path, capsys):
    checkpoint = _exported(tmp_path, "icm")
    written = json.loads((checkpoint / "config.json").read_text())
    assert (written["skill_dim"], written["format_version"], written["skill_env_id"]) == (0, 6, None)
    policy = SkillPolicy.from_pretrained(checkpoint)
    model = algorithm_class("icm").load(tmp_path / "run" / "run_state" / "latest" / "model.zip", device="cpu")
    obs = np.random.default_rng(0).uniform(-5, 5, (16, 2)).astype(np.float32)
    with th.no_grad():
        expected = model.actor(th.as_tensor(obs), deterministic=True).numpy()
    np.testing.assert_allclose(policy.act(obs), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(policy.act(obs[3]), expected[3], rtol=1e-5, atol=1e-5)  # the NumPy path of one obs
    assert policy.act(obs, np.zeros((16, 0))).shape == (16, 2)
    with pytest.raises(ValueError, match="is a plain ICM policy without skills .*: call act\\(obs\\) without z"):
        policy.act(obs[0], np.array([1.0, 0.0]))
    card = (checkpoint / "README.md").read_text()
    assert "# ICM policy for metra/PointMass-v0" in card and "policy.act(env.reset(seed=0)[0])" in card
    # The held-out evaluation rolls the plain policy out from seeded resets
    assert main(["evaluate", str(checkpoint), "--skills", "4", "--out", str(tmp_path / "eval")]) == 0
    assert json.loads((tmp_path / "eval" / "coverage.json").read_text())["policy_coverage"] >= 1


def test_a_skill_env_refuses_a_plain_policy_with_one_clear_error(tmp_path):
    checkpoint = _exported(tmp_path, "rnd")
    message = ("holds a plain RND policy pi\\(a \\| s\\) without skills "
               ".*SkillPolicy.from_pretrained\\(checkpoint\\).act")
    with pytest.raises(CheckpointError, match=message):
        metra_gym.SkillEnv("metra/PointMass-v0", checkpoint=checkpoint)
    with pytest.raises(CheckpointError, match=message):
        gym.make("metra/AntSkills-v0", checkpoint=str(checkpoint))
    # Older readers (format 5 and before) refuse skill_dim 0 instead of misreading it
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(json.dumps({**config, "format_version": 5}))
    with pytest.raises(CheckpointError, match="'skill_dim' must be a positive integer, got 0"):
        read_config(checkpoint)


def test_aps_exports_its_task_vectors_as_skills_a_skill_env_runs(tmp_path):
    checkpoint = _exported(tmp_path, "aps")
    env = metra_gym.SkillEnv("metra/PointMass-v0", checkpoint=checkpoint, skill_steps=5)
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (10,), np.float32)  # URLB's sf_dim, unit vectors
    env.reset(seed=0)
    assert env.step(env.action_space.sample())[4]["skill_steps"] == 5
    with pytest.raises(ValueError, match="these skills need a skill z of shape \\(10,\\)"):
        SkillPolicy.from_pretrained(checkpoint).act(np.zeros(2))


# The learning runs: 8 point masses, 50-step episodes, 3 epochs of random actions (learning_starts) then 17 of the
# method's policy, 50 gradient steps of batch 128 each on networks of 32; about 10 CPU seconds a method.
LEARNING = ["epochs=20", "learning_starts=1200", "gradient_steps=50", "batch_size=128", "net_width=32",
            "eval_every=20", "save_every=20", "torch_threads=1", "save_replay_buffer=false", "eval_skills=8"]


def _total_coverage(algo: str, run_dir) -> int:
    """The bins visited by every training trajectory of the method's learning run."""
    history = train(load_config("point_mass", [f"algo={algo}", *LEARNING]), run_dir, verbose=0).history
    return history[-1]["total_coverage"]


@pytest.fixture(scope="module")
def total_coverage(tmp_path_factory):
    """Each method's learning run, trained once for the tests that read its total coverage."""
    totals: dict[str, int] = {}

    def total(algo: str) -> int:
        if algo not in totals:
            totals[algo] = _total_coverage(algo, tmp_path_factory.mktemp(algo))
        return totals[algo]

    return total


def random_total_coverage(config) -> int:
    """Bins visited by as many episodes of uniformly random actions as the run trained on (seeded)."""
    episodes = config.epochs * config.n_envs
    rng = np.random.default_rng(0)
    rollouts = SkillRollouts(env_factory(config), episodes, config.episode_steps)
    bins = coverage(rollouts.run(lambda obs, z: rng.uniform(-1, 1, (len(obs), 2)), np.zeros((episodes, 0))))
    rollouts.close()
    return bins


@pytest.mark.parametrize("algo", EXPLORATION)
def test_training_trajectories_cover_more_than_random_actions(algo, total_coverage):
    """Total coverage, the paper's measure for these methods: the bins of every training trajectory so far. Random
    actions wander about sqrt(50) steps from the start (326 bins in 160 episodes); each method's runs cover more than
    twice that (measured, seed 0: 758 for Disagreement to 3233 for APS)."""
    total = total_coverage(algo)
    random_total = random_total_coverage(load_config("point_mass", [f"algo={algo}", *LEARNING]))
    print(f"{algo}: total coverage {total} (random actions {random_total})")
    assert total >= 2 * random_total


@pytest.mark.parametrize("algo", ["apt", "aps"])
def test_the_particle_entropy_covers_more_than_the_same_run_without_its_reward(algo, total_coverage, tmp_path,
                                                                              monkeypatch):
    """A policy trained on no reward at all also beats random actions on the point mass (SAC's policy keeps a
    direction: about 1000-1300 bins, measured), so the reward itself is tested against that ablation: the same run
    with the learner's reward zeroed. Where the reward is the k-NN particle entropy (APT, APS) it adds a clear margin
    (seed 0: 1758 and 3233 against 961 and 1232); the model-error rewards (ICM, LBS, RND, Disagreement) do not on a
    plane whose dynamics their models learn everywhere, and are tested on their models' error below."""
    total = total_coverage(algo)
    learner = algorithm_class(algo).learner_class
    reward = learner.reward
    monkeypatch.setattr(learner, "reward", lambda self, *args, **kwargs: th.zeros_like(reward(self, *args, **kwargs)))
    without = _total_coverage(algo, tmp_path / "without")
    print(f"{algo}: total coverage {total} (without its reward {without})")
    assert total >= 1.3 * without


def _transitions(generator: th.Generator, n: int, low: float, high: float):
    """n point-mass transitions s' = s + a from states uniform in [low, high]^2 up to sign (a box around the start
    for low < 0, four far squares for low > 0) and actions uniform in [-1, 1]^2."""
    obs = th.rand(n, 2, generator=generator) * (high - low) + low
    if low > 0:
        obs = obs * th.where(th.rand(n, 2, generator=generator) < 0.5, -1.0, 1.0)
    actions = th.rand(n, 2, generator=generator) * 2 - 1
    return obs, actions, obs + actions


@pytest.mark.parametrize("algo", ["icm", "lbs", "rnd", "disagreement"])
def test_a_models_error_falls_on_the_states_it_was_trained_on(algo):
    """The model-error rewards learn what is known: after 300 steps on transitions within 3 m of the start, a
    minibatch of mostly such (visited) transitions and a few 10-15 m away (novel; a replay minibatch holds few) gets
    a reward on the novel ones far above the visited ones, by a ratio at least 3 times the untrained model's (measured:
    3.8 to 6.9 times). Rewards in one minibatch, because RND standardises each minibatch with its own statistics."""
    th.manual_seed(0)
    generator = th.Generator().manual_seed(0)
    cls = algorithm_class(algo)
    widths, learning_rate = REGISTRY[algo].networks
    actions = {"action_dim": 2} if cls.learner_class.uses_actions else {}
    learner = cls.learner_class(obs_dim=2, skill_dim=0, discrete_skills=False, **actions, **{widths: [32, 32],
                                                                                              learning_rate: 1e-3})
    z = th.zeros(256, 0)

    def rewards() -> tuple[float, float]:
        """The mean reward of 240 visited and of 16 novel transitions of one minibatch."""
        visited, novel = _transitions(generator, 240, -3.0, 3.0), _transitions(generator, 16, 10.0, 15.0)
        obs, action, next_obs = (th.cat(pair) for pair in zip(visited, novel))
        reward = learner.reward(obs, next_obs, z, **({"actions": action} if actions else {})).squeeze(1)
        return reward[:240].mean().item(), reward[240:].mean().item()

    visited_before, novel_before = rewards()
    for _ in range(300):
        obs, action, next_obs = _transitions(generator, 256, -3.0, 3.0)
        learner.update(obs, next_obs, z, **({"actions": action} if actions else {}))
    visited, novel = rewards()
    print(f"{algo}: visited {visited_before:.3g} -> {visited:.3g}, novel {novel_before:.3g} -> {novel:.3g}")
    assert visited > 0  # every one of these rewards is a norm, a variance or a KL
    assert novel / visited >= 3 * novel_before / visited_before
