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
        self.obs_dim, self.skill_dim, self.hidden = obs_dim, skill_dim, list(hidden)
        self.net = mlp(obs_dim, hidden, skill_dim, nn.ReLU)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class DeterministicSkillActor(nn.Module):
    """The deterministic skill policy: ``tanh(mean(obs, z))`` of METRA's tanh-squashed Gaussian policy.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: size of the skill vector appended to it.
    :param action_dim: size of the action.
    :param hidden: hidden layer widths (tanh activations, as in METRA's policy).
    """

    def __init__(self, obs_dim: int, skill_dim: int, action_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.latent = mlp(obs_dim + skill_dim, hidden[:-1], hidden[-1], nn.Tanh)
        self.mu = nn.Linear(hidden[-1], action_dim)

    def forward(self, obs: torch.Tensor, skill: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mu(torch.tanh(self.latent(torch.cat([obs, skill], dim=-1)))))
