import numpy as np
import pytest

from pretrain.algorithms.common.skills import evaluation_skills, sample_skills, validate_skill_spec


def test_continuous_skills_are_unit_vectors_spread_over_the_sphere():
    z = sample_skills(np.random.default_rng(0), 20_000, 2, discrete=False)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    angles = np.arctan2(z[:, 1], z[:, 0])
    counts, _ = np.histogram(angles, bins=8, range=(-np.pi, np.pi))
    assert counts.min() > 0.9 * 20_000 / 8  # isotropic: every octant about equally likely


def test_discrete_skills_are_uniform_one_hots():
    z = sample_skills(np.random.default_rng(0), 16_000, 16, discrete=True)
    assert set(np.unique(z)) == {0.0, 1.0}
    np.testing.assert_array_equal(z.sum(axis=1), 1.0)
    counts = z.sum(axis=0)
    assert counts.min() > 0.85 * 1000 and counts.max() < 1.15 * 1000


def test_evaluation_skills_cycle_through_one_hots():
    z = evaluation_skills(48, 16, discrete=True)
    np.testing.assert_array_equal(z.sum(axis=0), 3.0)


@pytest.mark.parametrize(("dim", "discrete", "message"),
                         [(0, False, "skill_dim must be an integer >= 1"), (1, True, "discrete skills need skill_dim >= 2")])
def test_bad_skill_spec(dim, discrete, message):
    with pytest.raises(ValueError, match=message):
        validate_skill_spec(dim, discrete)
