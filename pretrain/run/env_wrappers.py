"""The wrapper a run adds to its environments: the coordinates of the coverage metrics (the others, the observation
normaliser and the skill-conditioned view, are the algorithms': :mod:`pretrain.algorithms.common.training_env`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from pretrain.algorithms.common.training_env import env_name


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
                                 f"{env_name(env)} is {space}, not a flat Box; give info keys")
            outside = [i for i in self.coordinates if not 0 <= i < space.shape[0]]
            if outside:
                raise ValueError(f"coordinates {outside} are outside the {space.shape[0]}-d observation of "
                                 f"{env_name(env)}; give indices in [0, {space.shape[0]}) or info keys")

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
            raise ValueError(f"coordinates name info keys {missing} that {env_name(self.env)} does not give; its info "
                             f"has {sorted(info)}")
        return {**info, "coordinates": np.array([info[key] for key in self.coordinates], dtype=np.float64)}

