"""Gymnasium wrappers of metra_gym that any environment can use (imports neither MuJoCo nor torch)."""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import RecordConstructorArgs


class ChannelStackObservation(gym.Wrapper, RecordConstructorArgs):
    """Stack the last ``num_stack`` image observations along the channel axis, as pixel METRA does.

    An ``(H, W, C)`` image observation becomes ``(H, W, num_stack * C)`` with the same dtype (channels-last, so
    64 x 64 x 3 frames stacked 3 times give 64 x 64 x 9 uint8). The oldest frame comes first: channels
    ``[0:C]`` are the oldest, ``[-C:]`` the newest. ``reset`` fills the whole stack with the first frame, so no frame
    of a previous episode survives a reset.

    Gymnasium's ``FrameStackObservation`` stacks on a new leading axis ``(num_stack, H, W, C)`` instead.
    """

    def __init__(self, env: gym.Env, num_stack: int = 3) -> None:
        if isinstance(num_stack, (bool, np.bool_)) or not isinstance(num_stack, (int, np.integer)) or num_stack < 1:
            raise ValueError(f"num_stack must be an integer >= 1, got {num_stack!r}")
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 3:
            raise ValueError(f"ChannelStackObservation stacks (H, W, C) image observations; got {space}")
        RecordConstructorArgs.__init__(self, num_stack=int(num_stack))
        gym.Wrapper.__init__(self, env)
        self.num_stack = int(num_stack)
        self.observation_space = spaces.Box(np.concatenate([space.low] * self.num_stack, axis=-1),
                                            np.concatenate([space.high] * self.num_stack, axis=-1),
                                            dtype=space.dtype)
        self._frames: deque[np.ndarray] = deque(maxlen=self.num_stack)

    def _stacked(self) -> np.ndarray:
        return np.concatenate(self._frames, axis=-1)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._frames.clear()
        self._frames.extend([obs] * self.num_stack)
        return self._stacked(), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._frames.append(obs)
        return self._stacked(), reward, terminated, truncated, info
