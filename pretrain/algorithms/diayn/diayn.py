"""DIAYN, Diversity is All You Need (Eysenbach, Gupta, Ibarz, Levine, ICLR 2019, https://arxiv.org/abs/1802.06070)
on Stable-Baselines3.

Reference code: https://github.com/seohongpark/METRA, ``iod/metra.py`` with ``--inner 0 --unit_length 0
--dual_reg 0`` (the DIAYN baseline of the METRA paper): a discriminator q(z | s') on the *next* state, trained by
maximum likelihood on replay transitions, and the reward

    r = log q(z | s')

- continuous skills are N(0, I) draws, not unit vectors (``--unit_length 0``; :attr:`DIAYNLearner.skill_prior`), and
  q(z | s') = N(z; mu(s'), diag sigma(s')^2) with mu and log sigma two separate MLPs (sigma initially 1, at least
  1e-6; the official ``GaussianMLPIndependentStdModuleEx``), or a fixed sigma = 1 with ``learn_std=False``;
- discrete skills: q is categorical (softmax over D logits), so r = log softmax(logits)_z, the negative
  cross-entropy, as in the reference.

The paper's reward is log q(z | s') - log p(z); the reference leaves out the - log p(z) term, and so does this port.
That term does not depend on the state or the action, only on the episode's skill, which is fixed for the whole
episode (and is part of the policy's input): it shifts every reward of an episode by the same amount and cannot
change which actions are best for a skill (episodes end only at the time limit). For one-hots it is the constant
log D (with it the reward would be 0 at chance level; without it, -log D).

Per minibatch: :meth:`DIAYNLearner.update` (one discriminator step), :meth:`DIAYNLearner.reward` (relabel with the
updated discriminator), then the backbone's RL step.

Settings. The backbone (SAC, its learning rates, widths, batch, buffer, schedule) is the run's, shared by every
method; the discriminator takes the width of phi (``phi_width``, else ``net_width``) and the networks' learning
rate. DIAYN's own values, from the reference:

| value | here (config key) | reference |
|---|---|---|
| skill prior | N(0, I) | ``--unit_length 0`` |
| std of q | learned (``diayn_learn_std``) | ``GaussianMLPIndependentStdModuleEx`` |
| reward | log q(z given s') | ``_update_rewards`` with ``--inner 0`` |

DIAYN has no state representation for zero-shot goal reaching, so it has no ``phi``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
import torch.nn.functional as F

from metra_gym.skill_priors import GAUSSIAN
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.learner_parts import GaussianMLP
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["diayn"].learner_defaults


class DIAYNLearner(SkillLearner):
    """DIAYN's discriminator q(z | s').

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: D, the size of z.
    :param discrete_skills: one-hot skills (categorical q) instead of N(0, I) draws (Gaussian q).
    :param discriminator_net_arch: hidden widths of the discriminator (ReLU), of its std network too; None: the
        default configuration's.
    :param discriminator_learning_rate: Adam learning rate of the discriminator.
    :param learn_std: continuous skills: a state-dependent std network (official) instead of a fixed std of 1.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("discriminator_optimizer",)
    has_skill_posterior: ClassVar[bool] = True
    skill_prior: ClassVar[str] = GAUSSIAN

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool,
                 discriminator_net_arch: list[int] | None = None,
                 discriminator_learning_rate: float = DEFAULTS.learning_rate, learn_std: bool = OWN["learn_std"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        # Discrete skills use only the mean network, as logits.
        self.discriminator = GaussianMLP(obs_dim, skill_dim, list(discriminator_net_arch or DEFAULTS.phi_hidden),
                                         learn_std=learn_std and not discrete_skills)
        self.discriminator_optimizer = th.optim.Adam(self.discriminator.parameters(),
                                                     lr=discriminator_learning_rate, **self.optimizer_kwargs)

    def log_likelihood(self, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """log q(z | s') of each transition, shape (batch,)."""
        if self.discrete_skills:
            logits = self.discriminator.mean_net(next_obs)
            return -F.cross_entropy(logits, z.argmax(dim=1), reduction="none")
        return self.discriminator.log_prob(next_obs, z)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # Maximum likelihood of the skill that produced each replayed transition.
        log_q = self.log_likelihood(next_obs, z)
        loss = -log_q.mean()
        self.descend(self.discriminator_optimizer, loss)
        stats = {"diayn/discriminator_loss": loss}
        if self.discrete_skills:  # q's probability of the true skill (1/D at chance)
            stats["diayn/true_skill_probability"] = log_q.detach().exp().mean()
        return stats

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = log q(z | s') with the current discriminator, shape (batch, 1) (no - log p(z): module docstring)."""
        return self.log_likelihood(next_obs, z).unsqueeze(1)


class DIAYN(SkillAlgorithm, SkillSAC):
    """DIAYN on SAC, as the METRA paper trains it (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`DIAYNLearner`) hyperparameters are keywords of their own.
    """

    algo = "diayn"
    learner_class = DIAYNLearner
