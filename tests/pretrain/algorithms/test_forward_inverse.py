"""ICM's forward and inverse models (URLB's, on the observation for ICM and on a learned embedding for APT)."""

import numpy as np
import torch as th
from torch import nn

from pretrain.algorithms.common.forward_inverse import ForwardInverseModel


def _linear(weight, bias=None) -> nn.Linear:
    weight = th.as_tensor(weight, dtype=th.float32)
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with th.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(th.zeros(weight.shape[0]) if bias is None else th.as_tensor(bias, dtype=th.float32))
    return layer


def point_mass_model(embedding_dim=None) -> ForwardInverseModel:
    """f(s, a) = s + a (the point mass's own dynamics), g = tanh(0.5) in every action dimension."""
    model = ForwardInverseModel(obs_dim=2, action_dim=2, hidden=[8], embedding_dim=embedding_dim)
    model.forward_net = _linear([[1, 0, 1, 0], [0, 1, 0, 1]])
    model.inverse_net = nn.Sequential(_linear(np.zeros((2, 4)), [0.5, 0.5]), nn.Tanh())
    return model


def test_the_errors_are_euclidean_norms_of_the_forward_and_inverse_predictions():
    model = point_mass_model()
    obs, actions = th.tensor([[0.0, 0.0], [1.0, 1.0]]), th.tensor([[1.0, 0.0], [0.0, -1.0]])
    next_obs = th.tensor([[1.0, 0.0], [4.0, 4.0]])  # the first as predicted, the second (3, 4) from f = (1, 0)
    forward_error, inverse_error = model.errors(obs, actions, next_obs)
    np.testing.assert_allclose(forward_error.detach().numpy(), [0.0, 5.0], atol=1e-6)
    t = np.tanh(0.5)
    np.testing.assert_allclose(inverse_error.detach().numpy(), [np.hypot(1 - t, t), np.hypot(t, 1 + t)], rtol=1e-6)


def test_with_an_embedding_both_models_work_in_its_space():
    model = point_mass_model(embedding_dim=2)
    model.embedding[0] = _linear([[1, 0], [0, 1]])  # e(s) = tanh(LayerNorm(s)): per sample, mean 0 and variance 1
    obs, actions, next_obs = th.tensor([[0.0, 2.0]]), th.tensor([[0.5, 0.0]]), th.tensor([[3.0, 1.0]])
    e, e_next = np.tanh([-1.0, 1.0]), np.tanh([1.0, -1.0])  # LayerNorm of (0, 2) and of (3, 1), eps aside
    forward_error, _ = model.errors(obs, actions, next_obs)
    np.testing.assert_allclose(forward_error.item(), np.linalg.norm(e_next - (e + [0.5, 0.0])), rtol=1e-4)


def test_the_inverse_model_predicts_actions_in_the_policys_range():
    th.manual_seed(0)
    model = ForwardInverseModel(obs_dim=2, action_dim=3, hidden=[8])
    _, inverse_error = model.errors(th.full((4, 2), -1e3), th.zeros(4, 3), th.full((4, 2), 1e3))
    assert inverse_error.max().item() <= np.sqrt(3) + 1e-6  # ||a - tanh(.)|| with a = 0: at most sqrt(3)
    assert inverse_error.max().item() > 1.0  # far from 0 the (untrained) model saturates
