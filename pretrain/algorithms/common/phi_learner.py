"""The learners whose skills are directions in a learned state representation phi: S -> R^D (METRA and LSD).

Both reward a transition with ``(phi(s') - phi(s))^T z`` under the current phi, and phi ascends that same quantity;
they differ in the constraint that keeps phi's steps bounded (METRA: temporal distance by dual gradient descent;
LSD: Euclidean distance by spectral normalisation). What they share is written here once.
"""

from __future__ import annotations

from typing import ClassVar

import torch as th
from torch import nn

from pretrain.algorithms.common.skill_learner import SkillLearner


class PhiLearner(SkillLearner):
    """Base class of METRA's and LSD's learners: phi's step of a transition and the directional reward.

    Subclasses build phi and its ``phi_optimizer`` in ``__init__``, say which network is trained
    (:attr:`trained_phi`) and implement :meth:`update` (phi's step under their constraint). Parameters:
    :class:`SkillLearner`'s.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("phi_optimizer",)
    has_phi: ClassVar[bool] = True

    @property
    def trained_phi(self) -> nn.Module:
        """The network that training updates (LSD: the spectrally normalised one, not the plain :attr:`phi`)."""
        raise NotImplementedError

    def phi_step(self, obs: th.Tensor, next_obs: th.Tensor) -> th.Tensor:
        """phi(s') - phi(s), with one forward pass over both batches (LSD: so one power iteration per call)."""
        phi_s, phi_next = self.trained_phi(th.cat([obs, next_obs])).chunk(2)
        return phi_next - phi_s

    def directional_reward(self, delta: th.Tensor, z: th.Tensor) -> th.Tensor:
        """(phi(s') - phi(s))^T z per transition, shape (batch,) (one-hot z as :meth:`reward_skill` gives it)."""
        return (delta * self.reward_skill(z)).sum(dim=1)

    def input_sensitivity(self, obs: th.Tensor, groups: dict[str, tuple[int, int]]) -> dict[str, th.Tensor]:
        """How much phi depends on each group of observation entries: the norm of phi's Jacobian restricted to the
        group's columns, ||d phi(s) / d s_group||_F, averaged over ``obs``. A diagnostic (no parameter or RNG
        changes: the network runs in eval mode, so LSD's spectral normalisation does no power iteration)."""
        net = self.trained_phi
        was_training = net.training
        net.eval()
        try:
            x = obs.detach().clone().requires_grad_(True)
            out = net(x)
            squared = th.zeros_like(x)
            for d in range(out.shape[1]):
                (grad,) = th.autograd.grad(out[:, d].sum(), x, retain_graph=d + 1 < out.shape[1])
                squared += grad.pow(2)
        finally:
            net.train(was_training)
        return {name: squared[:, start:stop].sum(dim=1).sqrt().mean().detach()
                for name, (start, stop) in groups.items()}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = (phi(s') - phi(s))^T z with the current phi, shape (batch, 1)."""
        return self.directional_reward(self.phi_step(obs, next_obs), z).unsqueeze(1)
