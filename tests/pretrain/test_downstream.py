"""The high-level controllers over skills train (SAC and PPO) and the flat baseline; the controller's defaults are
the ones that let it learn within a few tens of thousands of low-level steps (see ``pretrain/downstream.py``)."""

import numpy as np
import torch

from metra_gym.registration import SKILL_STEPS
from pretrain.downstream import controller_env, flat_agent, hierarchical_agent


def test_short_hierarchical_sb3_runs_complete():
    sac = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    sac.learn(48)
    assert sac.num_timesteps == 48 and sac._n_updates > 0
    ppo = hierarchical_agent("cheetah_hurdle", seed=0, n_envs=8)
    ppo.learn(512)
    assert ppo.num_timesteps == 512
    flat = flat_agent("cheetah_goal", seed=0, learning_starts=100)
    flat.learn(200)
    assert flat._n_updates > 0


def test_goal_controllers_see_the_task_information_only():
    """The whole observation (with the unbounded absolute position) slowed the Ant controller down: it sees the
    goal relative to the agent, HalfCheetahGoal's the goal distance; the hurdle controller sees everything."""
    for name, size in (("ant_multigoals", 2), ("cheetah_goal", 1), ("cheetah_hurdle", 18 + 2)):
        env = controller_env(name)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.shape == obs.shape == (size,), name
        inner = env.unwrapped.env.unwrapped
        if name == "ant_multigoals":
            np.testing.assert_allclose(obs, inner.goal - inner.coordinates(), rtol=1e-5, atol=1e-5)
        obs, *_ = env.step(env.action_space.sample())
        assert obs.shape == (size,)
        env.close()


def test_the_quadruped_goal_controller_sees_the_goal_relative_to_the_torso(tmp_path):
    """On untrained state-Quadruped skills (the bundled ones are trained in a campaign): 4 continuous skills, the
    controller's observation the goal minus the torso's x-y."""
    from pretrain.config import load_config
    from pretrain.export import export_untrained

    checkpoint = export_untrained(load_config("quadruped_state", ["net_width=32"]), tmp_path / "skills")
    env = controller_env("quadruped_goal", checkpoint=str(checkpoint))
    obs, _ = env.reset(seed=0)
    inner = env.unwrapped.env.unwrapped
    assert env.action_space.shape == (4,) and obs.shape == (2,)
    np.testing.assert_allclose(obs, inner.goal - inner.coordinates(), rtol=1e-5, atol=1e-5)
    obs, *_ = env.step(env.action_space.sample())
    assert obs.shape == (2,)
    env.close()


def test_high_level_sac_defaults_learn_within_a_small_budget():
    """30,000 low-level steps are 1,200 controller transitions: with the pretraining settings (learning after 1,000,
    one update each, alpha from 1) that was 200 updates and the Ant controller did not learn."""
    sac = hierarchical_agent("ant_multigoals", seed=0)
    transitions = 30_000 // SKILL_STEPS
    updates = (transitions - sac.learning_starts) * sac.gradient_steps // sac.train_freq.frequency
    assert sac.learning_starts <= transitions // 10
    assert updates >= 3 * transitions
    assert float(torch.exp(sac.log_ent_coef.detach())) <= 0.1 + 1e-6
    assert sac.learning_rate >= 3e-4
    sac.learn(sac.learning_starts + 4)
    assert sac._n_updates >= 3 * sac.gradient_steps  # 4 updates per transition from the first
