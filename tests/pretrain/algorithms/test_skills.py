import numpy as np
import pytest

from pretrain.algorithms.common.skills import evaluation_skills, sample_skills
from pretrain.config import ALGORITHMS, REGISTRY, load_config, validate_skill_spec
from pretrain.run.envs import env_factory, training_env


def test_continuous_skills_are_unit_vectors_spread_over_the_sphere():
    z = sample_skills(np.random.default_rng(0), 20_000, 2, discrete=False)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    angles = np.arctan2(z[:, 1], z[:, 0])
    counts, _ = np.histogram(angles, bins=8, range=(-np.pi, np.pi))
    assert counts.min() > 0.9 * 20_000 / 8  # isotropic: every octant about equally likely


def test_gaussian_skills_are_n01_draws_and_uniform_ones_fill_the_unit_cube():
    z = sample_skills(np.random.default_rng(0), 20_000, 2, discrete=False, prior="gaussian")
    np.testing.assert_allclose(z.mean(0), 0.0, atol=0.03)
    np.testing.assert_allclose(np.cov(z.T), np.eye(2), atol=0.03)
    z = sample_skills(np.random.default_rng(0), 20_000, 3, discrete=False, prior="uniform")
    assert z.min() >= 0.0 and z.max() <= 1.0
    np.testing.assert_allclose(z.mean(0), 0.5, atol=0.01)
    np.testing.assert_allclose(z.var(0), 1 / 12, rtol=0.05)
    with pytest.raises(ValueError, match="skill_prior must be one of unit, gaussian, uniform, got 'laplace'"):
        sample_skills(np.random.default_rng(0), 1, 2, discrete=False, prior="laplace")


@pytest.mark.parametrize("algo", [algo for algo in ALGORITHMS if REGISTRY[algo].skills])
def test_every_algorithm_trains_and_evaluates_on_its_own_prior(algo):
    """The prior is the algorithm's (SkillLearner.skill_prior): METRA and LSD unit vectors, DIAYN and DADS N(0, I)
    (the official --unit_length 0), CIC uniform in [0, 1]^64 (URLB), APS's tasks unit vectors of 10 (URLB); the
    training environments draw from it, and so do the evaluation skills (seeded) and the learner's own sampler."""
    expected = {"metra": "unit", "lsd": "unit", "diayn": "gaussian", "dads": "gaussian", "cic": "uniform",
                "aps": "unit"}[algo]
    config = load_config("point_mass", [f"algo={algo}", "n_envs=64"])
    venv = training_env(config, env_factory(config))
    assert set(venv.get_attr("skill_prior")) == {expected}
    skills = venv.reset()[:, 2:]
    norms = np.linalg.norm(skills, axis=1)
    if expected == "unit":
        np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
    elif expected == "gaussian":
        assert norms.std() > 0.3 and skills.min() < 0.0
    else:
        assert skills.shape[1] == 64 and skills.min() >= 0.0 and skills.max() <= 1.0 and skills.mean() > 0.4
    evaluation = evaluation_skills(48, config.skill_dim, False, seed=0, prior=expected)
    np.testing.assert_array_equal(evaluation, sample_skills(np.random.default_rng(0), 48, config.skill_dim, False,
                                                            expected))


@pytest.mark.parametrize("algo", [algo for algo in ALGORITHMS if not REGISTRY[algo].skills])
def test_an_exploration_method_trains_on_the_plain_observation(algo):
    config = load_config("point_mass", [f"algo={algo}", "n_envs=2"])
    venv = training_env(config, env_factory(config))
    assert config.skill_dim == 0 and venv.observation_space.shape == (2,)
    obs = venv.reset()
    np.testing.assert_array_equal(obs, np.stack([venv.envs[i].unwrapped._position for i in range(2)]).astype(np.float32))
    assert evaluation_skills(48, 0, False, seed=0).shape == (48, 0)


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
                         [(-1, False, "skill_dim must be an integer >= 1 \\(0: no skill"),
                          (0, True, "discrete skills need skill_dim >= 2"), (1, True, "discrete skills need skill_dim >= 2")])
def test_bad_skill_spec(dim, discrete, message):
    with pytest.raises(ValueError, match=message):
        validate_skill_spec(dim, discrete)
