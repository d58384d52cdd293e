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
    assert env.render_mode is None
    env = gym.make("metra/PointMass-v0", render_mode="rgb_array", image_size=16)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (16, 16, 3) and frame.dtype == np.uint8
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['rgb_array'\], got 'human'"):
        gym.make("metra/PointMass-v0", render_mode="human")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


CALL_CHECKED_IDS = ["metra/Ant-v0", "metra/HalfCheetah-v0", "metra/PointMass-v0", "metra/AntMultiGoals-v0",
                    "metra/HalfCheetahHurdle-v0", "metra/AntSkills-v0",
                    pytest.param("metra/Quadruped-v0", marks=pytest.mark.skipif(not _has("dm_control"),
                                                                                reason="needs the [dmc] extra")),
                    pytest.param("metra/Kitchen-v0", marks=pytest.mark.skipif(not _has("gymnasium_robotics"),
                                                                              reason="needs the [kitchen] extra"))]
STATE = {"metra/Quadruped-v0": {"obs_type": "state"}, "metra/Kitchen-v0": {"obs_type": "state"}}


@pytest.mark.parametrize("env_id", CALL_CHECKED_IDS)
def test_reset_options_that_are_not_a_mapping_are_refused(env_id):
    env = gym.make(env_id, **STATE.get(env_id, {}))
    with pytest.raises(TypeError, match="reset options must be a dict .or None., got 'x' of type str"):
        env.reset(options="x")
    # A mapping is passed down by wrappers with their own keys (a skill wrapper's {"skill": z}): not refused.
    first = env.reset(seed=3, options={"skill": [1.0, 0.0]})[0]
    np.testing.assert_array_equal(first, env.reset(seed=3, options={})[0])
    env.close()


@pytest.mark.parametrize("env_id", CALL_CHECKED_IDS)
def test_render_without_a_render_mode_is_one_clear_error(env_id):
    env = gym.make(env_id, **STATE.get(env_id, {}))
    env.reset(seed=0)
    with pytest.raises(gym.error.UnsupportedMode, match="render.. needs a render mode, and this environment was made "
                                                        "without one; make it with render_mode='rgb_array'"):
        env.render()
    env.close()


def test_a_process_that_rendered_and_never_closed_its_envs_exits_without_egl_tracebacks():
    """Left to the garbage collector, an env's rendering context was freed after the EGL display was terminated:
    ``Exception ignored in ... EGLError`` at every exit. Gymnasium's MuJoCo renderer and dm_control's, in either
    order."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    makes = ["gym.make('metra/Ant-v0', render_mode='rgb_array')"]
    if _has("dm_control"):
        makes = ["gym.make('metra/Quadruped-v0', frame_size=16)", *makes, "gym.make('metra/Quadruped-v0', "
                 "obs_type='state', render_mode='rgb_array', frame_size=16)"]
    if _has("gymnasium_robotics"):
        makes.append("gym.make('metra/Kitchen-v0', frame_size=16)")
    code = ("import gymnasium as gym, metra_gym\n"
            f"envs = [{', '.join(makes)}]\n"
            "for env in envs:\n"
            "    env.reset(seed=0)\n"
            "    if env.render_mode: env.render()\n"
            "print('rendered')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                               "MUJOCO_GL": "egl"})
    assert done.returncode == 0 and done.stdout.strip() == "rendered", done.stderr[-2000:]
    assert "Exception ignored" not in done.stderr and "EGLError" not in done.stderr, done.stderr[-2000:]
