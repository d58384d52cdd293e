"""Vectorised skill environments in forked worker processes (the default start method on Linux)."""

import os
import signal
import subprocess
import sys

import pytest

# Runs in a fresh interpreter: a hang must not take the test process (or its OpenMP state) with it.
SCRIPT = """
import numpy as np, torch, gymnasium as gym, metra_gym
from stable_baselines3.common.vec_env import SubprocVecEnv

# Like any training code in the parent: a multi-threaded torch op starts GNU OpenMP's thread pool before the fork.
torch.set_num_threads(2)
(torch.ones(256, 256) @ torch.ones(256, 256)).sum()

ACTIONS = np.random.default_rng(0).uniform(-1, 1, (3, 2, 2)).astype(np.float32)


def rollout(envs, reset):
    out = [reset()]
    rewards = []
    for actions in ACTIONS:
        obs, reward, *_ = envs.step(actions)
        out.append(obs)
        rewards.append(reward)
    envs.close()
    return np.stack(out), np.stack(rewards)


def make_vec(mode):
    kwargs = {"vector_kwargs": {"context": "fork"}} if mode == "async" else {}
    return gym.make_vec("metra/AntSkills-v0", num_envs=2, vectorization_mode=mode, skill_steps=3, **kwargs)


sync = make_vec("sync")
sync_obs, sync_rewards = rollout(sync, lambda: sync.reset(seed=0)[0])
# The skill env was built and stepped in this parent before every fork below.
asynchronous = make_vec("async")
async_obs, async_rewards = rollout(asynchronous, lambda: asynchronous.reset(seed=0)[0])
np.testing.assert_allclose(async_obs, sync_obs, rtol=1e-6, atol=1e-6)
np.testing.assert_allclose(async_rewards, sync_rewards, rtol=1e-6, atol=1e-6)

sb3 = SubprocVecEnv([lambda: gym.make("metra/AntSkills-v0", skill_steps=3)] * 2, start_method="fork")
sb3.seed(0)
sb3_obs, sb3_rewards = rollout(sb3, sb3.reset)
np.testing.assert_allclose(sb3_obs, sync_obs, rtol=1e-6, atol=1e-6)
np.testing.assert_allclose(sb3_rewards, sync_rewards, rtol=1e-6, atol=1e-6)
print("ok", async_obs.shape)
"""


def test_async_and_subproc_vector_envs_with_fork_match_the_sync_one():
    # A new session, so that on a timeout the hung workers are killed with the parent instead of outliving it.
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, "MUJOCO_GL": "egl"})
    try:
        stdout, stderr = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("vectorised skill envs hung in forked workers (OpenMP after fork)") from None
    assert proc.returncode == 0, stderr
    assert stdout.strip() == "ok (4, 2, 29)"


# `python -c`: no script for the forkserver to import, as in a notebook; only metra_gym's own preload can help.
MAKE_VEC_ENV = """
import numpy as np, metra_gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

venv = make_vec_env({env_id!r}, n_envs=2, vec_env_cls=SubprocVecEnv, env_kwargs={{"skill_steps": 2}},
                    vec_env_kwargs={{"start_method": {start_method!r}}})
venv.reset()
print("ok", venv.step(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))[0].shape)
venv.close()
"""


@pytest.mark.parametrize(("env_id", "start_method"), [("metra/AntSkills-v0", "forkserver"),
                                                      ("metra_gym:metra/AntSkills-v0", "spawn")])
def test_sb3_make_vec_env_with_subprocesses_finds_the_ids(env_id, start_method):
    """SubprocVecEnv's workers call gym.make(id) in processes of their own: the plain id works with the default
    start method (forkserver, which preloads metra_gym), the metra_gym: form everywhere."""
    proc = subprocess.run([sys.executable, "-c", MAKE_VEC_ENV.format(env_id=env_id, start_method=start_method)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "MUJOCO_GL": "egl"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok (2, 29)"
