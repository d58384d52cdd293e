import copy

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.metra import METRALearner
from tests.pretrain.helpers import skill_step_batch, tiny_model


class Identity2(nn.Module):
    """phi(s) = s on the 2-D point mass, so rewards can be computed by hand."""

    def forward(self, obs):
        return obs


def test_intrinsic_reward_is_phi_difference_dot_skill(tmp_path):
    model, _ = tiny_model(tmp_path)
    model.skill_learner.phi = Identity2()
    obs = th.tensor([[0.0, 0.0], [1.0, 2.0]])
    next_obs = th.tensor([[1.0, 0.0], [1.0, 5.0]])
    z = th.tensor([[0.6, 0.8], [0.0, -1.0]])
    reward = model.skill_learner.reward(obs, next_obs, z)
    # (1, 0).(0.6, 0.8) = 0.6 ; (0, 3).(0, -1) = -3
    np.testing.assert_allclose(reward.numpy(), [[0.6], [-3.0]], rtol=1e-6)


def test_discrete_reward_skill_is_zero_centred_and_scaled(tmp_path):
    model, _ = tiny_model(tmp_path, skill_dim=4, discrete_skills=True)
    z = th.tensor([[0.0, 1.0, 0.0, 0.0]])
    # (onehot - 1/4) * 4/3
    np.testing.assert_allclose(model.skill_learner.reward_skill(z).numpy(), [[-1 / 3, 1.0, -1 / 3, -1 / 3]], rtol=1e-6)


def test_constraint_penalty_uses_mean_square_and_clamps_at_slack(tmp_path):
    model, _ = tiny_model(tmp_path)
    delta = th.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [0.1, 0.1]])
    penalty = model.skill_learner.constraint_penalty(delta)
    # 1 - mean(d^2): 1 -> clamped 1e-3; 0; 1 - 2 = -1; 1 - 0.01 -> clamped 1e-3
    np.testing.assert_allclose(penalty.numpy(), [1e-3, 0.0, -1.0, 1e-3], rtol=1e-6)


def test_lambda_starts_at_30_and_grows_while_the_constraint_is_violated(tmp_path):
    model, _ = tiny_model(tmp_path, learning_starts=0)
    assert model.skill_learner.log_dual_lam.exp().item() == pytest.approx(30.0)
    # Fill the buffer with transitions whose steps are huge in phi (phi = 10 * identity): ||dphi||^2 >> D.
    learner = model.skill_learner
    learner.phi = nn.Linear(2, 2, bias=False)
    with th.no_grad():
        learner.phi.weight.copy_(10 * th.eye(2))
    learner.phi_optimizer = th.optim.Adam(learner.phi.parameters(), lr=0.0)
    obs = np.zeros((2, 4), dtype=np.float32)
    next_obs = obs.copy()
    next_obs[:, :2] = 1.0
    model._setup_learn(10)
    for _ in range(10):
        model.replay_buffer.add(obs, next_obs, np.zeros((2, 2), np.float32), np.zeros(2), np.zeros(2), [{}, {}])
    before = model.skill_learner.log_dual_lam.item()
    model.train(gradient_steps=5, batch_size=8)
    assert model.skill_learner.log_dual_lam.item() > before


def _learner(**kwargs):
    th.manual_seed(0)
    return METRALearner(obs_dim=2, skill_dim=2, discrete_skills=False, phi_net_arch=[32, 32], **kwargs)


def test_one_phi_step_raises_the_reward_under_slack_and_shrinks_the_step_when_violated():
    # Slack: phi's steps are tiny at initialisation, so the constraint is inactive and phi ascends the reward.
    learner = _learner(phi_learning_rate=1e-3)
    obs, next_obs, z = skill_step_batch(step=0.5)
    assert learner.phi_step(obs, next_obs).pow(2).mean() < 0.5
    before = learner.reward(obs, next_obs, z).mean()
    learner.update(obs, next_obs, z)
    assert learner.reward(obs, next_obs, z).mean() > before + 1e-4

    # Violated: phi scaled up so that ||phi(s') - phi(s)||^2 >> D; the lambda term now dominates and phi's step
    # shrinks, and with it the reward along z.
    learner = _learner(phi_learning_rate=1e-3, dual_lam_init=30.0)
    with th.no_grad():
        learner.phi.net[-1].weight.mul_(200.0)
    sq_before = learner.phi_step(obs, next_obs).pow(2).mean(dim=1).mean()
    assert sq_before > 4.0
    reward_before = learner.reward(obs, next_obs, z).abs().mean()
    learner.update(obs, next_obs, z)
    assert learner.phi_step(obs, next_obs).pow(2).mean(dim=1).mean() < sq_before
    assert learner.reward(obs, next_obs, z).abs().mean() < reward_before


def test_lambda_gradient_is_the_mean_penalty_in_log_space():
    """d/d(log lambda) of the dual loss is the mean penalty (the official code descends log lambda, not lambda)."""
    learner = _learner()
    obs, next_obs, z = skill_step_batch(step=0.5)
    penalty = learner.constraint_penalty(learner.phi_step(obs, next_obs)).mean()
    learner.update(obs, next_obs, z)  # phi moves first; lambda's gradient uses the penalty of the same forward pass
    assert learner.log_dual_lam.grad.item() == pytest.approx(penalty.item(), rel=1e-5)


@pytest.mark.parametrize("discrete", [False, True])
def test_phi_gradient_is_that_of_the_papers_lagrangian(discrete):
    """phi's step descends -E[(phi(s') - phi(s))^T z~ + lambda * min(eps, 1 - mean((phi(s') - phi(s))^2))], with
    lambda itself (not log lambda), the penalty not detached, and z~ the zero-centred one-hot scaled by D/(D-1)
    for discrete skills. The gradient is compared with one written out here, on a batch where some steps violate
    the constraint (so the penalty's gradient is not zero)."""
    d = 4
    th.manual_seed(0)
    learner = METRALearner(obs_dim=2, skill_dim=d, discrete_skills=discrete, phi_net_arch=[16, 16])
    with th.no_grad():
        learner.phi.net[-1].weight.mul_(30.0)
    obs, next_obs, _ = skill_step_batch(step=1.0, n=64)
    z = (th.eye(d)[th.randint(d, (64,))] if discrete
         else th.nn.functional.normalize(th.randn(64, d), dim=1))
    before = copy.deepcopy(learner)
    learner.update(obs, next_obs, z)

    delta = before.phi(next_obs) - before.phi(obs)
    skill = (z - 1.0 / d) * d / (d - 1) if discrete else z
    penalty = th.clamp(1.0 - delta.pow(2).mean(dim=1), max=1e-3)
    assert (penalty < 0).any() and (penalty == 1e-3).any()  # both regimes are in the batch
    lagrangian = ((delta * skill).sum(dim=1) + 30.0 * penalty).mean()
    expected = th.autograd.grad(-lagrangian, list(before.phi.parameters()))
    for name, (param, grad) in zip([n for n, _ in learner.phi.named_parameters()],
                                   zip(learner.phi.parameters(), expected)):
        th.testing.assert_close(param.grad, grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_discrete_phi_step_raises_the_zero_centred_reward():
    """Discrete skills: one phi step on transitions along +x for skill 0 and +y for skill 1 (D = 2) raises the
    reward, which for one-hots is the step along e_0 - e_1 or e_1 - e_0."""
    th.manual_seed(0)
    learner = METRALearner(obs_dim=2, skill_dim=2, discrete_skills=True, phi_net_arch=[32, 32],
                           phi_learning_rate=1e-3)
    rng = np.random.default_rng(0)
    index = rng.integers(0, 2, 256)
    obs = th.as_tensor(rng.uniform(-3, 3, (256, 2)), dtype=th.float32)
    next_obs = obs + 0.5 * th.eye(2)[index]
    z = th.eye(2)[index]
    before = learner.reward(obs, next_obs, z).mean()
    learner.update(obs, next_obs, z)
    assert learner.reward(obs, next_obs, z).mean() > before + 1e-4
