"""Pieces the skill learners share: a Gaussian MLP and its log-likelihood, and the skill prior in torch.

The networks are :func:`metra_gym.networks.mlp` (ReLU hidden layers, linear output), the builder of METRA's phi,
so that every learner's networks look alike and a representation can be exported as a
:class:`metra_gym.networks.PhiNetwork`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch as th
from torch import nn

from metra_gym.networks import mlp
from metra_gym.skill_priors import UNIFORM, UNIT, check_prior

LOG_2PI = math.log(2 * math.pi)


def gaussian_log_prob(x: th.Tensor, mean: th.Tensor, log_std: th.Tensor) -> th.Tensor:
    """log N(x; mean, diag(exp(log_std)^2)), summed over the last dimension: shape (batch,)."""
    return (-0.5 * ((x - mean) * th.exp(-log_std)).pow(2) - log_std - 0.5 * LOG_2PI).sum(dim=-1)


class GaussianMLP(nn.Module):
    """A diagonal Gaussian whose mean is an MLP of the input; its standard deviation is either fixed or a second MLP
    of the input (the official code's ``GaussianMLPIndependentStdModuleEx``: separate mean and std networks, std
    parameterised as exp of the output, initially 1, never below ``min_std``).

    :param in_dim: size of the input.
    :param out_dim: size of the modelled variable.
    :param hidden: hidden widths of the mean (and std) network.
    :param learn_std: a state-dependent std network; False keeps the std fixed at ``init_std``.
    :param init_std: the std at initialisation (learned) or always (fixed).
    :param min_std: lower bound of a learned std (official: 1e-6).
    """

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int], learn_std: bool = True,
                 init_std: float = 1.0, min_std: float = 1e-6) -> None:
        super().__init__()
        self.mean_net = mlp(in_dim, hidden, out_dim, nn.ReLU)
        self.log_std_net = mlp(in_dim, hidden, out_dim, nn.ReLU) if learn_std else None
        if self.log_std_net is not None:
            nn.init.constant_(self.log_std_net[-1].bias, math.log(init_std))
        self.register_buffer("fixed_log_std", th.tensor(math.log(init_std)))
        self.min_log_std = math.log(min_std)

    def forward(self, x: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(mean, log std), each of shape (batch, out_dim)."""
        mean = self.mean_net(x)
        if self.log_std_net is None:
            return mean, self.fixed_log_std.expand_as(mean)
        return mean, self.log_std_net(x).clamp(min=self.min_log_std)

    def log_prob(self, x: th.Tensor, target: th.Tensor) -> th.Tensor:
        """log q(target | x), shape (batch,)."""
        mean, log_std = self(x)
        return gaussian_log_prob(target, mean, log_std)


def sample_prior_skills(n: int, skill_dim: int, discrete: bool, prior: str, device: th.device | str = "cpu"
                        ) -> th.Tensor:
    """``n`` skills from a prior of :mod:`metra_gym.skill_priors` (uniform one-hots; unit vectors, N(0, I) or
    U[0, 1]^D), drawn in torch with its global generator so that a resumed run repeats them."""
    if discrete:
        return th.eye(skill_dim, device=device)[th.randint(skill_dim, (n,), device=device)]
    check_prior(prior)
    if prior == UNIFORM:
        return th.rand(n, skill_dim, device=device)
    z = th.randn(n, skill_dim, device=device)
    return z / z.norm(dim=1, keepdim=True).clamp(min=1e-12) if prior == UNIT else z
