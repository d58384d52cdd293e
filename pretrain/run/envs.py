"""A training config's environments: what they need beyond ``gym.make`` (the user's own module of a
``module:Env-v0`` id, the observation normaliser: none, a preset, or fitted on random rollouts; the source of the
coordinates of the coverage metrics), the normalised environment of a run, and its skill-conditioned training
vector of them."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from metra_gym.envs.normalization import ObservationNormalizer
from pretrain import algorithms
from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.run.config import FITTED, ConfigError, PretrainConfig
from pretrain.run.env_wrappers import AddCoordinates, NormalizeObservationPreset
from pretrain.run.vec_env import NoCopyDummyVecEnv

# Random-action episodes of the fitted normaliser: METRA's presets took 10,000 of length 50; a run's first
# seconds buy a rougher estimate, which is what a normaliser needs.
FIT_EPISODES = 20
# A dimension that random actions leave (almost) constant is left unscaled instead of divided by ~0.
MIN_FITTED_STD = 1e-6


def import_env_module(env_id: str) -> None:
    """Import the module of a ``module:Env-v0`` id (a training config is the user's own input; a downloaded skill
    checkpoint never gets here), turning a failed import into one :class:`ConfigError`."""
    if ":" not in env_id:
        return
    module = env_id.split(":", 1)[0]
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 (any error of the user's module is reported the same way)
        raise ConfigError(f"env_id {env_id!r}: cannot import the module {module!r} ({type(error).__name__}: "
                          f"{error}); install it or put it on PYTHONPATH, or give a registered id") from None


def raw_env_factory(config: PretrainConfig) -> Callable[[], gym.Env]:
    """A function building the config's environment before normalisation: ``gym.make`` of its id with its episode
    length and ``env_kwargs``, and the coordinates the config names in ``info["coordinates"]``.

    :raises ConfigError: for an id whose module does not import or that is not registered.
    """
    import_env_module(config.env_id)
    if config.env_id.split(":", 1)[-1] not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("metra/"))
        raise ConfigError(f"unknown environment id {config.env_id!r}; metra-gym registers {known}, and any id "
                          "Gymnasium can make works (your own package's as 'package.module:Env-v0')")

    def make() -> gym.Env:
        env = gym.make(config.env_id, max_episode_steps=config.episode_steps, **config.env_kwargs)
        return AddCoordinates(env, config.coordinates) if config.coordinates else env

    return make


def probe_env(config: PretrainConfig) -> gym.spaces.Space:
    """Build the config's raw environment once, reset it and take a random step; return its observation space.

    :raises ConfigError: for keywords the environment does not take, actions that are not continuous (Box), and
        coordinates that name a missing observation index or info key.
    """
    make = raw_env_factory(config)
    try:
        env = make()
        try:
            env.reset(seed=0)
            env.action_space.seed(0)
            env.step(env.action_space.sample())
        finally:
            env.close()
    except (TypeError, ValueError) as error:
        first = str(error).split(" was raised from the environment creator")[0]
        raise ConfigError(f"cannot build {config.env_id!r} with this config: {first}") from None
    if not isinstance(env.action_space, gym.spaces.Box):
        raise ConfigError(f"{config.env_id!r} has {env.action_space} actions; the skill policies here need "
                          "continuous (Box) actions")
    return env.observation_space


def with_fitted_normalizer(config: PretrainConfig) -> PretrainConfig:
    """The config with ``normalizer_stats`` fitted on random rollouts when it asks for a fitted normaliser and has
    none yet (a new run); otherwise the config as it is. A run stores them in its config.yaml, and an export in the
    skill checkpoint's config.json."""
    if config.normalizer != FITTED or config.normalizer_stats is not None:
        return config
    space = probe_env(config)
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
        raise ConfigError(f"normalizer: {FITTED} is for flat observations; {config.env_id!r} gives {space} (use "
                          "normalizer: none)")
    stats = fit_normalizer(raw_env_factory(config), FIT_EPISODES, config.episode_steps, config.seed,
                           config.normalizer_min_std)
    return dataclasses.replace(config, normalizer_stats=stats)


def config_normalizer(config: PretrainConfig, obs_dim: int) -> ObservationNormalizer:
    """The normaliser of a config for ``obs_dim``-d observations (the identity for ``none``).

    :raises ConfigError: for a preset or fitted statistics of another observation size.
    """
    if config.normalizer == FITTED:
        if config.normalizer_stats is None:
            raise ConfigError("normalizer: fitted has no normalizer_stats yet; train() fits them at the start of a run")
        normalizer = ObservationNormalizer(config.normalizer_stats["mean"], config.normalizer_stats["std"])
        if normalizer.dim != obs_dim:
            raise ConfigError(f"normalizer_stats were fitted on {normalizer.dim}-d observations, but {config.env_id} "
                              f"with these env_kwargs gives {obs_dim}-d ones; remove normalizer_stats to fit them "
                              "again for this environment")
        return normalizer
    try:
        return ObservationNormalizer.from_name(config.normalizer, obs_dim)
    except ValueError as error:
        raise ConfigError(f"{error} ({config.env_id}); use normalizer: fitted or none") from None


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


def env_factory(config: PretrainConfig) -> Callable[[], gym.Env]:
    """A function building one normalised environment of the config (raises ConfigError for an environment that
    cannot be trained on). ``info["coordinates"]`` is there when the environment or the config's ``coordinates``
    give it; without it training runs without coverage metrics. A fitted normaliser without statistics yet is fitted
    here (as a new run's, :func:`with_fitted_normalizer`), so that a config such as ``quadruped_state`` builds its
    environments outside a run too (the benchmarks)."""
    config = with_fitted_normalizer(config)
    space = probe_env(config)
    normalizer = None if config.normalizer == "none" else config_normalizer(config, space.shape[0])
    raw = raw_env_factory(config)

    def make() -> gym.Env:
        env = raw()
        return env if normalizer is None else NormalizeObservationPreset(env, normalizer)

    return make


def training_env(config: PretrainConfig, make: Callable[[], gym.Env]) -> VecEnv:
    """``n_envs`` skill-conditioned copies in one process (subprocesses are slower on 2 cores)."""
    prior = algorithms.skill_prior(config)  # the algorithm's prior of continuous skills

    def conditioned() -> gym.Env:
        return SkillConditioned(make(), config.skill_dim, config.discrete_skills, prior)

    return NoCopyDummyVecEnv([conditioned] * config.n_envs)
