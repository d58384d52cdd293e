"""The downstream protocols: what a controller sees, what trains it (the paper's settings from the skill checkpoint,
metra-gym 0.3's kept as a variant), and the flat baseline."""

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from metra_gym.registration import SKILL_STEPS, SKILLS_PER_EPISODE
from pretrain.downstream import SACSettings, controller_env, flat_agent, hierarchical_agent
from pretrain.downstream.protocol import PROTOCOLS, checkpoint_config, episode_shape


def test_short_runs_of_every_learner_complete():
    sac = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    sac.learn(80)
    assert sac._n_updates > 0
    ppo = hierarchical_agent("cheetah_hurdle", seed=0, n_envs=8)
    ppo.learn(512)
    assert ppo.num_timesteps == 512
    flat = flat_agent("cheetah_goal", seed=0, learning_starts=100)
    flat.learn(1700)
    assert flat._n_updates > 0
    old = hierarchical_agent("ant_multigoals", seed=0, protocol_name="v0.3", learning_starts=16)
    old.learn(48)
    assert old._n_updates > 0


@pytest.mark.parametrize(("name", "state_dim", "task_dim"), [("ant_multigoals", 29, 2), ("cheetah_goal", 18, 1),
                                                             ("cheetah_hurdle", 18, 2)])
def test_the_paper_controller_sees_the_normalised_state_and_the_task_information(name, state_dim, task_dim):
    """The paper's pi(z | s, s_task): the pretraining observation as the skill policy sees it (normalised with the
    skills' normaliser), then the task information unchanged."""
    env = controller_env(name)
    obs, _ = env.reset(seed=0)
    skill_env = env.unwrapped
    raw = skill_env._obs
    assert obs.shape == env.observation_space.shape == (state_dim + task_dim,)
    np.testing.assert_allclose(obs[:state_dim], skill_env.policy.normalizer(raw[:state_dim]), rtol=1e-6)
    np.testing.assert_allclose(obs[state_dim:], raw[state_dim:], rtol=1e-6)
    assert not np.allclose(obs[:state_dim], raw[:state_dim])  # normalised, not passed through
    obs, *_ = env.step(env.action_space.sample())
    assert obs.shape == (state_dim + task_dim,)
    env.close()


def test_the_v03_controllers_see_the_task_information_only_on_goal_tasks():
    for name, size in (("ant_multigoals", 2), ("cheetah_goal", 1), ("cheetah_hurdle", 18 + 2)):
        env = controller_env(name, protocol_name="v0.3")
        obs, _ = env.reset(seed=0)
        assert env.observation_space.shape == obs.shape == (size,), name
        inner = env.unwrapped.env.unwrapped
        if name == "ant_multigoals":
            np.testing.assert_allclose(obs, inner.goal - inner.coordinates(), rtol=1e-5, atol=1e-5)
        env.close()


@pytest.mark.parametrize(("task_name", "config", "state_dim"), [("quadruped_goal", "quadruped_state", 80),
                                                               ("humanoid_goal", "humanoid_state", 69)])
def test_the_dmc_goal_controllers_see_the_state_and_the_goal_relative_to_the_torso(tmp_path, task_name, config,
                                                                                   state_dim):
    """On untrained state skills: continuous skills; K = 50 control steps (25 policy steps)."""
    from pretrain.config import load_config
    from pretrain.export import export_untrained

    skills = load_config(config, ["net_width=32"])
    checkpoint = export_untrained(skills, tmp_path / "skills")
    env = controller_env(task_name, checkpoint=str(checkpoint))
    obs, _ = env.reset(seed=0)
    inner = env.unwrapped.env.unwrapped
    assert env.action_space.shape == (skills.skill_dim,) and obs.shape == (state_dim + 2,)
    np.testing.assert_allclose(obs[state_dim:], inner.goal - inner.coordinates(), rtol=1e-5, atol=1e-5)
    assert env.unwrapped.skill_steps * inner.action_repeat == 50
    env.close()


def test_the_heading_variant_adds_the_torsos_heading_to_the_papers_view(tmp_path):
    """``paper_heading``: the paper's view, then the cosine and sine of the torso's heading (the yaw of the Humanoid's
    root orientation; its episodes start facing any way); a task without a heading is one clear error."""
    from pretrain.config import load_config
    from pretrain.export import export_untrained

    checkpoint = str(export_untrained(load_config("humanoid_state", ["net_width=32"]), tmp_path / "skills"))
    paper, heading = (controller_env("humanoid_goal", checkpoint, name) for name in ("paper", "paper_heading"))
    yaws = []
    for seed in (0, 1):
        view = heading.reset(seed=seed)[0]
        np.testing.assert_array_equal(view[:-2], paper.reset(seed=seed)[0])
        w, x, y, z = heading.unwrapped.env.unwrapped.physics.data.qpos[3:7]
        yaws.append(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))
        assert heading.observation_space.shape == view.shape == (69 + 2 + 2,)
        np.testing.assert_allclose(view[-2:], [np.cos(yaws[-1]), np.sin(yaws[-1])], atol=1e-5)
    assert abs(yaws[0] - yaws[1]) > 0.1
    paper.close()
    heading.close()
    with pytest.raises(ValueError, match="has no heading"):
        controller_env("cheetah_goal", protocol_name="paper_heading")


@pytest.mark.parametrize(("skill_id", "control_steps_per_skill"), [
    ("metra/AntMultiGoalsSkills-v0", 25), ("metra/HalfCheetahGoalSkills-v0", 25),
    ("metra/HalfCheetahHurdleSkills-v0", 25), ("metra/QuadrupedGoalSkills-v0", 50), ("metra/HumanoidGoalSkills-v0", 50)])
def test_k_and_the_horizon_are_the_papers(skill_id, control_steps_per_skill):
    """K = 25 (Ant, HalfCheetah), 50 control steps (Quadruped, Humanoid); 8 skills an episode (200 low-level steps,
    400 control steps on DMC)."""
    spec = gym.spec(skill_id)
    repeat = 2 if "Quadruped" in skill_id or "Humanoid" in skill_id else 1
    assert spec.kwargs.get("skill_steps", SKILL_STEPS) * repeat == control_steps_per_skill
    assert spec.max_episode_steps == SKILLS_PER_EPISODE == 8


def test_the_paper_sac_takes_the_skill_checkpoints_pretraining_settings():
    settings = SACSettings.of_checkpoint(checkpoint_config("ant_multigoals", None))
    # The bundled `ant` recorded its training: lr 4e-4, width 256, 8 episodes then 100 updates, learning from 10,000.
    assert (settings.learning_rate, settings.net_width, settings.episodes_per_epoch, settings.gradient_steps,
            settings.learning_starts, settings.alpha_init) == (4e-4, 256, 8, 100, 10_000, 0.01)
    assert settings.source == "the skill checkpoint's"
    sac = hierarchical_agent("ant_multigoals", seed=0)
    assert sac.learning_rate == 4e-4 and sac.learning_starts == 10_000 and sac.gradient_steps == 100
    assert (sac.train_freq.frequency, sac.train_freq.unit.value) == (8, "episode")
    assert sac.policy.actor.latent_pi[0].out_features == 256 and sac.target_entropy == -1.0  # -|skill| / 2
    assert float(torch.exp(sac.log_ent_coef.detach())) == pytest.approx(0.01)
    # Without a recorded config: the paper's (lr 1e-4, 2 x 1024, 50 updates per 8 episodes).
    paper = SACSettings.of_checkpoint({"provenance": {}})
    assert (paper.learning_rate, paper.net_width, paper.gradient_steps, paper.source) == (
        1e-4, 1024, 50, "the paper's (none recorded)")


def test_the_paper_ppo_follows_the_papers_table():
    """64 episodes an epoch, 10 minibatch steps of 256 per epoch (5 passes over 512 transitions, as the released
    downstream code counts them), entropy 0.01, GAE lambda 0.95, clip 0.2; lr and widths of the pretraining."""
    ppo = hierarchical_agent("cheetah_goal", seed=0, n_envs=4)
    assert ppo.n_steps * ppo.n_envs == 64 * SKILLS_PER_EPISODE and ppo.batch_size == 256
    assert ppo.n_epochs * (ppo.n_steps * ppo.n_envs) // ppo.batch_size == 10
    assert (ppo.ent_coef, ppo.gae_lambda, ppo.clip_range(1.0), ppo.learning_rate) == (0.01, 0.95, 0.2, 4e-4)
    old = hierarchical_agent("cheetah_goal", seed=0, n_envs=4, protocol_name="v0.3")
    assert (old.n_epochs, old.learning_rate) == (10, 3e-4)


def test_each_ablation_is_the_paper_protocol_with_one_of_v03s_differences():
    """``paper_task_view``: v0.3's view, the paper's PPO; ``paper_ten_passes``: the paper's view, v0.3's PPO."""
    def view(name):
        return controller_env("cheetah_goal", protocol_name=name).observation_space.shape

    def passes(name):
        ppo = hierarchical_agent("cheetah_goal", seed=0, n_envs=4, protocol_name=name)
        return ppo.n_epochs, ppo.learning_rate

    assert view("paper_task_view") == view("v0.3") != view("paper") == view("paper_ten_passes")
    assert passes("paper_task_view") == passes("paper") != passes("paper_ten_passes") == passes("v0.3")


def test_the_k10_variant_chooses_a_skill_every_10_steps_over_the_same_episode(monkeypatch):
    """``paper_k10``: K = 10 on every task and 20 skill steps an episode (the same 200 low-level steps); the paper's
    PPO epoch stays 64 episodes (now 1,280 controller steps) and 10 minibatch steps."""
    for name in ("ant_multigoals", "quadruped_goal"):
        assert episode_shape(name) == (25, 8)
        assert episode_shape(name, "paper_k10") == (10, 20)
    env = controller_env("ant_multigoals", protocol_name="paper_k10")
    env.reset(seed=0)
    assert env.step(env.action_space.sample())[4]["skill_steps"] == 10 and env.spec.max_episode_steps == 20
    env.close()
    ppo = hierarchical_agent("cheetah_hurdle", seed=0, n_envs=4, protocol_name="paper_k10")
    assert ppo.n_steps * ppo.n_envs == 64 * 20
    assert ppo.n_epochs * (ppo.n_steps * ppo.n_envs) // ppo.batch_size == 10
    monkeypatch.setitem(PROTOCOLS, "k7", replace(PROTOCOLS["paper"], name="k7", skill_steps=7))
    with pytest.raises(ValueError, match="K = 7 does not divide ant_multigoals's episode of 200 steps"):
        controller_env("ant_multigoals", protocol_name="k7")


def test_the_v03_sac_learns_within_a_small_budget():
    """metra-gym 0.3's controller SAC, kept as a variant: 30,000 low-level steps are 1,200 controller transitions, and
    with the pretraining settings that was 200 updates; it learns after 100, 4 updates each, alpha from 0.1."""
    sac = hierarchical_agent("ant_multigoals", seed=0, protocol_name="v0.3")
    transitions = 30_000 // SKILL_STEPS
    assert sac.learning_starts <= transitions // 10
    assert (transitions - sac.learning_starts) * sac.gradient_steps // sac.train_freq.frequency >= 3 * transitions
    assert float(torch.exp(sac.log_ent_coef.detach())) == pytest.approx(0.1)


def test_unknown_names_are_one_clear_error():
    with pytest.raises(ValueError, match="unknown downstream protocol 'paper2'; choose one of"):
        controller_env("ant_multigoals", protocol_name="paper2")
    with pytest.raises(ValueError, match="unknown task 'ant'; choose one of"):
        controller_env("ant")


class _Box(gym.Env):
    """A 5-dim random walk with a 2-dim action: enough for SAC to update on."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(5, np.float32), {}

    def step(self, action):
        obs = self.np_random.normal(size=5).astype(np.float32)
        return obs, float(action[0] - obs[0]), False, False, {}


def _critic_weight_gradients(agent) -> list[int]:
    """Count how often the first critic's first layer gets a weight gradient during the agent's updates."""
    counts = [0]
    agent.critic.q_networks[0][0].weight.register_hook(lambda grad: counts.__setitem__(0, counts[0] + 1))
    return counts


class _LinearFeatures(BaseFeaturesExtractor):
    """A features extractor with weights (SB3's default flattening has none)."""

    def __init__(self, observation_space, features_dim=8):
        super().__init__(observation_space, features_dim)
        self.linear = torch.nn.Linear(observation_space.shape[0], features_dim)

    def forward(self, observations):
        return torch.relu(self.linear(observations))


@pytest.mark.parametrize("shared", [False, True])  # shared: the critics hold the actor's features extractor
def test_lean_sac_updates_as_sac_does_without_the_actor_steps_critic_gradients(tmp_path, shared):
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import Logger

    from pretrain.downstream.protocol import LeanSAC

    policy_kwargs = {"net_arch": [32, 32]}
    if shared:
        policy_kwargs.update(share_features_extractor=True, features_extractor_class=_LinearFeatures)
    settings = dict(learning_starts=50, batch_size=32, gradient_steps=3, ent_coef="auto_0.1",
                    policy_kwargs=policy_kwargs, seed=3, device="cpu")
    agents, counts = {}, {}
    for cls in (SAC, LeanSAC):  # one after the other: SB3 seeds the global RNGs at construction
        agents[cls] = cls("MlpPolicy", _Box(), **settings)
        counts[cls] = _critic_weight_gradients(agents[cls])
        agents[cls].learn(60)
    for plain, lean in zip(agents[SAC].policy.parameters(), agents[LeanSAC].policy.parameters(), strict=True):
        torch.testing.assert_close(lean, plain, rtol=0, atol=0)  # the same updates, bit for bit
    updates = 3 * (60 - 50)
    assert counts[SAC][0] == 2 * updates  # stock SAC: the critic's loss and the actor's
    assert counts[LeanSAC][0] == updates  # lean: the critic's loss only
    agents[LeanSAC].save(tmp_path / "lean.zip")
    loaded = LeanSAC.load(tmp_path / "lean.zip", env=_Box(), device="cpu")  # beside the CPU buffer below (SB3: "auto")
    assert type(SAC.load(tmp_path / "lean.zip")) is SAC  # a plain SAC zip
    loaded.replay_buffer = agents[LeanSAC].replay_buffer  # the zip holds no buffer
    loaded.set_logger(Logger(None, []))
    loaded_counts = _critic_weight_gradients(loaded)
    loaded.train(gradient_steps=4, batch_size=8)
    assert loaded_counts[0] == 4  # the hooks come back with a load
    assert all(p.requires_grad for p in loaded.critic.parameters())


def test_lean_sac_unfreezes_the_critics_when_an_update_fails_between_its_steps():
    from pretrain.downstream.protocol import LeanSAC

    agent = LeanSAC("MlpPolicy", _Box(), learning_starts=20, batch_size=8, policy_kwargs={"net_arch": [8]},
                    seed=0, device="cpu")
    agent.learn(25)

    def failing_step(*args, **kwargs):
        raise RuntimeError("actor step failed")

    agent.actor.optimizer.step = failing_step  # the critics' step has frozen them when this raises
    with pytest.raises(RuntimeError, match="actor step failed"):
        agent.train(gradient_steps=1, batch_size=8)
    assert all(p.requires_grad for p in agent.critic.parameters())


def test_a_run_records_the_stable_baselines3_class_that_loads_its_zip():
    from sb3_contrib import TQC
    from stable_baselines3 import PPO

    from pretrain.downstream.protocol import LeanSAC
    from pretrain.downstream.runs import sb3_class

    class OurTQC(TQC):
        pass

    # Instances without their set-up: only the class matters.
    assert [sb3_class(cls.__new__(cls)) for cls in (LeanSAC, PPO, OurTQC)] == ["SAC", "PPO", "TQC"]
