"""A 2-D point mass on an unbounded plane: the smallest environment on which skill discovery can be seen."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle


class PointMassEnv(gym.Env, EzPickle):
    """The state is the position; an action in ``[-1, 1]^2`` moves it by ``max_speed * action``.

    Registered as ``metra/PointMass-v0`` with a 50-step time limit. The reward is 0 (it exists for METRA's
    intrinsic reward only). ``info["coordinates"]`` holds the position. Pickles like the MuJoCo environments:
    a copy is a fresh environment with the same arguments.

    Example:
        >>> env = PointMassEnv()
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
        >>> bool(obs[0] > 0.8)
        True

    :param max_speed: distance moved by a full action in one step.
    :param reset_noise_scale: half-width of the uniform noise on the initial position.
    """

    metadata = {"render_modes": []}

    def __init__(self, max_speed: float = 1.0, reset_noise_scale: float = 0.1) -> None:
        self.max_speed = float(max_speed)
        self.reset_noise_scale = float(reset_noise_scale)
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._position = np.zeros(2)
        EzPickle.__init__(self, max_speed=max_speed, reset_noise_scale=reset_noise_scale)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-self.reset_noise_scale, self.reset_noise_scale, 2)
        return self._position.astype(np.float32), {"coordinates": self._position.copy()}

    def step(self, action: np.ndarray):
        action = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        self._position = self._position + self.max_speed * action
        return self._position.astype(np.float32), 0.0, False, False, {"coordinates": self._position.copy()}
