import numpy as np
import pytest
import torch as th
from torch import nn

from tests.pretrain.helpers import tiny_model


class Identity2(nn.Module):
    """phi(s) = s on the 2-D point mass, so rewards can be computed by hand."""

    def forward(self, obs):
        return obs


def test_intrinsic_reward_is_phi_difference_dot_skill(tmp_path):
    model, _ = tiny_model(tmp_path)
    model.phi = Identity2()
    obs = th.tensor([[0.0, 0.0], [1.0, 2.0]])
    next_obs = th.tensor([[1.0, 0.0], [1.0, 5.0]])
    z = th.tensor([[0.6, 0.8], [0.0, -1.0]])
    reward = model.intrinsic_reward(obs, next_obs, z)
    # (1, 0).(0.6, 0.8) = 0.6 ; (0, 3).(0, -1) = -3
    np.testing.assert_allclose(reward.numpy(), [[0.6], [-3.0]], rtol=1e-6)


def test_discrete_reward_skill_is_zero_centred_and_scaled(tmp_path):
    model, _ = tiny_model(tmp_path, skill_dim=4, discrete_skills=True)
    z = th.tensor([[0.0, 1.0, 0.0, 0.0]])
    # (onehot - 1/4) * 4/3
    np.testing.assert_allclose(model.reward_skill(z).numpy(), [[-1 / 3, 1.0, -1 / 3, -1 / 3]], rtol=1e-6)


def test_constraint_penalty_uses_mean_square_and_clamps_at_slack(tmp_path):
    model, _ = tiny_model(tmp_path)
    delta = th.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [0.1, 0.1]])
    penalty = model.constraint_penalty(delta)
    # 1 - mean(d^2): 1 -> clamped 1e-3; 0; 1 - 2 = -1; 1 - 0.01 -> clamped 1e-3
    np.testing.assert_allclose(penalty.numpy(), [1e-3, 0.0, -1.0, 1e-3], rtol=1e-6)


def test_lambda_starts_at_30_and_grows_while_the_constraint_is_violated(tmp_path):
    model, _ = tiny_model(tmp_path, learning_starts=0)
    assert model.log_dual_lam.exp().item() == pytest.approx(30.0)
    # Fill the buffer with transitions whose steps are huge in phi (phi = 10 * identity): ||dphi||^2 >> D.
    model.phi = nn.Linear(2, 2, bias=False)
    with th.no_grad():
        model.phi.weight.copy_(10 * th.eye(2))
    model.phi_optimizer = th.optim.Adam(model.phi.parameters(), lr=0.0)
    obs = np.zeros((2, 4), dtype=np.float32)
    next_obs = obs.copy()
    next_obs[:, :2] = 1.0
    model._setup_learn(10)
    for _ in range(10):
        model.replay_buffer.add(obs, next_obs, np.zeros((2, 2), np.float32), np.zeros(2), np.zeros(2), [{}, {}])
    before = model.log_dual_lam.item()
    model.train(gradient_steps=5, batch_size=8)
    assert model.log_dual_lam.item() > before
