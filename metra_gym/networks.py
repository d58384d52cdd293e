"""The networks a skill checkpoint holds: the skill policy's mean path and the representation phi.

Shared by the trainer (``pretrain``) and the runtime loader so both build exactly the same modules.
Imports torch, so :mod:`metra_gym` imports this module only when a checkpoint is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: type[nn.Module]) -> nn.Sequential:
    """Linear layers of widths ``hidden`` with ``activation`` between them and a linear output layer."""
    layers: list[nn.Module] = []
    last = in_dim
    for width in hidden:
        layers += [nn.Linear(last, width), activation()]
        last = width
    layers.append(nn.Linear(last, out_dim))
    return nn.Sequential(*layers)


class PhiNetwork(nn.Module):
    """phi: observation -> R^D (ReLU MLP). It never sees the skill.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: D, the size of the latent space.
    :param hidden: hidden layer widths.
    """

    def __init__(self, obs_dim: int, skill_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.net = mlp(obs_dim, hidden, skill_dim, nn.ReLU)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class SkillActor(nn.Module):
    """METRA's skill policy: a tanh-squashed Gaussian whose mean and log-std heads share tanh hidden layers.

    Mirrors Stable-Baselines3's SAC ``Actor`` (``latent_pi``, ``mu``, ``log_std``) so its weights map one to one.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: size of the skill vector appended to it.
    :param action_dim: size of the action.
    :param hidden: hidden layer widths.
    """

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clamp

    def __init__(self, obs_dim: int, skill_dim: int, action_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.latent = mlp(obs_dim + skill_dim, hidden[:-1], hidden[-1], nn.Tanh)
        self.mu = nn.Linear(hidden[-1], action_dim)
        self.log_std = nn.Linear(hidden[-1], action_dim)

    def forward(self, obs: torch.Tensor, skill: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """Action in [-1, 1]: ``tanh(mean)``, or ``tanh(mean + std * noise)`` when standard-normal noise is given."""
        h = torch.tanh(self.latent(torch.cat([obs, skill], dim=-1)))
        mean = self.mu(h)
        if noise is not None:
            mean = mean + self.log_std(h).clamp(self.LOG_STD_MIN, self.LOG_STD_MAX).exp() * noise
        return torch.tanh(mean)
