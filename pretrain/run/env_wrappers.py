"""The wrappers of the training environment: the coordinates of the coverage metrics, the fixed observation
normaliser and the skill-conditioned view."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from metra_gym.envs.normalization import ObservationNormalizer
from metra_gym.skill_priors import UNIT, check_prior
from pretrain.algorithms.common.skills import sample_skills, validate_skill_spec
from pretrain.run.config import FITTED


class SkillConditioned(gym.Wrapper):
    """Draw one skill z per episode from the algorithm's prior and append it to every observation.

    A flat observation becomes ``[obs, z]`` (float32); an image observation (uint8, ``(H, W, C)``) becomes the
    Dict ``{"pixels": image, "skill": z}``, so that pixels stay uint8 (SB3 transposes and scales them, and
    :class:`pretrain.run.pixel_replay.FrameStackReplayBuffer` stores each frame once).

    ``reset(options={"skill": z})`` runs a chosen skill instead (evaluation). The skill is drawn from the
    environment's own ``np_random``, so seeding the environment seeds the skills. ``info["skill"]`` holds z.

    Example:
        >>> import gymnasium as gym, metra_gym
        >>> env = SkillConditioned(gym.make("metra/PointMass-v0"), skill_dim=3, discrete=True)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, float(obs[2:].sum())
        ((5,), 1.0)

    :param env: an environment with a 1-D Box or a uint8 (H, W, C) image observation space.
    :param skill_dim: size of z.
    :param discrete: uniform one-hot skills instead of continuous ones.
    :param prior: the prior of continuous skills, a name of :data:`metra_gym.skill_priors.SKILL_PRIORS` (the
        algorithm's :attr:`~pretrain.algorithms.common.skill_learner.SkillLearner.skill_prior`; METRA's unit vectors
        by default).
    """

    def __init__(self, env: gym.Env, skill_dim: int, discrete: bool, prior: str = UNIT) -> None:
        super().__init__(env)
        validate_skill_spec(skill_dim, discrete)
        check_prior(prior)
        self.skill_dim, self.discrete, self.skill_prior = skill_dim, discrete, prior
        space = env.observation_space
        skill_space = gym.spaces.Box(-1.0, 1.0, (skill_dim,), np.float32)
        self.pixels = isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.dtype == np.uint8
        if self.pixels:
            self.observation_space = gym.spaces.Dict({"pixels": space, "skill": skill_space})
        elif isinstance(space, gym.spaces.Box) and len(space.shape) == 1:
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, (space.shape[0] + skill_dim,), np.float32)
        else:
            raise ValueError(f"skill conditioning needs a flat Box or a uint8 (H, W, C) image observation, got {space}")
        self.skill = np.zeros(skill_dim, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        if options is not None and "skill" in options:
            skill = np.asarray(options["skill"], dtype=np.float32)
            if skill.shape != (self.skill_dim,):
                raise ValueError(f"options['skill'] must have shape ({self.skill_dim},), got {skill.shape}")
            self.skill = skill
        else:
            self.skill = sample_skills(self.np_random, 1, self.skill_dim, self.discrete, self.skill_prior)[0]
        return self._with_skill(obs), {**info, "skill": self.skill}

    def step(self, action: np.ndarray):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_skill(obs), reward, terminated, truncated, info

    def _with_skill(self, obs: np.ndarray) -> np.ndarray | dict[str, np.ndarray]:
        if self.pixels:
            return {"pixels": obs, "skill": self.skill.copy()}
        return np.concatenate([np.asarray(obs, dtype=np.float32), self.skill])


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
