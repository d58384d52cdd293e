"""DADS: the contrastive reward over L alternative skills from the N(0, I) prior, the skill-dynamics step (terminal
transitions left out) and its batch normalisation, save/load, exact resume, and learning on the point mass."""

import copy
import math

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.dads import DADS, DADSLearner
from pretrain.run.envs import env_factory, training_env
from tests.pretrain.helpers import point_mass_coverage, skill_step_batch, tiny_model

TINY = ["algo=dads", "net_width=32", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_every=100",
        "eval_skills=4", "dads_alt_skills=8"]


class SkillAsPrediction(nn.Module):
    """Mean of q(s' - s | s, z) = z (obs_dim = skill_dim = 2): the input is [s, z]."""

    def forward(self, x):
        return x[:, 2:]


def test_reward_contrasts_the_skill_with_the_alternatives():
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[8], alt_skills=2,
                          batch_norm=False)
    learner.dynamics.mean_net = SkillAsPrediction()
    alternatives = th.tensor([[1.0, 0.0], [0.0, 1.0]])
    # Alternative i of every transition: rows i*n .. (i+1)*n - 1.
    learner.sample_alt_skills = lambda n, device: alternatives.repeat_interleave(n // 2, dim=0)
    obs = th.tensor([[0.0, 0.0], [5.0, 5.0]])
    next_obs = obs + th.tensor([[1.0, 0.0], [0.0, -1.0]])
    z = th.tensor([[1.0, 0.0], [0.0, -1.0]])
    # Unit-variance Gaussian: log q_i - log q = -0.5 (||d - z_i||^2 - ||d - z||^2).
    # Transition 0, d = z = (1, 0): ratios 0 and -1 ; transition 1, d = z = (0, -1): ratios -1 and -2.
    expected = [math.log(3) - math.log(1 + 1 + math.exp(-1)), math.log(3) - math.log(1 + math.exp(-1) + math.exp(-2))]
    np.testing.assert_allclose(learner.reward(obs, next_obs, z).numpy(), np.array(expected)[:, None], rtol=1e-6)


def test_reward_is_bounded_by_log_l_plus_one_and_clipped_below():
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[8], alt_skills=4,
                          batch_norm=False)
    learner.dynamics.mean_net = SkillAsPrediction()
    # Every alternative (-100, 0) predicts the change exactly and the skill (1, 0) misses it by 101: each
    # log-ratio, 101^2 / 2, is clipped at 50.
    learner.sample_alt_skills = lambda n, device: th.tensor([[-100.0, 0.0]]).repeat(n, 1)
    reward = learner.reward(th.zeros(1, 2), th.tensor([[-100.0, 0.0]]), th.tensor([[1.0, 0.0]]))
    np.testing.assert_allclose(reward.numpy(), [[math.log(5) - math.log(1 + 4 * math.exp(50))]], rtol=1e-6)


def test_the_reward_draws_its_alternative_skills_from_the_n01_prior():
    """The real sampler, not a replaced one. With q's mean = z and unit variance, a transition whose change d equals
    its skill z = 0 has E_{z_i ~ N(0, I)}[q(d | z_i) / q(d | z)] = E[exp(-||z_i||^2 / 2)] = 2^(-D/2) = 1/2, so with
    many alternatives r -> log(L+1) - log(1 + L/2), about log 2. Unit-vector alternatives have e^(-1/2) instead
    (r about 0.50), uniform ones in [0, 1]^2 about 0.73 (r about 0.31)."""
    th.manual_seed(0)
    alternatives = 20_000
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[8],
                          alt_skills=alternatives, batch_norm=False)
    learner.dynamics.mean_net = SkillAsPrediction()
    assert learner.skill_prior == "gaussian"
    reward = learner.reward(th.zeros(4, 2), th.zeros(4, 2), th.zeros(4, 2)).mean().item()
    expected = math.log(alternatives + 1) - math.log(1 + alternatives / 2)
    assert reward == pytest.approx(expected, abs=0.01)
    alt = learner.sample_alt_skills(50_000, th.device("cpu"))
    np.testing.assert_allclose(alt.mean(0).numpy(), 0.0, atol=0.02)
    np.testing.assert_allclose(alt.var(0).numpy(), 1.0, rtol=0.03)


def test_the_model_leaves_the_terminal_transitions_out_of_its_loss():
    """A terminal transition's s' may be anything (the official code masks them): with ``dones`` the step is the
    step on the other transitions alone, whatever the terminal ones hold."""
    th.manual_seed(0)
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[16], batch_norm=False,
                          dynamics_learning_rate=1e-2)
    obs, next_obs, z = skill_step_batch(1.0, n=64)
    dones = (th.arange(64) % 4 == 3).float().unsqueeze(1)
    kept = dones[:, 0] == 0
    garbage = next_obs.clone()
    garbage[~kept] += 100.0
    masked, alone = copy.deepcopy(learner), copy.deepcopy(learner)
    loss = masked.update(obs, garbage, z, dones=dones)["dads/dynamics_loss"]
    expected = alone.update(obs[kept], next_obs[kept], z[kept])["dads/dynamics_loss"]
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    for a, b in zip(masked.dynamics.parameters(), alone.dynamics.parameters()):
        th.testing.assert_close(a, b)


def test_batch_norm_uses_batch_statistics_in_the_step_and_running_ones_in_the_reward():
    th.manual_seed(0)
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[8], alt_skills=4)
    obs, next_obs = th.randn(64, 2) * 5 + 3, th.randn(64, 2)
    z = th.eye(2)[th.randint(2, (64,))]
    learner.reward(obs, next_obs, z)
    th.testing.assert_close(learner.input_norm.running_mean, th.zeros(2), rtol=0, atol=0)  # the reward reads only
    learner.update(obs, next_obs, z)
    th.testing.assert_close(learner.input_norm.running_mean, 0.01 * obs.mean(dim=0))  # momentum 0.01


@pytest.mark.parametrize("batch_norm", [False, True])
def test_one_dynamics_step_raises_the_likelihood_of_the_observed_change(batch_norm):
    th.manual_seed(0)
    learner = DADSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, dynamics_net_arch=[32, 32],
                          dynamics_learning_rate=1e-3, batch_norm=batch_norm)
    obs, next_obs, z = skill_step_batch(1.0)

    def log_q():  # under the batch's own statistics, as in the step
        return learner.log_prob(*learner.normalised(obs, next_obs, training=True), z).mean()

    with th.no_grad():
        before = log_q()
    loss = learner.update(obs, next_obs, z)["dads/dynamics_loss"]
    assert loss.item() == pytest.approx(-before.item(), rel=1e-5)
    with th.no_grad():
        assert log_q() > before + 1e-4


def test_the_sb3_class_has_the_papers_defaults(tmp_path):
    _, config = tiny_model(tmp_path, algo="dads")
    model = DADS("MlpPolicy", training_env(config, env_factory(config)), dynamics_net_arch=[8],
                 policy_kwargs={"net_arch": [8]})
    assert (model.learning_rate, model.learning_starts, model.gradient_steps) == (1e-4, 10_000, 50)
    assert model.skill_learner.alt_skills == 100 and isinstance(model.skill_learner.input_norm, nn.BatchNorm1d)
    assert model.env.get_attr("skill_prior") == ["gaussian", "gaussian"]  # the training environment's skills


def test_dads_point_mass_coverage_is_several_times_a_random_policy(tmp_path):
    trained, random_coverage = point_mass_coverage(tmp_path, "dads")
    assert trained >= 3 * random_coverage, (trained, random_coverage)
