"""A 2-D point mass on an unbounded plane: the smallest environment on which skill discovery can be seen."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.envs.call_checks import check_render_mode, check_reset_options


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

    With ``obs_type="pixels"`` the observation is instead a top-down ``image_size`` x ``image_size`` RGB view
    (uint8) of a floor coloured like pixel METRA's DeepMind Control floor (R and G rise with x and y over
    ``[-floor_half_size, floor_half_size]``, B = 128, a faint 1 m grid so that motion shows), centred on the
    mass: the smallest pixel environment on which pixel METRA can be tested on a CPU.

    :param max_speed: distance moved by a full action in one step.
    :param reset_noise_scale: half-width of the uniform noise on the initial position.
    :param obs_type: ``"state"`` (the position) or ``"pixels"`` (the view).
    :param image_size: side of the pixel view.
    :param view_half_size: half-width of the viewed square in metres.
    :param floor_half_size: half-width of the coloured floor in metres (colours saturate beyond it).
    :param render_mode: ``None`` or ``"rgb_array"`` (``render()`` returns the top-down view, whatever ``obs_type``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    OBS_TYPES = ("state", "pixels")

    def __init__(self, max_speed: float = 1.0, reset_noise_scale: float = 0.1, obs_type: str = "state",
                 image_size: int = 48, view_half_size: float = 6.0, floor_half_size: float = 30.0,
                 render_mode: str | None = None) -> None:
        if obs_type not in self.OBS_TYPES:
            raise ValueError(f"obs_type must be one of {self.OBS_TYPES}, got {obs_type!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.max_speed = float(max_speed)
        self.reset_noise_scale = float(reset_noise_scale)
        self.obs_type, self.image_size = obs_type, int(image_size)
        self.view_half_size, self.floor_half_size = float(view_half_size), float(floor_half_size)
        offsets = (np.arange(self.image_size) + 0.5) / self.image_size * 2 * self.view_half_size - self.view_half_size
        self._view_x, self._view_y = offsets[None, :], offsets[::-1, None]  # image rows run from +y down
        if obs_type == "pixels":
            self.observation_space = spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)
        else:
            self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._position = np.zeros(2)
        EzPickle.__init__(self, max_speed=max_speed, reset_noise_scale=reset_noise_scale, obs_type=obs_type,
                          image_size=image_size, view_half_size=view_half_size, floor_half_size=floor_half_size,
                          render_mode=render_mode)

    def _obs(self) -> np.ndarray:
        if self.obs_type == "state":
            return self._position.astype(np.float32)
        return self._view()

    def render(self) -> np.ndarray:
        """The top-down view (the environment must be made with ``render_mode="rgb_array"``)."""
        check_render_mode(self.render_mode)
        return self._view()

    def _view(self) -> np.ndarray:
        x = np.broadcast_to(self._position[0] + self._view_x, (self.image_size, self.image_size))
        y = np.broadcast_to(self._position[1] + self._view_y, (self.image_size, self.image_size))
        ramp = 2 * self.floor_half_size
        grid = ((np.abs(x - np.round(x)) < 0.06) | (np.abs(y - np.round(y)) < 0.06)) * 24.0
        image = np.stack([np.clip((x + self.floor_half_size) / ramp, 0, 1) * 231 + grid,
                          np.clip((y + self.floor_half_size) / ramp, 0, 1) * 231 + grid,
                          np.full_like(x, 128.0)], axis=-1)
        return image.astype(np.uint8)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-self.reset_noise_scale, self.reset_noise_scale, 2)
        return self._obs(), {"coordinates": self._position.copy()}

    def step(self, action: np.ndarray):
        action = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        self._position = self._position + self.max_speed * action
        return self._obs(), 0.0, False, False, {"coordinates": self._position.copy()}


def make_point_mass(obs_type: str = "state", frame_stack: int = 3, **kwargs: Any) -> gym.Env:
    """The point mass; with ``obs_type="pixels"`` its views are stacked ``frame_stack`` deep, as in pixel METRA."""
    env = PointMassEnv(obs_type=obs_type, **kwargs)
    if obs_type == "pixels":
        from metra_gym.wrappers import ChannelStackObservation

        return ChannelStackObservation(env, frame_stack)
    return env
