"""The environments a skill-discovery model trains on, made the same way for a training configuration and for a
model built in Python: ``gym.make`` of an id with the episode length and keywords, the observation normaliser, one
skill z per episode appended to the observation (:class:`SkillConditioned`), and ``n_envs`` copies in one process
(:class:`NoCopyDummyVecEnv`; subprocesses are slower on 2 cores)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.vec_env import VecEnv

from metra_gym.envs.normalization import ObservationNormalizer
from pretrain.algorithms.common.normalization import NormalizeObservationPreset
from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.algorithms.common.vec_env import NoCopyDummyVecEnv
from pretrain.config import ConfigError


def env_name(env: gym.Env) -> str:
    """The id an environment was made from, else its class's name."""
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


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


def id_maker(env_id: str, episode_steps: int | None, env_kwargs: dict[str, Any] | None = None) -> Callable[[], gym.Env]:
    """A function making ``env_id`` with ``episode_steps``-step episodes (None: the id's own limit) and
    ``env_kwargs``.

    :raises ConfigError: for an id whose module does not import or that is not registered.
    """
    import_env_module(env_id)
    if env_id.split(":", 1)[-1] not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("metra/"))
        raise ConfigError(f"unknown environment id {env_id!r}; metra-gym registers {known}, and any id "
                          "Gymnasium can make works (your own package's as 'package.module:Env-v0')")
    limit = {} if episode_steps is None else {"max_episode_steps": episode_steps}
    return lambda: gym.make(env_id, **limit, **(env_kwargs or {}))


def probe(make: Callable[[], gym.Env], name: str) -> gym.Env:
    """Make an environment once, reset it and take a random step, then close it: the environment (closed), whose
    spaces describe the ones ``make`` gives.

    :raises ConfigError: for keywords the environment does not take (and what its wrappers refuse: a coordinate that
        is not there), and for actions that are not continuous (Box).
    """
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
        raise ConfigError(f"cannot build {name!r} with this config: {first}") from None
    check_actions(env)
    return env


def check_actions(env: gym.Env) -> None:
    """Refuse an environment whose actions are not continuous (Box)."""
    if not isinstance(env.action_space, gym.spaces.Box):
        raise ConfigError(f"{env_name(env)} has {env.action_space} actions; skill discovery here trains continuous "
                          "(Box) actions (SAC, CrossQ, TQC)")


def normalized(env: gym.Env, normalizer: ObservationNormalizer | None, name: str) -> gym.Env:
    """``env`` whose observations ``normalizer`` (a configuration's ``name``: a preset or fitted) scales; as it is
    for None."""
    return env if normalizer is None else NormalizeObservationPreset(env, normalizer, name)


def is_skill_conditioned(env: gym.Env) -> bool:
    """Whether ``env`` already appends a skill to its observations (a :class:`SkillConditioned` among its wrappers)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, SkillConditioned):
            return True
        env = env.env
    return False


def skill_vec_env(make: Callable[[], gym.Env], n_envs: int, skill_dim: int, discrete_skills: bool,
                  prior: str) -> VecEnv:
    """``n_envs`` skill-conditioned environments of ``make`` in one process.

    :param make: makes one environment (normalised, with its episode length).
    :param n_envs: how many.
    :param skill_dim: size of the skill z.
    :param discrete_skills: one-hot skills instead of draws from ``prior``.
    :param prior: the algorithm's prior of continuous skills (:mod:`metra_gym.skill_priors`).
    """

    def conditioned() -> gym.Env:
        return SkillConditioned(make(), skill_dim, discrete_skills, prior)

    return NoCopyDummyVecEnv([conditioned] * n_envs)
