"""RND (URLB's): batch-standardised, clipped observations; the prediction error of a frozen random target; the reward
divided by the running standard deviation of the errors; on hand-computed values."""

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.rnd import RNDLearner


def _scalar(weight: float) -> nn.Linear:
    layer = nn.Linear(1, 1)
    with th.no_grad():
        layer.weight.fill_(weight)
        layer.bias.zero_()
    return layer


def _learner(**kwargs) -> RNDLearner:
    th.manual_seed(0)
    learner = RNDLearner(obs_dim=1, skill_dim=0, discrete_skills=False, rnd_net_arch=[8], **kwargs)
    learner.target, learner.predictor = _scalar(3.0).requires_grad_(False), _scalar(1.0)  # error (2x)^2 = 4x^2
    return learner


def test_observations_are_standardised_with_the_batchs_own_statistics_and_clipped():
    learner = _learner()
    x = learner.standardised(th.tensor([[0.0], [2.0]]))  # mean 1, biased variance 1 (+ BatchNorm's eps 1e-5)
    np.testing.assert_allclose(x.numpy(), [[-1 / np.sqrt(1 + 1e-5)], [1 / np.sqrt(1 + 1e-5)]], rtol=1e-6)
    outlier = th.cat([th.zeros(99, 1), th.full((1, 1), 100.0)])  # standardised to 9.95: clipped at 5
    assert learner.standardised(outlier)[-1].item() == pytest.approx(5.0)
    assert _learner(obs_clip=10.0).standardised(outlier)[-1].item() == pytest.approx(np.sqrt(99), rel=1e-4)


def test_the_reward_is_the_prediction_error_of_s_over_the_running_std_of_the_errors():
    learner = _learner()
    obs, next_obs = th.tensor([[0.0], [2.0], [4.0]]), th.tensor([[10.0], [0.0], [7.0]])
    x = (np.array([0.0, 2.0, 4.0]) - 2.0) / np.sqrt(8 / 3 + 1e-5)
    error = 4 * x**2  # (3x - x)^2, the mean over one output
    np.testing.assert_allclose(learner.prediction_error(obs).detach().numpy(), error, rtol=1e-5)
    learner.error_moments.var.fill_(4.0)  # running std 2
    reward = learner.reward(obs, next_obs, th.zeros(3, 0))
    np.testing.assert_allclose(reward.numpy(), (error / (2 + 1e-8))[:, None], rtol=1e-5)
    scaled = _learner(rnd_scale=3.0)
    scaled.error_moments.var.fill_(4.0)
    np.testing.assert_allclose(scaled.reward(obs, next_obs, th.zeros(3, 0)).numpy(), (3 * error / 2)[:, None],
                               rtol=1e-5)


def test_the_prediction_error_is_the_mean_over_the_outputs():
    learner = _learner()
    learner.target = nn.Linear(1, 2).requires_grad_(False)
    with th.no_grad():
        learner.target.weight.copy_(th.tensor([[3.0], [1.0]]))
        learner.target.bias.zero_()
    x = 1 / np.sqrt(1 + 1e-5)  # the batch (0, 2) standardised: -x, x; predictor x -> x
    # outputs (3x - x)^2 = 4x^2 and (x - x)^2 = 0: their mean 2x^2
    np.testing.assert_allclose(learner.prediction_error(th.tensor([[0.0], [2.0]])).detach().numpy(), [2 * x**2] * 2,
                               rtol=1e-6)


def test_a_step_trains_the_predictor_only_and_merges_its_new_errors_into_the_running_moments():
    th.manual_seed(0)
    learner = RNDLearner(obs_dim=3, skill_dim=0, discrete_skills=False, rnd_net_arch=[16], rnd_rep_dim=4,
                         rnd_learning_rate=1e-2)
    target = [p.detach().clone() for p in learner.target.parameters()]
    obs = th.randn(64, 3)
    before = learner.prediction_error(obs).mean().item()
    stats = learner.update(obs, obs, th.zeros(64, 0))
    assert stats["rnd/loss"].item() == pytest.approx(before, rel=1e-6)
    assert learner.prediction_error(obs).mean().item() < before
    assert all(th.equal(a, b) for a, b in zip(target, learner.target.parameters()))
    errors = learner.prediction_error(obs).detach().double()  # under the updated predictor, merged from (0, 1, 1e-4)
    assert learner.error_moments.count.item() == pytest.approx(64.0001)
    assert learner.error_moments.mean.item() == pytest.approx(errors.mean().item() * 64 / 64.0001, rel=1e-5)
    # A second batch, under the predictor the first step moved: URLB's merge of n errors of mean m and unbiased
    # variance v into the running (M, V, c) is V' = (V c + v n + (m - M)^2 c n / (c + n)) / (c + n). Here c is 64,
    # not 1e-4, so the between-batch term counts (checked: without it V' is off by more than 1 %).
    M, V, c = (learner.error_moments.mean.item(), learner.error_moments.var.item(), learner.error_moments.count.item())
    second = th.randn(64, 3)
    learner.update(second, second, th.zeros(64, 0))
    errors = learner.prediction_error(second).detach().double()
    n, m, v = 64, errors.mean().item(), errors.var().item()
    expected = (V * c + v * n + (m - M) ** 2 * c * n / (c + n)) / (c + n)
    assert learner.error_moments.var.item() == pytest.approx(expected, rel=1e-5)
    assert (V * c + v * n) / (c + n) != pytest.approx(expected, rel=1e-2)
