import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metra_gym  # noqa: F401
from metra_gym.envs.normalization import ObservationNormalizer


@pytest.mark.parametrize(("env_id", "obs_dim", "n_coordinates"),
                         [("metra/Ant-v0", 29, 2), ("metra/HalfCheetah-v0", 18, 1), ("metra/PointMass-v0", 2, 2)])
def test_registered_env_passes_checker_and_reports_coordinates(env_id, obs_dim, n_coordinates):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (obs_dim,) and obs.dtype == np.float32
    assert info["coordinates"].shape == (n_coordinates,)
    obs, _, _, _, info = env.step(env.action_space.sample())
    # The torso position is part of the observation (x-y first for Ant, x first for HalfCheetah).
    np.testing.assert_allclose(obs[:n_coordinates], info["coordinates"], atol=1e-5)


def test_ant_never_terminates_and_is_cut_at_200_steps():
    env = gym.make("metra/Ant-v0")
    env.reset(seed=1)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        # Full-force actions flip the Ant over; Ant-v5's default would terminate it as unhealthy.
        _, _, terminated, truncated, _ = env.step(np.ones(8, dtype=np.float32))
        steps += 1
    assert (steps, terminated, truncated) == (200, False, True)


def test_normaliser_rejects_wrong_size_and_unknown_name():
    with pytest.raises(ValueError, match="29-d observations, but the environment's are 18-d"):
        ObservationNormalizer.from_name("ant", 18)
    with pytest.raises(ValueError, match="unknown normaliser preset 'antt'"):
        ObservationNormalizer.from_name("antt", 29)


def test_point_mass_takes_render_mode_like_gymnasium_envs():
    env = gym.make("metra/PointMass-v0", render_mode=None)
    env.reset(seed=0)
    assert env.render_mode is None and env.render() is None
    env = gym.make("metra/PointMass-v0", render_mode="rgb_array", image_size=16)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (16, 16, 3) and frame.dtype == np.uint8
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['rgb_array'\], got 'human'"):
        gym.make("metra/PointMass-v0", render_mode="human")
