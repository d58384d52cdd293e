"""Skill priors of METRA, in numpy: continuous skills on the unit sphere, discrete skills as one-hots."""

from __future__ import annotations

import numpy as np


def validate_skill_spec(skill_dim: int, discrete: bool) -> None:
    """Raise a clear ``ValueError`` for a skill dimension METRA cannot use."""
    if not isinstance(skill_dim, (int, np.integer)) or skill_dim < 1:
        raise ValueError(f"skill_dim must be an integer >= 1, got {skill_dim!r}")
    if discrete and skill_dim < 2:
        raise ValueError(
            "discrete skills need skill_dim >= 2: with one skill the zero-centred reward is 0/0; "
            "use skill_dim >= 2 or continuous skills"
        )


def sample_skills(rng: np.random.Generator, n: int, skill_dim: int, discrete: bool) -> np.ndarray:
    """Draw ``n`` skills from the prior: uniform one-hots, or N(0, I) draws normalised to unit length."""
    if discrete:
        return np.eye(skill_dim, dtype=np.float32)[rng.integers(0, skill_dim, size=n)]
    z = rng.standard_normal((n, skill_dim))
    return (z / np.linalg.norm(z, axis=1, keepdims=True)).astype(np.float32)


def evaluation_skills(n: int, skill_dim: int, discrete: bool, seed: int = 0) -> np.ndarray:
    """The skills of the coverage metric: ``n`` unit Gaussian draws, or the one-hots in turn (n/D each)."""
    if discrete:
        return np.eye(skill_dim, dtype=np.float32)[np.arange(n) % skill_dim]
    return sample_skills(np.random.default_rng(seed), n, skill_dim, discrete=False)
