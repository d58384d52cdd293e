"""The priors p(z) of continuous skills, by name (numpy only, so that metra_gym stays light).

A skill-discovery algorithm draws one skill per episode from its prior, and the skill policy only knows skills of
that prior: METRA and LSD take unit vectors, DIAYN and DADS N(0, I) draws (the official commands'
``--unit_length 0``), CIC uniform draws in [0, 1]^D (URLB's CIC). Discrete skills are uniform one-hots whatever
the algorithm. A skill checkpoint records its prior in ``config.json`` (``skill_prior``; absent: ``"unit"``).
"""

from __future__ import annotations

import numpy as np

UNIT = "unit"          # N(0, I) draws normalised to unit length: METRA, LSD
GAUSSIAN = "gaussian"  # N(0, I): DIAYN, DADS
UNIFORM = "uniform"    # U[0, 1]^D: CIC
SKILL_PRIORS = (UNIT, GAUSSIAN, UNIFORM)
DESCRIPTIONS = {UNIT: "unit vectors", GAUSSIAN: "N(0, I) draws", UNIFORM: "uniform draws in [0, 1]^D"}
# The action range of a skill-level environment (metra_gym.SkillEnv): the prior's support, or, for N(0, I),
# three standard deviations per coordinate (a skill beyond them is still run as given).
ACTION_BOUNDS = {UNIT: (-1.0, 1.0), GAUSSIAN: (-3.0, 3.0), UNIFORM: (0.0, 1.0)}
UNIT_TOLERANCE = 1e-3  # how far from 1 the norm of a unit skill may be


def check_prior(prior: str) -> None:
    """Raise a clear ``ValueError`` for a name that is not a prior."""
    if prior not in SKILL_PRIORS:
        raise ValueError(f"skill_prior must be one of {', '.join(SKILL_PRIORS)}, got {prior!r}")


def draw_continuous(rng: np.random.Generator, n: int, skill_dim: int, prior: str) -> np.ndarray:
    """``n`` continuous skills from ``prior``, float32, shape (n, skill_dim)."""
    check_prior(prior)
    if prior == UNIFORM:
        return rng.uniform(0.0, 1.0, (n, skill_dim)).astype(np.float32)
    z = rng.standard_normal((n, skill_dim))
    if prior == UNIT:
        z = z / np.linalg.norm(z, axis=1, keepdims=True)
    return z.astype(np.float32)


def outside_prior(skills: np.ndarray, prior: str) -> str | None:
    """What makes finite continuous ``skills`` (shape (n, D)) impossible under ``prior`` (with the rows and what to
    do), or None when every row is a skill of it."""
    if prior == UNIT:
        norms = np.linalg.norm(skills, axis=1)
        zero = norms == 0.0
        if np.any(zero):
            return (f"skills are unit vectors; normalise z: row(s) {np.flatnonzero(zero).tolist()} are zero, which has "
                    "no direction")
        off = np.abs(norms - 1.0) > UNIT_TOLERANCE
        if np.any(off):
            return (f"skills are unit vectors; normalise z (z / ||z||): row(s) {np.flatnonzero(off).tolist()} have "
                    f"norm {norms[off].round(4).tolist()}")
    if prior == UNIFORM:
        off = np.any((skills < 0.0) | (skills > 1.0), axis=1)
        if np.any(off):
            return (f"skills of this checkpoint lie in [0, 1]^D (uniform prior); row(s) {np.flatnonzero(off).tolist()} "
                    "have entries outside it")
    return None  # N(0, I): every finite vector
