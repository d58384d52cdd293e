"""DADS, Dynamics-Aware unsupervised Discovery of Skills (Sharma, Gu, Levine, Kumar, Hausman, ICLR 2020,
https://arxiv.org/abs/1907.01657) on Stable-Baselines3, off-policy.

Reference code: https://github.com/seohongpark/METRA, ``iod/dads.py`` (the DADS baseline of the METRA paper, itself
following https://github.com/google-research/dads), trained there with ``--algo dads --inner 0 --unit_length 0
--dual_reg 0``. A skill-dynamics model q(s' - s | s, z) is trained by maximum likelihood on replay transitions,
and the skill policy is rewarded with a contrastive estimate of I(s'; z | s):

    r = log q(s' | s, z) - log (1/(L+1)) (q(s' | s, z) + sum_{i=1..L} q(s' | s, z_i)),   z_i ~ p(z)
      = log(L+1) - log(1 + sum_i exp(log q(s' | s, z_i) - log q(s' | s, z)))

As in the official METRA baseline:

- Continuous skills are N(0, I) draws, not unit vectors (``--unit_length 0``; :attr:`DADSLearner.skill_prior`), and
  the L alternative skills z_i come from that same prior, drawn afresh for every minibatch; discrete skills and
  their alternatives are uniform one-hots.
- q is a Gaussian with a fixed unit variance (``--sd_const_std 1``) whose mean, an MLP of [s, z], predicts the
  normalised state change s' - s; no mixture of experts.
- Batch normalisation without affine parameters (momentum 0.01) of the input s and of the target s' - s
  (``--sd_batch_norm 1``): batch statistics in the model's gradient step (which also updates the running ones,
  over the whole minibatch), running statistics in the reward.
- The model's loss leaves out the transitions stored as terminal (``dones``; with ``timeout_done`` the last one of
  every episode): the mean log-likelihood is taken over the others only.
- The sum includes the transition's own skill (L+1 terms, as in both official codes; the DADS paper writes L), and
  the log-ratios are clipped to [-50, 50], so r lies in [log(L+1) - log(1 + L e^50), log(L+1)].
- Off-policy without the paper's importance weights (the official off-policy ports leave them out too): every
  replayed transition counts once in the reward.

Settings. The backbone (SAC, its learning rates, widths, batch, buffer, schedule) is the run's, shared by every
method; the model takes the width of phi (``phi_width``, else ``net_width``) and the networks' learning rate. DADS's
own values, from the reference:

| value | here (config key) | reference |
|---|---|---|
| skill prior, and the alternative skills' | N(0, I) | ``--unit_length 0`` |
| alternative skills L | 100 (``dads_alt_skills``) | ``--num_alt_samples 100`` |
| batch normalisation | on (``dads_batch_norm``) | ``--sd_batch_norm 1`` |
| std of the model | fixed 1 | ``--sd_const_std 1`` |
| terminal transitions | left out of the model's loss | ``_update_loss_sd`` |

DADS has no state representation for zero-shot goal reaching (its model plans in state space), so it has no ``phi``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch as th
from torch import nn

from metra_gym.skill_priors import GAUSSIAN
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.learner_parts import GaussianMLP
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["dads"].learner_defaults

LOG_RATIO_CLIP = 50.0  # official: exp(clip(log q_i - log q, -50, 50))


class DADSLearner(SkillLearner):
    """DADS's skill-dynamics model q(s' - s | s, z).

    :param obs_dim: size of the (normalised) observation, and of the modelled state change.
    :param skill_dim: D, the size of z.
    :param discrete_skills: one-hot skills instead of N(0, I) draws (the alternative skills too).
    :param dynamics_net_arch: hidden widths of the model's mean network (ReLU).
    :param dynamics_learning_rate: Adam learning rate of the model.
    :param alt_skills: L, the number of alternative skills per transition in the reward's denominator.
    :param batch_norm: batch-normalise the model's input s and target s' - s (official: on).
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("dynamics_optimizer",)
    skill_prior: ClassVar[str] = GAUSSIAN

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, dynamics_net_arch: list[int] | None = None,
                 dynamics_learning_rate: float = DEFAULTS.learning_rate, alt_skills: int = OWN["alt_skills"],
                 batch_norm: bool = OWN["batch_norm"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        if alt_skills < 1:
            raise ValueError(f"alt_skills must be >= 1, got {alt_skills}")
        self.alt_skills = alt_skills
        self.dynamics = GaussianMLP(obs_dim + skill_dim, obs_dim, list(dynamics_net_arch or [1024, 1024]),
                                    learn_std=False, init_std=1.0)

        def norm() -> nn.Module:
            return nn.BatchNorm1d(obs_dim, momentum=0.01, affine=False) if batch_norm else nn.Identity()

        self.input_norm, self.target_norm = norm(), norm()
        self.dynamics_optimizer = th.optim.Adam(self.dynamics.parameters(), lr=dynamics_learning_rate,
                                                **self.optimizer_kwargs)

    def normalised(self, obs: th.Tensor, next_obs: th.Tensor, training: bool) -> tuple[th.Tensor, th.Tensor]:
        """The model's input s and target s' - s, normalised with batch statistics (``training``, which also updates
        the running statistics) or with the running ones."""
        self.input_norm.train(training)
        self.target_norm.train(training)
        return self.input_norm(obs), self.target_norm(next_obs - obs)

    def log_prob(self, x: th.Tensor, target: th.Tensor, z: th.Tensor) -> th.Tensor:
        """log q(target | x, z) for normalised x and target, shape (batch,)."""
        return self.dynamics.log_prob(th.cat([x, z], dim=1), target)

    def sample_alt_skills(self, n: int, device: th.device) -> th.Tensor:
        """``n`` alternative skills from the policy's own prior (:attr:`skill_prior`)."""
        return self.sample_skills(n, device)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # Maximum likelihood of the observed state change under the transition's own skill, over the transitions
        # not stored as terminal (the batch statistics of the normalisation still see all of them, as officially).
        x, target = self.normalised(obs, next_obs, training=True)
        log_q = self.log_prob(x, target, z)
        kept = th.ones_like(log_q) if dones is None else 1.0 - dones.reshape(-1).to(log_q.dtype)
        loss = -(log_q * kept).sum() / (kept.sum() + 1e-12)
        self.descend(self.dynamics_optimizer, loss)
        return {"dads/dynamics_loss": loss}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = log(L+1) - log(1 + sum_i exp(clip(log q(s'|s,z_i) - log q(s'|s,z))))  with z_i ~ p(z), shape
        (batch, 1)."""
        x, target = self.normalised(obs, next_obs, training=False)
        log_q = self.log_prob(x, target, z)
        n, L = len(obs), self.alt_skills
        alt = self.sample_alt_skills(n * L, obs.device)
        log_q_alt = self.log_prob(x.repeat(L, 1), target.repeat(L, 1), alt).view(L, n)
        log_ratio = (log_q_alt - log_q).clamp(-LOG_RATIO_CLIP, LOG_RATIO_CLIP)
        # log(1 + sum_i exp(.)) as a logsumexp with a zero term: the same value, without overflow.
        log_denominator = th.logsumexp(th.cat([th.zeros_like(log_ratio[:1]), log_ratio]), dim=0)
        return (math.log(L + 1) - log_denominator).unsqueeze(1)


class DADS(SkillAlgorithm, SkillSAC):
    """DADS on SAC (off-policy), as the METRA paper trains it (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`DADSLearner`) hyperparameters are keywords of their own.
    """

    algo = "dads"
    learner_class = DADSLearner
