"""The vectorised training environment: SB3's DummyVecEnv without the deep copy of every step's infos, recording
each environment's RNG state before its resets (what an exact resume needs)."""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn


class NoCopyDummyVecEnv(DummyVecEnv):
    """``DummyVecEnv`` whose ``step_wait`` hands out the envs' own info dicts instead of deep copies.

    SB3 deep-copies the list of infos on every vec-step to protect against envs that reuse one dict. Our envs
    (Gymnasium's MuJoCo envs under our wrappers) build a fresh dict at every step, so the copy only costs time
    (how much: ``benchmarks/README.md``, "Cheaper gradient steps").

    ``pre_reset_rngs[i]`` is the RNG state of environment ``i`` just before its latest reset: restoring it and
    resetting again reproduces the same initial state and skill (see :mod:`pretrain.run.run_state`).
    """

    def __init__(self, env_fns) -> None:
        super().__init__(env_fns)
        self.pre_reset_rngs: list[dict] = [self._rng_state(i) for i in range(self.num_envs)]

    def _rng_state(self, i: int) -> dict:
        return self.envs[i].unwrapped.np_random.bit_generator.state

    def reset(self):
        self.pre_reset_rngs = [self._rng_state(i) for i in range(self.num_envs)]
        return super().reset()

    def step_wait(self) -> VecEnvStepReturn:
        for i, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(self.actions[i])
            self.buf_rews[i] = reward
            self.buf_dones[i] = terminated or truncated
            # SB3's convention: a time-limit end is reported through the info, not the done flag.
            info["TimeLimit.truncated"] = truncated and not terminated
            if self.buf_dones[i]:
                info["terminal_observation"] = obs
                self.pre_reset_rngs[i] = self._rng_state(i)
                obs, self.reset_infos[i] = env.reset()
            self.buf_infos[i] = info
            self._save_obs(i, obs)
        return self._obs_from_buf(), np.copy(self.buf_rews), np.copy(self.buf_dones), list(self.buf_infos)
