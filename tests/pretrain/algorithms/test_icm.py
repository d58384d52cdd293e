"""ICM (URLB's): the curiosity reward log(1 + c ||s' - f(s, a)||) and the forward + inverse loss, on hand-computed
values."""

import math

import numpy as np
import pytest
import torch as th

from pretrain.algorithms.icm import ICMLearner
from tests.pretrain.algorithms.test_forward_inverse import point_mass_model

OBS = th.tensor([[0.0, 0.0], [1.0, 1.0]])
ACTIONS = th.tensor([[1.0, 0.0], [0.0, -1.0]])
NEXT_OBS = th.tensor([[1.0, 0.0], [4.0, 4.0]])  # forward errors 0 and 5 under f(s, a) = s + a
Z = th.zeros(2, 0)  # no skill


def _learner(**kwargs) -> ICMLearner:
    th.manual_seed(0)
    learner = ICMLearner(obs_dim=2, skill_dim=0, discrete_skills=False, action_dim=2, icm_net_arch=[8], **kwargs)
    learner.model = point_mass_model()
    return learner


def test_the_reward_is_the_log_of_one_plus_the_scaled_forward_error():
    reward = _learner().reward(OBS, NEXT_OBS, Z, actions=ACTIONS)
    np.testing.assert_allclose(reward.numpy(), [[0.0], [math.log(6.0)]], rtol=1e-6)
    reward = _learner(icm_scale=2.0).reward(OBS, NEXT_OBS, Z, actions=ACTIONS)
    np.testing.assert_allclose(reward.numpy(), [[0.0], [math.log(11.0)]], rtol=1e-6)


def test_the_loss_is_the_mean_forward_error_plus_the_mean_inverse_error_and_a_step_lowers_it():
    learner = _learner()
    learner.icm_optimizer = th.optim.Adam(learner.model.parameters(), lr=1e-3)  # the model was replaced
    t = np.tanh(0.5)  # the inverse model predicts tanh(0.5) in both dimensions
    expected = np.mean([0.0, 5.0]) + np.mean([np.hypot(1 - t, t), np.hypot(t, 1 + t)])
    stats = learner.update(OBS, NEXT_OBS, Z, actions=ACTIONS)
    assert stats["icm/loss"].item() == pytest.approx(expected, rel=1e-6)
    assert stats["icm/forward_error"].item() == pytest.approx(2.5, rel=1e-6)
    after = learner.update(OBS, NEXT_OBS, Z, actions=ACTIONS)["icm/loss"].item()
    assert after < expected - 1e-3


def test_the_learner_needs_the_actions():
    assert ICMLearner.uses_actions
    with pytest.raises(TypeError, match="actions"):
        _learner().reward(OBS, NEXT_OBS, Z)
