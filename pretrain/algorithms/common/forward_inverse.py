"""ICM's forward and inverse models (Pathak et al., ICML 2017, https://arxiv.org/abs/1705.05363), as URLB codes them
for ICM and for APT, whose representation they train.

Reference: https://github.com/rll-research/url_benchmark, ``agent/icm.py`` (class ``ICM``, lines 11-42: on the
observations themselves) and ``agent/icm_apt.py`` (class ``ICM``, lines 11-52: on an embedding e(s) =
tanh(LayerNorm(W s + b)) of ``icm_rep_dim`` = 512, the "trunk"). With e the identity (ICM) or the trunk (APT):

- forward model f(e(s), a) predicts e(s'); its error is ||e(s') - f(e(s), a)||_2 (a norm, not squared);
- inverse model g(e(s), e(s')) = tanh(MLP) predicts the action in [-1, 1]; its error is ||a - g(e(s), e(s'))||_2;
- both are trained on the sum of the two errors' batch means. The target e(s') is not detached (URLB's does not
  either): the trunk learns from the forward error on both sides, and the inverse error keeps it from collapsing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch as th
from torch import nn

from metra_gym.networks import mlp


class ForwardInverseModel(nn.Module):
    """ICM's forward model f and inverse model g, on the observation (``embedding_dim=None``, URLB's ICM) or on a
    learned embedding e(s) = tanh(LayerNorm(Linear(s))) (URLB's APT).

    :param obs_dim: size of the (normalised) observation.
    :param action_dim: size of the action.
    :param hidden: hidden widths of f and of g (ReLU; URLB: one layer of 1024).
    :param embedding_dim: size of e(s) (URLB's APT: 512); None: e is the identity.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int], embedding_dim: int | None = None) -> None:
        super().__init__()
        self.embedding = (nn.Identity() if embedding_dim is None else
                          nn.Sequential(nn.Linear(obs_dim, embedding_dim), nn.LayerNorm(embedding_dim), nn.Tanh()))
        dim = obs_dim if embedding_dim is None else embedding_dim
        self.forward_net = mlp(dim + action_dim, hidden, dim, nn.ReLU)
        self.inverse_net = nn.Sequential(*mlp(2 * dim, hidden, action_dim, nn.ReLU), nn.Tanh())

    def errors(self, obs: th.Tensor, actions: th.Tensor, next_obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(forward error ||e(s') - f(e(s), a)||, inverse error ||a - g(e(s), e(s'))||), each of shape (batch,)."""
        embedded, next_embedded = self.embedding(th.cat([obs, next_obs])).chunk(2)
        predicted_next = self.forward_net(th.cat([embedded, actions], dim=1))
        predicted_action = self.inverse_net(th.cat([embedded, next_embedded], dim=1))
        return (next_embedded - predicted_next).norm(dim=1), (actions - predicted_action).norm(dim=1)

    def loss(self, obs: th.Tensor, actions: th.Tensor, next_obs: th.Tensor) -> tuple[th.Tensor, dict[str, th.Tensor]]:
        """URLB's loss of both models, mean forward error + mean inverse error, and the two means (to log)."""
        forward_error, inverse_error = self.errors(obs, actions, next_obs)
        means = {"forward_error": forward_error.mean(), "inverse_error": inverse_error.mean()}
        return means["forward_error"] + means["inverse_error"], {k: v.detach() for k, v in means.items()}
