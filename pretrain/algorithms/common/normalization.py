"""Observation normalisation of the training environment: the fixed normaliser wrapper, and a normaliser fitted on
random rollouts (``normalizer: fitted``). The constants of METRA's presets are :mod:`metra_gym.envs.normalization`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from metra_gym.envs.normalization import ObservationNormalizer
from pretrain.config import FITTED, ConfigError

# Random-action episodes of the fitted normaliser: METRA's presets took 10,000 of length 50; a run's first
# seconds buy a rougher estimate, which is what a normaliser needs.
FIT_EPISODES = 20
# A dimension that random actions leave (almost) constant is left unscaled instead of divided by ~0.
MIN_FITTED_STD = 1e-6


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
    :param name: the name of an :class:`ObservationNormalizer` given as ``preset`` (default: "fitted").
    """

    def __init__(self, env: gym.Env, preset: str | ObservationNormalizer, name: str = FITTED) -> None:
        super().__init__(env)
        obs_dim = env.observation_space.shape[0]
        if isinstance(preset, ObservationNormalizer):
            if preset.dim != obs_dim:
                raise ValueError(f"the normaliser is for {preset.dim}-d observations, but the environment's are "
                                 f"{obs_dim}-d; fit it on this environment")
            self.normalizer, self.normalizer_name = preset, name
        else:
            self.normalizer, self.normalizer_name = ObservationNormalizer.from_name(preset, obs_dim), preset
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, env.observation_space.shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return self.normalizer(observation)


def observation_normalizer(name: str, stats: dict[str, list[float]] | None, obs_dim: int,
                           env_id: Any = None) -> ObservationNormalizer:
    """The normaliser ``name`` (none, a preset, or fitted with ``stats``) for ``obs_dim``-d observations (the
    identity for ``none``).

    :raises ConfigError: for a preset or fitted statistics of another observation size, or fitted without stats.
    """
    if name == FITTED:
        if stats is None:
            raise ConfigError("normalizer: fitted has no normalizer_stats yet; they are fitted at the start of a run")
        normalizer = ObservationNormalizer(stats["mean"], stats["std"])
        if normalizer.dim != obs_dim:
            raise ConfigError(f"normalizer_stats were fitted on {normalizer.dim}-d observations, but {env_id} "
                              f"with these env_kwargs gives {obs_dim}-d ones; remove normalizer_stats to fit them "
                              "again for this environment")
        return normalizer
    try:
        return ObservationNormalizer.from_name(name, obs_dim)
    except ValueError as error:
        raise ConfigError(f"{error} ({env_id}); use normalizer: fitted or none") from None


def fit_normalizer(make_raw: Callable[[], gym.Env], episodes: int, steps: int, seed: int,
                   min_std: float | None = None) -> dict[str, list[float]]:
    """Mean and std of the observations of ``episodes`` episodes of uniformly random actions (at most ``steps``
    steps each; resets seeded ``seed + i``), as the ``normalizer_stats`` of a config.

    :param make_raw: builds the environment without normalisation.
    :param min_std: each std raised to this (a config's ``normalizer_min_std``); None: a std below
        ``MIN_FITTED_STD`` becomes 1 (the dimension is left unscaled).
    """
    env = make_raw()
    env.action_space.seed(seed)
    observations = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            observations.append(obs)
            for _ in range(steps):
                obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
                observations.append(obs)
                if terminated or truncated:
                    break
    finally:
        env.close()
    stacked = np.asarray(observations, dtype=np.float64)
    std = stacked.std(axis=0)
    if min_std is None:
        std[std < MIN_FITTED_STD] = 1.0
    else:
        std = np.maximum(std, min_std)
    return {"mean": stacked.mean(axis=0).tolist(), "std": std.tolist()}
