"""The skill-conditioned view of an environment that every skill-discovery algorithm trains on: one skill z per
episode, appended to the observation (the backbones read z from there)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from metra_gym.skill_priors import UNIT, check_prior
from pretrain.algorithms.common.skills import sample_skills
from pretrain.config import validate_skill_spec


class SkillConditioned(gym.Wrapper):
    """Draw one skill z per episode from the algorithm's prior and append it to every observation.

    A flat observation becomes ``[obs, z]`` (float32); an image observation (uint8, ``(H, W, C)``) becomes the
    Dict ``{"pixels": image, "skill": z}``, so that pixels stay uint8 (SB3 transposes and scales them, and
    :class:`pretrain.algorithms.common.pixel_replay.FrameStackReplayBuffer` stores each frame once).

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
