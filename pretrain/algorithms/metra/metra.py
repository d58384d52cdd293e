"""METRA (Park, Rybkin, Levine, ICLR 2024, https://arxiv.org/abs/2310.08887) on Stable-Baselines3.

Reference code: https://github.com/seohongpark/METRA (``iod/metra.py``). METRA learns phi: S -> R^D under the
temporal-distance constraint ||phi(s') - phi(s)|| <= 1 by dual gradient descent, and trains the skill policy on
the intrinsic reward (phi(s') - phi(s))^T z, recomputed with the current phi for every minibatch.

Algorithm 1 of the paper, per minibatch: :meth:`METRALearner.update` (phi step, lambda step), then
:meth:`METRALearner.reward` (relabel with the updated phi), then the backbone's RL step
(:meth:`pretrain.algorithms.common.backbones.SkillSAC._sac_step`: critics, actor, alpha, target).

Settings. The backbone (SAC, its learning rates, widths, batch, buffer, schedule) is the run's, shared by every
method; phi takes ``phi_width`` (else ``net_width``) and the networks' learning rate. METRA's own values, from the
reference (``tests/main.py`` defaults):

| value | here (config key) | reference |
|---|---|---|
| skill prior | unit vectors (N(0, I) normalised) | ``--unit_length 1`` |
| eps of the relaxed constraint | 1e-3 (``dual_slack``) | ``--dual_slack 1e-3`` |
| initial lambda | 30 (``dual_lam_init``) | ``--dual_lam 30`` |
| learning rate of log lambda | 1e-4 (``dual_learning_rate``) | ``--dual_lr`` (the common 1e-4) |
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch as th
from torch import nn

from metra_gym.networks import PhiNetwork
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.phi_learner import PhiLearner
from pretrain.algorithms.common.pixel_encoder import PixelPhiNetwork
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["metra"].learner_defaults


class METRALearner(PhiLearner):
    """phi and the multiplier lambda of METRA's constraint. Continuous skills are unit vectors (the default
    :attr:`skill_prior`).

    :param obs_dim: size of the (normalised) observation; phi never sees the skill.
    :param skill_dim: D, the size of z and of phi's output.
    :param discrete_skills: one-hot skills (zero-centred in the reward) instead of unit vectors.
    :param phi_net_arch: hidden widths of phi (ReLU); None: the default configuration's.
    :param phi_encoder: for pixel observations, the keyword arguments of phi's own
        :class:`~pretrain.algorithms.common.pixel_encoder.PixelEncoder` (then ``obs_dim`` is not used).
    :param phi_learning_rate: Adam learning rate of phi.
    :param dual_learning_rate: Adam learning rate of log lambda.
    :param dual_slack: eps of the relaxed constraint ``min(eps, 1 - mean((phi(s')-phi(s))^2))``.
    :param dual_lam_init: initial lambda.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("phi_optimizer", "dual_optimizer")
    fixed_rate_optimizers: ClassVar[tuple[str, ...]] = ("dual_optimizer",)  # lambda keeps its own learning rate

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, phi_net_arch: list[int] | None = None,
                 phi_encoder: dict[str, Any] | None = None, phi_learning_rate: float = DEFAULTS.learning_rate,
                 dual_learning_rate: float = OWN["dual_learning_rate"], dual_slack: float = OWN["dual_slack"],
                 dual_lam_init: float = OWN["dual_lam_init"], optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        self.dual_slack = dual_slack
        hidden = list(phi_net_arch or DEFAULTS.phi_hidden)
        self.phi = (PhiNetwork(obs_dim, skill_dim, hidden) if phi_encoder is None
                    else PixelPhiNetwork(phi_encoder, skill_dim, hidden))
        # lambda is kept in log space so that it stays positive (official code: log_dual_lam).
        self.log_dual_lam = nn.Parameter(th.tensor([np.log(dual_lam_init)], dtype=th.float32))
        self.phi_optimizer = th.optim.Adam(self.phi.parameters(), lr=phi_learning_rate, **self.optimizer_kwargs)
        self.dual_optimizer = th.optim.Adam([self.log_dual_lam], lr=dual_learning_rate, **self.optimizer_kwargs)

    @property
    def trained_phi(self) -> nn.Module:
        return self.phi

    def constraint_penalty(self, delta: th.Tensor) -> th.Tensor:
        """``min(eps, 1 - mean_d (phi(s')-phi(s))_d^2)``, as coded officially (so ||delta||^2 <= D)."""
        return th.clamp(1.0 - delta.pow(2).mean(dim=1), max=self.dual_slack)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # 1. phi ascends the Lagrangian  E[(phi(s')-phi(s))^T z + lambda * penalty].
        delta = self.phi_step(obs, next_obs)
        penalty = self.constraint_penalty(delta)
        dual_lam = self.log_dual_lam.exp()
        phi_loss = -(self.directional_reward(delta, z) + dual_lam.detach() * penalty).mean()
        self.descend(self.phi_optimizer, phi_loss)

        # 2. lambda descends E[lambda * penalty]: it grows while the constraint is violated.
        dual_loss = (self.log_dual_lam * penalty.detach()).mean()
        self.descend(self.dual_optimizer, dual_loss)

        sq_step = delta.detach().pow(2).mean(dim=1)
        return {"metra/phi_loss": phi_loss, "metra/dual_loss": dual_loss, "metra/lambda": dual_lam,
                "metra/sq_phi_step": sq_step.mean(), "metra/constraint_violation": (sq_step - 1.0).clamp(min=0).mean()}


class METRA(SkillAlgorithm, SkillSAC):
    """METRA on SAC, the paper's backbone (:meth:`on_backbone` gives it on CrossQ or TQC).

    Example:
        >>> from pretrain.algorithms.metra import METRA
        >>> model = METRA("MlpPolicy", "metra/PointMass-v0", skill_dim=2, learning_starts=100)
        >>> _ = model.learn(200)

    The skill learner's (:class:`METRALearner`) hyperparameters are keywords of their own (``phi_net_arch``,
    ``dual_slack``, ...).
    """

    algo = "metra"
    learner_class = METRALearner
