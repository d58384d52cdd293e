"""The wrappers of the training environment: the coordinates of the coverage metrics and the fixed observation
normaliser (the skill-conditioned view is the algorithms': :mod:`pretrain.algorithms.common.skill_conditioned`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from metra_gym.envs.normalization import ObservationNormalizer
from pretrain.run.config import FITTED


class NormalizeObservationPreset(gym.ObservationWrapper):
    """Normalise observations with fixed constants (no running statistics, unlike ``NormalizeObservation``): a
    preset's, or a normaliser fitted once (``normalizer: fitted``).

    Example:
        >>> import gymnasium as gym, metra_gym
        >>> env = NormalizeObservationPreset(gym.make("metra/Ant-v0"), "ant")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, obs.dtype
        ((29,), dtype('float32'))

    :param env: the environment, with a 1-D Box observation space.
    :param preset: a name in :data:`PRESETS`, "none", or an :class:`ObservationNormalizer` of the same size
        (a fitted one; ``normalizer_name`` is then "fitted").
    """

    def __init__(self, env: gym.Env, preset: str | ObservationNormalizer) -> None:
        super().__init__(env)
        obs_dim = env.observation_space.shape[0]
        if isinstance(preset, ObservationNormalizer):
            if preset.dim != obs_dim:
                raise ValueError(f"the normaliser is for {preset.dim}-d observations, but the environment's are "
                                 f"{obs_dim}-d; fit it on this environment")
            self.normalizer, self.normalizer_name = preset, FITTED
        else:
            self.normalizer, self.normalizer_name = ObservationNormalizer.from_name(preset, obs_dim), preset
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, env.observation_space.shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return self.normalizer(observation)


class AddCoordinates(gym.Wrapper):
    """Put the agent's position into ``info["coordinates"]`` (what the coverage metrics bin), read from entries of
    the observation or from keys of ``info``.

    Example:
        >>> import gymnasium as gym
        >>> env = AddCoordinates(gym.make("Swimmer-v5", exclude_current_positions_from_observation=False),
        ...                      ["x_position", "y_position"])
        >>> obs, info = env.reset(seed=0)
        >>> info["coordinates"].shape
        (2,)

    :param env: the environment.
    :param coordinates: observation indices (``[0, 1]``; a 1-D Box observation) or ``info`` keys
        (``["x_position", "y_position"]``, in the information of ``reset`` and of every ``step``).
    :raises ValueError: for an index outside the observation.
    """

    def __init__(self, env: gym.Env, coordinates: list[int] | list[str]) -> None:
        super().__init__(env)
        self.coordinates = list(coordinates)
        self.from_info = all(isinstance(c, str) for c in self.coordinates)
        if not self.from_info:
            space = env.observation_space
            if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
                raise ValueError(f"coordinates {self.coordinates} are observation indices, but the observation of "
                                 f"{_name(env)} is {space}, not a flat Box; give info keys")
            outside = [i for i in self.coordinates if not 0 <= i < space.shape[0]]
            if outside:
                raise ValueError(f"coordinates {outside} are outside the {space.shape[0]}-d observation of "
                                 f"{_name(env)}; give indices in [0, {space.shape[0]}) or info keys")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, self._with_coordinates(obs, info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._with_coordinates(obs, info)

    def _with_coordinates(self, obs: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
        if not self.from_info:
            return {**info, "coordinates": np.asarray(obs, dtype=np.float64)[self.coordinates]}
        missing = [key for key in self.coordinates if key not in info]
        if missing:
            raise ValueError(f"coordinates name info keys {missing} that {_name(self.env)} does not give; its info "
                             f"has {sorted(info)}")
        return {**info, "coordinates": np.array([info[key] for key in self.coordinates], dtype=np.float64)}


def _name(env: gym.Env) -> str:
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__
