"""A training config's environments: its id made with its episode length and keywords, the coordinates of the
coverage metrics, the observation normaliser (none, a preset, or fitted on random rollouts at the start of a run),
and its skill-conditioned training vector of them. The pieces are the algorithms' own
(:mod:`pretrain.algorithms.common.training_env`), so that a model built in Python on the same id trains on the same
environments."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import gymnasium as gym
from stable_baselines3.common.vec_env import VecEnv

from metra_gym.envs.normalization import ObservationNormalizer
from pretrain.algorithms import algorithm_class
from pretrain.algorithms.common.normalization import FIT_EPISODES, fit_normalizer, observation_normalizer
from pretrain.algorithms.common.training_env import id_maker, normalized, probe, skill_vec_env
from pretrain.config import FITTED, ConfigError, PretrainConfig
from pretrain.run.env_wrappers import AddCoordinates


def raw_env_factory(config: PretrainConfig) -> Callable[[], gym.Env]:
    """A function building the config's environment before normalisation: ``gym.make`` of its id with its episode
    length and ``env_kwargs``, and the coordinates the config names in ``info["coordinates"]``.

    :raises ConfigError: for an id whose module does not import or that is not registered.
    """
    make_id = id_maker(config.env_id, config.episode_steps, config.env_kwargs)

    def make() -> gym.Env:
        env = make_id()
        return AddCoordinates(env, config.coordinates) if config.coordinates else env

    return make


def probe_env(config: PretrainConfig) -> gym.spaces.Space:
    """Build the config's raw environment once, reset it and take a random step; return its observation space.

    :raises ConfigError: for keywords the environment does not take, actions that are not continuous (Box), and
        coordinates that name a missing observation index or info key.
    """
    return probe(raw_env_factory(config), config.env_id).observation_space


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
    return observation_normalizer(config.normalizer, config.normalizer_stats, obs_dim, config.env_id)


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
    return lambda: normalized(raw(), normalizer, config.normalizer)


def training_env(config: PretrainConfig, make: Callable[[], gym.Env]) -> VecEnv:
    """``n_envs`` skill-conditioned copies of ``make``'s environment, with the skill prior of the config's
    algorithm."""
    prior = algorithm_class(config.algo, config.backbone).learner_class.skill_prior
    return skill_vec_env(make, config.n_envs, config.skill_dim, config.discrete_skills, prior)
