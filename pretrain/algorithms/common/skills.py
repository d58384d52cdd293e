"""Skill priors, in numpy: discrete skills are uniform one-hots; continuous skills follow the algorithm's prior
(:attr:`pretrain.algorithms.common.skill_learner.SkillLearner.skill_prior`, one of
:data:`metra_gym.skill_priors.SKILL_PRIORS`: unit vectors, N(0, I) or U[0, 1]^D)."""

from __future__ import annotations

import numpy as np

from metra_gym.skill_priors import UNIT, draw_continuous


def sample_skills(rng: np.random.Generator, n: int, skill_dim: int, discrete: bool, prior: str = UNIT) -> np.ndarray:
    """Draw ``n`` skills from the prior: uniform one-hots, or continuous skills of ``prior``."""
    if discrete:
        return np.eye(skill_dim, dtype=np.float32)[rng.integers(0, skill_dim, size=n)]
    return draw_continuous(rng, n, skill_dim, prior)


def evaluation_skills(n: int, skill_dim: int, discrete: bool, seed: int = 0, prior: str = UNIT) -> np.ndarray:
    """The skills of the coverage metric: ``n`` draws from the training prior (seeded), or the one-hots in turn
    (n/D each). As the official code's evaluation, which draws from the prior the skills were trained with."""
    if discrete:
        return np.eye(skill_dim, dtype=np.float32)[np.arange(n) % skill_dim]
    return sample_skills(np.random.default_rng(seed), n, skill_dim, discrete=False, prior=prior)
