"""ICM, the Intrinsic Curiosity Module (Pathak, Agrawal, Efros, Darrell, ICML 2017, https://arxiv.org/abs/1705.05363),
as URLB's exploration baseline, on Stable-Baselines3.

Reference code: URLB (Laskin et al., NeurIPS 2021 Datasets and Benchmarks,
https://github.com/rll-research/url_benchmark), ``agent/icm.py`` and ``agent/icm.yaml``, the implementation the METRA
paper compares with on state Ant. "URLB" below is that code at commit bb98f0c; line numbers are of ``agent/icm.py``.

- Model (lines 11-42): a forward model f(s, a) of the next state and an inverse model g(s, s') = tanh(MLP) of the
  action, on the observation itself (:class:`~pretrain.algorithms.common.forward_inverse.ForwardInverseModel`).
- Loss (``update_icm``, lines 59-77): mean ||s' - f(s, a)|| + mean ||a - g(s, s')|| (Euclidean norms, not squared).
- Reward (``compute_intr_reward``, lines 79-84):

      r = log(1 + c ||s' - f(s, a)||)

  with c = ``icm_scale`` = 1, computed after the model's step on the same minibatch (``update``, lines 101-106).

An exploration method has no skill: the policy is pi(a | s) (``skill_dim`` 0), and its export is a plain policy
that a skill environment refuses.

Settings. The backbone (SAC here, DDPG with 3-step returns, batch 1024 and an update every 2 steps in URLB) and its
learning rates, widths, batch and schedule are the run's, shared by every method; the models take the width of phi
(``phi_width``, else ``net_width``) and ``net_layers`` hidden layers, and the networks' learning rate:

| value | here (config key) | URLB (``agent/icm.yaml``) |
|---|---|---|
| hidden layers of f and g | the run's (``phi_width`` x ``net_layers``) | one of ``hidden_dim: 1024`` |
| learning rate | the run's (``learning_rate``) | ``lr: 1e-4`` |
| reward scale c | 1 (``icm_scale``) | ``icm_scale: 1.0`` |
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th

from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.forward_inverse import ForwardInverseModel
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["icm"].learner_defaults


class ICMLearner(SkillLearner):
    """ICM's forward and inverse models on the observation. It takes no skill (z is empty and not read).

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: 0 (an exploration method; not read).
    :param discrete_skills: not read.
    :param action_dim: size of the action.
    :param icm_net_arch: hidden widths of the forward and of the inverse model (ReLU); None: the default
        configuration's.
    :param icm_learning_rate: Adam learning rate of both models.
    :param icm_scale: c, the scale of the forward error inside the reward's log.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("icm_optimizer",)
    uses_actions: ClassVar[bool] = True

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, action_dim: int,
                 icm_net_arch: list[int] | None = None, icm_learning_rate: float = DEFAULTS.learning_rate,
                 icm_scale: float = OWN["icm_scale"], optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        self.icm_scale = icm_scale
        self.model = ForwardInverseModel(obs_dim, action_dim, list(icm_net_arch or DEFAULTS.phi_hidden))
        self.icm_optimizer = th.optim.Adam(self.model.parameters(), lr=icm_learning_rate, **self.optimizer_kwargs)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, dones: th.Tensor | None = None, *,
               actions: th.Tensor) -> dict[str, th.Tensor]:
        # The forward model learns to predict s', the inverse model the action that led there (URLB lines 59-77).
        loss, errors = self.model.loss(obs, actions, next_obs)
        self.descend(self.icm_optimizer, loss)
        return {"icm/loss": loss, **{f"icm/{name}": value for name, value in errors.items()}}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, *, actions: th.Tensor) -> th.Tensor:
        """r = log(1 + c ||s' - f(s, a)||) with the current forward model, shape (batch, 1) (URLB lines 79-84)."""
        forward_error, _ = self.model.errors(obs, actions, next_obs)
        return th.log1p(self.icm_scale * forward_error).unsqueeze(1)


class ICM(SkillAlgorithm, SkillSAC):
    """ICM on SAC, a plain policy pi(a | s) (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`ICMLearner`) hyperparameters are keywords of their own.
    """

    algo = "icm"
    learner_class = ICMLearner
