"""LBS (after mastering-urlb, model-free): the reward is the KL between the latent posterior and prior, and the loss
the negative evidence lower bound of s', on hand-computed values."""

import math

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.lbs import LBSLearner


def _linear(weight) -> nn.Linear:
    weight = th.as_tensor(weight, dtype=th.float32)
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with th.no_grad():
        layer.weight.copy_(weight)
        layer.bias.zero_()
    return layer


def _learner() -> LBSLearner:
    """1-d state and action, 1-d latent: prior mu_p = s + a, posterior mu_q = s', decoder mu_d = 2 z'."""
    learner = LBSLearner(obs_dim=1, skill_dim=0, discrete_skills=False, action_dim=1, lbs_net_arch=[8])
    learner.prior_net, learner.posterior_net = _linear([[1.0, 1.0]]), _linear([[0.0, 0.0, 1.0]])
    learner.decoder = _linear([[2.0]])
    learner.lbs_optimizer = th.optim.Adam(learner.parameters(), lr=1e-2)
    return learner


OBS, ACTIONS, NEXT_OBS = th.tensor([[0.0], [1.0]]), th.tensor([[1.0], [0.5]]), th.tensor([[1.0], [4.5]])


def test_the_reward_is_the_kl_between_the_posterior_and_the_prior_of_the_latent():
    # mu_q - mu_p: 1 - 1 = 0 ; 4.5 - 1.5 = 3 -> 1/2 ||.||^2 = 0, 4.5
    reward = _learner().reward(OBS, NEXT_OBS, th.zeros(2, 0), actions=ACTIONS)
    np.testing.assert_allclose(reward.numpy(), [[0.0], [4.5]], rtol=1e-6)


def test_the_loss_is_the_negative_elbo_with_a_reparameterised_posterior_sample():
    learner = _learner()
    th.manual_seed(0)
    noise = th.randn(2, 1)
    th.manual_seed(0)  # the update draws the same eps
    stats = learner.update(OBS, NEXT_OBS, th.zeros(2, 0), actions=ACTIONS)
    latent = NEXT_OBS + noise  # mu_q + eps
    reconstruction = 0.5 * (NEXT_OBS - 2 * latent).pow(2).squeeze(1) + 0.5 * math.log(2 * math.pi)
    kl = th.tensor([0.0, 4.5])
    assert stats["lbs/reconstruction"].item() == pytest.approx(reconstruction.mean().item(), rel=1e-6)
    assert stats["lbs/kl"].item() == pytest.approx(2.25, rel=1e-6)
    assert stats["lbs/loss"].item() == pytest.approx((reconstruction + kl).mean().item(), rel=1e-6)


def test_the_surprise_sums_over_the_latent_dimensions():
    posterior, prior = th.tensor([[1.0, 2.0]]), th.tensor([[0.0, 0.0]])
    assert LBSLearner.surprise(posterior, prior).item() == pytest.approx(2.5)  # 1/2 (1 + 4)


def test_the_latent_has_the_last_hidden_width_unless_given():
    learner = LBSLearner(obs_dim=3, skill_dim=0, discrete_skills=False, action_dim=2, lbs_net_arch=[16, 8])
    assert learner.prior_net[-1].out_features == learner.posterior_net[-1].out_features == 8
    assert LBSLearner(3, 0, False, 2, lbs_net_arch=[16], latent_dim=4).decoder[0].in_features == 4
