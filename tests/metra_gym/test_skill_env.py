
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import metra_gym
from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_env import SkillEnv
from metra_gym.skill_policy import SkillPolicy
from tests.metra_gym.helpers import ant_with_prior


@pytest.mark.parametrize("env_id", ["metra/AntSkills-v0", "metra/HalfCheetahSkills-v0"])
def test_skill_ids_pass_both_checkers(env_id):
    check_env(gym.make(env_id).unwrapped, skip_render_check=True)
    sb3_check_env(gym.make(env_id))


def test_three_ways_to_register():
    assert gym.make("metra_gym:metra/AntSkills-v0").spec.id == "metra/AntSkills-v0"
    gym.register_envs(metra_gym)
    env = gym.make("metra/AntSkills-v0", skill_steps=5, checkpoint="ant")
    assert env.unwrapped.skill_steps == 5 and env.spec.kwargs["skill_steps"] == 5


def test_step_runs_k_frozen_steps_and_sums_their_rewards():
    env = gym.make("metra/AntSkills-v0")
    assert env.action_space == gym.spaces.Box(-1, 1, (2,), np.float32)
    obs, _ = env.reset(seed=3)
    # The same low-level rollout by hand: the frozen policy, deterministic, 25 steps, unit-length skill.
    inner = gym.make("metra/Ant-v0", max_episode_steps=-1)
    low_obs, _ = inner.reset(seed=3)
    np.testing.assert_array_equal(obs, low_obs)
    policy = SkillPolicy.from_pretrained("ant")
    z = np.array([3.0, 4.0], dtype=np.float32)
    total = 0.0
    for _ in range(25):
        low_obs, reward, *_ = inner.step(policy.act(low_obs, z / 5.0))
        total += reward
    obs, reward, terminated, truncated, info = env.step(z)
    assert info["skill_steps"] == 25 and (terminated, truncated) == (False, False)
    np.testing.assert_allclose(info["skill"], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(obs, low_obs, rtol=1e-5)
    assert reward == pytest.approx(total, rel=1e-6)
    assert "coordinates" in info


def test_episode_is_eight_skills_and_a_skill_stops_at_inner_truncation():
    env = gym.make("metra/AntSkills-v0")
    env.reset(seed=0)
    steps = [env.step(env.action_space.sample()) for _ in range(8)]
    assert [s[3] for s in steps] == [False] * 7 + [True]
    short = SkillEnv(gym.make("metra/Ant-v0", max_episode_steps=30), checkpoint="ant")
    short.reset(seed=0)
    assert short.step([1.0, 0.0])[4]["skill_steps"] == 25
    _, _, terminated, truncated, info = short.step([1.0, 0.0])
    assert (info["skill_steps"], terminated, truncated) == (5, False, True)


def test_same_seed_and_actions_give_the_same_trajectory():
    def rollout():
        env = gym.make("metra/AntSkills-v0")
        obs, _ = env.reset(seed=11)
        out = [obs]
        for action in np.random.default_rng(5).uniform(-1, 1, (4, 2)):
            out.append(env.step(action.astype(np.float32))[0])
        return np.stack(out)

    np.testing.assert_array_equal(rollout(), rollout())


def test_discrete_skills_take_an_index():
    env = gym.make("metra/HalfCheetahSkills-v0", skill_steps=3)
    assert env.action_space == gym.spaces.Discrete(16)
    env.reset(seed=0)
    info = env.step(4)[4]
    np.testing.assert_array_equal(info["skill"], np.eye(16)[4])


@pytest.mark.parametrize(("env_id", "action", "message"), [
    ("metra/AntSkills-v0", [1.0, 0.0, 0.0], r"must have shape \(2,\)"),
    ("metra/AntSkills-v0", [np.inf, 0.0], "must be finite"),
    ("metra/AntSkills-v0", [0.0, 0.0], "zero skill action has no direction"),
    ("metra/HalfCheetahSkills-v0", 16, r"integer in \[0, 16\)"),
])
def test_bad_skill_actions(env_id, action, message):
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(np.asarray(action, dtype=np.float32) if isinstance(action, list) else action)


def test_checkpoint_for_another_env_is_refused():
    with pytest.raises(CheckpointError, match="trained on metra/HalfCheetah-v0 with 18-d observations, but this "
                                              "environment's are 29-d"):
        gym.make("metra/AntSkills-v0", checkpoint="half_cheetah")
    with pytest.raises(ValueError, match="skill_steps must be an integer >= 1"):
        gym.make("metra/AntSkills-v0", skill_steps=0)


def test_render_passes_through():
    env = gym.make("metra/AntSkills-v0", render_mode="rgb_array", env_kwargs={"width": 32, "height": 24})
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (24, 32, 3) and frame.dtype == np.uint8


@pytest.mark.parametrize(("action", "error", "message"), [
    (3.7, TypeError, r"must be an integer index in \[0, 16\) \(int or numpy integer\), got 3.7 of type float"),
    ("3", TypeError, "got '3' of type str"),
    (True, TypeError, "got True of type bool"),
    (np.array(3.0), TypeError, "of type ndarray"),
    (np.array([3]), TypeError, "of type ndarray"),
    (2**70, ValueError, r"integer in \[0, 16\), got 1180591620717411303424"),
    (-1, ValueError, r"integer in \[0, 16\), got -1"),
])
def test_discrete_skill_actions_must_be_integers_in_range(action, error, message):
    env = gym.make("metra/HalfCheetahSkills-v0", skill_steps=1, disable_env_checker=True)
    env.reset(seed=0)
    with pytest.raises(error, match=message):
        env.step(action)
    # Python and numpy integers, and 0-d integer arrays, are indices.
    for index in (3, np.int8(3), np.uint64(3), np.array(3)):
        assert np.argmax(env.step(index)[4]["skill"]) == 3


def test_huge_continuous_actions_are_normalised_not_reported_as_non_finite():
    env = gym.make("metra/AntSkills-v0", skill_steps=1, disable_env_checker=True)
    env.reset(seed=0)
    np.testing.assert_allclose(env.step([1e300, 1e300])[4]["skill"], [0.5**0.5] * 2, rtol=1e-6)
    np.testing.assert_allclose(env.step(np.array([3e38, -3e38], dtype=np.float32))[4]["skill"], [0.5**0.5, -0.5**0.5],
                               rtol=1e-6)
    with pytest.raises(TypeError, match="a skill action must be an array of real numbers"):
        env.step([True, False])
    with pytest.raises(TypeError, match="a skill action must be an array of real numbers"):
        env.step(["1", "0"])


@pytest.mark.parametrize("skill_steps", [True, 2.0, "25"])
def test_skill_steps_must_be_a_count(skill_steps):
    with pytest.raises(ValueError, match=f"skill_steps must be an integer >= 1, got {skill_steps!r}"):
        gym.make("metra/AntSkills-v0", skill_steps=skill_steps)


def test_compatibility_messages_say_what_differs():
    with pytest.raises(ValueError, match="policy_obs_dim=20, but checkpoint 'ant' was trained on metra/Ant-v0 with "
                                         "29-d observations; pass policy_obs_dim=29 or leave it unset"):
        SkillEnv("metra/Ant-v0", checkpoint="ant", policy_obs_dim=20)
    with pytest.raises(CheckpointError, match="trained on metra/HalfCheetah-v0 with 18-d observations, but this "
                                              r"environment's pretraining observations \(pretraining_obs_dim\) are 29-d"):
        gym.make("metra/AntMultiGoalsSkills-v0", checkpoint="half_cheetah")
    with pytest.raises(CheckpointError, match="with 29-d observations, but this environment's are 18-d"):
        SkillEnv("metra/HalfCheetah-v0", checkpoint="ant", policy_obs_dim=29)


def test_render_fps_is_per_skill_step():
    inner_fps = gym.make("metra/Ant-v0").metadata["render_fps"]
    assert gym.make("metra/AntSkills-v0").metadata["render_fps"] == pytest.approx(inner_fps / 25)
    env = gym.make("metra/HalfCheetahSkills-v0", skill_steps=5, render_mode="rgb_array",
                   env_kwargs={"width": 16, "height": 12})
    assert env.metadata["render_fps"] == pytest.approx(gym.make("metra/HalfCheetah-v0").metadata["render_fps"] / 5)
    env.reset(seed=0)
    env.step(1)
    assert env.render().shape == (12, 16, 3)


def test_a_skill_env_is_built_on_the_point_mass_from_its_id():
    import torch

    from metra_gym.networks import PhiNetwork, SkillActor

    weights = {f"actor.{k}": v for k, v in SkillActor(2, 2, 2, [8]).state_dict().items()}
    weights.update({f"phi.{k}": v for k, v in PhiNetwork(2, 2, [8]).state_dict().items()})
    config = {"env_id": "metra/PointMass-v0", "obs_dim": 2, "action_dim": 2, "skill_dim": 2,
              "discrete_skills": False, "action_low": [-1.0, -1.0], "action_high": [1.0, 1.0], "actor_hidden": [8],
              "phi_hidden": [8], "normalizer": {"mean": [0.0, 0.0], "std": [1.0, 1.0]}}
    policy = SkillPolicy(config, {k: v.to(torch.float32) for k, v in weights.items()}, source="tiny point mass")
    env = SkillEnv("metra/PointMass-v0", checkpoint=policy, skill_steps=2)
    obs, _ = env.reset(seed=0)
    obs, _, _, _, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
    assert obs.shape == (2,) and "coordinates" in info


def test_env_kwargs_the_env_does_not_take_are_one_clear_error():
    with pytest.raises(ValueError, match=r"cannot build 'metra/Ant-v0' with env_kwargs \{'bogus': 1\}: .*'bogus'$"):
        gym.make("metra/AntSkills-v0", env_kwargs={"bogus": 1})
    with pytest.raises(ValueError, match="env_kwargs must be a dict of keyword arguments"):
        gym.make("metra/AntSkills-v0", env_kwargs=[1, 2])


def test_an_unknown_render_mode_is_refused_not_warned_about():
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['human', 'rgb_array', "
                                         r"'depth_array'.*got 'banana'"):
        gym.make("metra/AntSkills-v0", render_mode="banana")


def _ant_with_prior(tmp_path, prior):
    return ant_with_prior(tmp_path / prior, prior)


def test_gaussian_skills_are_run_as_given_not_projected(tmp_path):
    """DIAYN and DADS skills are N(0, I) draws: the action is the skill itself (its length matters), in a box of
    three standard deviations."""
    folder = _ant_with_prior(tmp_path, "gaussian")
    env = SkillEnv("metra/Ant-v0", checkpoint=folder, skill_steps=5)
    assert env.action_space == gym.spaces.Box(-3, 3, (2,), np.float32)
    obs, _ = env.reset(seed=3)
    inner = gym.make("metra/Ant-v0", max_episode_steps=-1)
    low_obs, _ = inner.reset(seed=3)
    z = np.array([2.5, -0.5], dtype=np.float32)
    for _ in range(5):
        low_obs, *_ = inner.step(env.policy.act(low_obs, z))
    obs, _, _, _, info = env.step(z)
    np.testing.assert_array_equal(info["skill"], z)
    np.testing.assert_allclose(obs, low_obs, rtol=1e-5)
    assert np.isfinite(env.step(np.array([7.0, 0.0], np.float32))[0]).all()  # beyond the box: run as given
    check_env(env, skip_render_check=True)


def test_uniform_skills_live_in_the_unit_cube(tmp_path):
    env = SkillEnv("metra/Ant-v0", checkpoint=_ant_with_prior(tmp_path, "uniform"), skill_steps=2)
    assert env.action_space == gym.spaces.Box(0, 1, (2,), np.float32)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.step(np.array([0.25, 1.0], np.float32))[4]["skill"], [0.25, 1.0])
    with pytest.raises(ValueError, match=r"skills of this checkpoint are uniform draws in \[0, 1\]\^D: every entry of "
                                         r"a skill action must lie in \[0.0, 1.0\], got \[-0.5, 0.5\]"):
        env.step(np.array([-0.5, 0.5], np.float32))


@pytest.mark.parametrize("env", [None, 3, gym.make])
def test_an_env_that_is_neither_an_id_nor_an_env_is_one_clear_error(env):
    with pytest.raises(TypeError, match="env must be a Gymnasium env id .e.g. 'metra/Ant-v0'. or a gymnasium.Env, got"):
        SkillEnv(env=env)


def test_a_skill_id_whose_default_skills_are_not_released_says_so_and_how_to_train_them():
    """A registered skill id may name default skills before they are bundled (Humanoid's were for a while)."""
    env_id = "metra-test/UnreleasedSkills-v0"
    gym.register(env_id, entry_point="metra_gym.skill_env:SkillEnv", max_episode_steps=8,
                 kwargs={"env": "metra/Ant-v0", "checkpoint": "ant_unreleased"})
    try:
        with pytest.raises(CheckpointError, match=f"default skills of {env_id} \\('ant_unreleased'\\) are not bundled "
                                                  "with this version of metra-gym.*--config ant_unreleased"):
            gym.make(env_id)
    finally:
        del gym.registry[env_id]
