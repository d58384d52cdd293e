"""Disagreement (URLB's): the reward is the variance of an ensemble's predictions over its models (unbiased), averaged
over the state's dimensions; each model regresses s' by the Euclidean norm of its error."""

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.disagreement import DISAGREEMENTLearner


def _constant(value) -> nn.Linear:
    """A model predicting ``value`` for every (s, a) (2-d state, 1-d action)."""
    layer = nn.Linear(3, 2)
    with th.no_grad():
        layer.weight.zero_()
        layer.bias.copy_(th.tensor(value))
    return layer


def _learner() -> DISAGREEMENTLearner:
    learner = DISAGREEMENTLearner(obs_dim=2, skill_dim=0, discrete_skills=False, action_dim=1,
                                  ensemble_net_arch=[8], n_models=3)
    learner.ensemble = nn.ModuleList([_constant([0.0, 0.0]), _constant([1.0, 0.0]), _constant([2.0, 3.0])])
    return learner


def test_the_reward_is_the_mean_over_dimensions_of_the_unbiased_variance_over_models():
    obs, actions, next_obs = th.zeros(2, 2), th.zeros(2, 1), th.ones(2, 2)
    # dimension 0: 0, 1, 2 -> variance 1 ; dimension 1: 0, 0, 3 -> variance 3 ; mean 2
    reward = _learner().reward(obs, next_obs, th.zeros(2, 0), actions=actions)
    np.testing.assert_allclose(reward.numpy(), [[2.0], [2.0]], rtol=1e-6)


def test_the_loss_is_the_mean_euclidean_error_of_every_model():
    learner = _learner()
    learner.ensemble_optimizer = th.optim.Adam(learner.ensemble.parameters(), lr=1e-2)
    obs, actions, next_obs = th.zeros(2, 2), th.zeros(2, 1), th.tensor([[1.0, 0.0], [2.0, 3.0]])
    # model 0: 1, sqrt(13) ; model 1: 0, sqrt(10) ; model 2: sqrt(10), 0
    expected = np.mean([1.0, np.sqrt(13), 0.0, np.sqrt(10), np.sqrt(10), 0.0])
    stats = learner.update(obs, next_obs, th.zeros(2, 0), actions=actions)
    assert stats["disagreement/loss"].item() == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="n_models must be >= 2"):
        DISAGREEMENTLearner(obs_dim=2, skill_dim=0, discrete_skills=False, action_dim=1, n_models=1)
