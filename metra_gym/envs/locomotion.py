"""The pretraining environments of METRA: Gymnasium's Ant-v5 and HalfCheetah-v5, configured as in the paper.

Both return float32 observations *including* the torso position, and put the position used by the coverage
metrics into ``info["coordinates"]`` (x-y for Ant, x for HalfCheetah), at reset and at every step.

They (and the task environments built on them) pickle as Gymnasium's MuJoCo environments do, through
``EzPickle``: a copy is a fresh environment built from the same constructor arguments. Gymnasium's own
constructors record their positional arguments, which a subclass with keyword-only ``__init__`` cannot take back,
so every class here records its own keyword arguments after the base class has.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.envs.call_checks import check_render_mode, check_reset_options
from metra_gym.envs.mujoco_gl import close_at_exit, mujoco_gl_errors

with mujoco_gl_errors():  # they import MuJoCo's renderers, which refuse an unknown MUJOCO_GL at import
    from gymnasium.envs.mujoco.ant_v5 import AntEnv
    from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv


class _Float32Coordinates:
    """Mixin: float32 observations and ``info["coordinates"]`` = the first ``n_coordinates`` entries of qpos."""

    n_coordinates: int

    def _finish_init(self) -> None:
        shape = self.observation_space.shape
        self.observation_space = spaces.Box(-np.inf, np.inf, shape, np.float32)

    def coordinates(self) -> np.ndarray:
        return self.data.qpos[: self.n_coordinates].astype(np.float64)

    def _get_obs(self) -> np.ndarray:
        return super()._get_obs().astype(np.float32)

    def _get_reset_info(self) -> dict[str, Any]:
        return {**super()._get_reset_info(), "coordinates": self.coordinates()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        return super().reset(seed=seed, options=options)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        info["coordinates"] = self.coordinates()
        return obs, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> np.ndarray | None:
        check_render_mode(self.render_mode)
        frame = super().render()  # the first call makes the rendering context
        close_at_exit(self)
        return frame


class MetraAntEnv(_Float32Coordinates, AntEnv):
    """Ant as in METRA: 29-d observation (qpos[:15] with x-y, qvel[:14]), no contact forces, no termination.

    Registered as ``metra/Ant-v0`` with a 200-step time limit. Keyword arguments go to Gymnasium's ``AntEnv``.
    """

    n_coordinates = 2

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("exclude_current_positions_from_observation", False)
        kwargs.setdefault("include_cfrc_ext_in_observation", False)
        kwargs.setdefault("terminate_when_unhealthy", False)
        AntEnv.__init__(self, **kwargs)
        self._finish_init()
        EzPickle.__init__(self, **kwargs)


class MetraHalfCheetahEnv(_Float32Coordinates, HalfCheetahEnv):
    """HalfCheetah as in METRA: 18-d observation (qpos with x, qvel).

    Registered as ``metra/HalfCheetah-v0`` with a 200-step time limit. Keyword arguments go to Gymnasium's
    ``HalfCheetahEnv``.
    """

    n_coordinates = 1

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("exclude_current_positions_from_observation", False)
        HalfCheetahEnv.__init__(self, **kwargs)
        self._finish_init()
        EzPickle.__init__(self, **kwargs)
