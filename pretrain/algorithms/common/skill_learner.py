"""The skill-discovery half of an algorithm: its own networks, their update, and the intrinsic reward.

Every algorithm of this package (METRA, LSD, DIAYN, DADS, CIC; the exploration methods ICM, LBS, RND, APT,
Disagreement and APS, whose z is empty but for APS's task vector) is a :class:`SkillLearner` plus an off-policy RL
backbone from :mod:`pretrain.algorithms.common.backbones`. On each minibatch the backbone first lets the learner
take its gradient step, then relabels the minibatch with the learner's reward and takes its own RL step.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
from torch import nn

from metra_gym.skill_priors import UNIT
from pretrain.algorithms.common.learner_parts import sample_prior_skills


class SkillLearner(nn.Module):
    """Base class: what a backbone needs from a skill-discovery algorithm.

    Subclasses build their networks and optimisers in ``__init__``, name the optimisers in ``optimizer_names``
    (so that they are saved and resumed with the model) and, in ``fixed_rate_optimizers``, those of them that keep
    their own learning rate instead of following the networks' (:meth:`set_learning_rate`), name the prior of their continuous skills in
    ``skill_prior`` (the one place that says it: the training environment, the evaluation and the exported checkpoint
    read it from here) and implement :meth:`update` and :meth:`reward`.
    Returned statistics are logged under their keys as given (e.g. ``"metra/lambda"``): adding a logged quantity
    touches only the line that computes it.

    :param obs_dim: size of the (normalised) observation, without the skill.
    :param skill_dim: size of the skill z (0 for an exploration method: z is then an empty tensor).
    :param discrete_skills: one-hot skills instead of continuous ones of :attr:`skill_prior`.
    :param optimizer_kwargs: extra keyword arguments of every Adam optimiser (e.g. ``{"fused": True}``).
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ()
    # Whether the learner has a state representation ``phi`` (a :class:`metra_gym.networks.PhiNetwork`), which a skill
    # checkpoint holds beside the actor and zero-shot goal reaching needs.
    has_phi: ClassVar[bool] = False
    # Whether it has q(z | s) (DIAYN's discriminator: ``skill_posterior`` under the PhiNetwork layout), which a state
    # skill checkpoint holds so that zero-shot goal reaching can pick the skill q(z | g) finds likeliest.
    has_skill_posterior: ClassVar[bool] = False
    fixed_rate_optimizers: ClassVar[tuple[str, ...]] = ()
    # The prior p(z) of continuous skills, a name of metra_gym.skill_priors (discrete skills: uniform one-hots).
    skill_prior: ClassVar[str] = UNIT
    # Whether update() and reward() also take the minibatch's actions (keyword ``actions``, in [-1, 1] as the replay
    # buffer stores them), and __init__ their size (keyword ``action_dim``): the exploration methods whose models
    # predict from (s, a) (ICM, LBS, APT, Disagreement).
    uses_actions: ClassVar[bool] = False

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool,
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.obs_dim, self.skill_dim, self.discrete_skills = obs_dim, skill_dim, discrete_skills
        self.optimizer_kwargs = dict(optimizer_kwargs or {})

    def reward_skill(self, z: th.Tensor) -> th.Tensor:
        """The z of an inner-product reward: as is for continuous skills, zero-centred and scaled by D/(D-1) for
        one-hots (so that a one-hot's reward direction has unit length, as in the official METRA code)."""
        if not self.discrete_skills:
            return z
        return (z - z.mean(dim=1, keepdim=True)) * (self.skill_dim / (self.skill_dim - 1))

    def sample_skills(self, n: int, device: th.device | str = "cpu") -> th.Tensor:
        """``n`` skills from this algorithm's prior (torch's global generator), shape (n, skill_dim)."""
        return sample_prior_skills(n, self.skill_dim, self.discrete_skills, self.skill_prior, device)

    @staticmethod
    def descend(optimizer: th.optim.Optimizer, loss: th.Tensor) -> None:
        """One gradient step of ``optimizer``'s parameters down ``loss``."""
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    def set_learning_rate(self, learning_rate: float) -> None:
        """Set a (resumed) run's networks' learning rate on every optimiser of ``optimizer_names`` except the
        ``fixed_rate_optimizers`` (METRA's lambda keeps its own rate)."""
        for name in self.optimizer_names:
            if name not in self.fixed_rate_optimizers:
                for group in getattr(self, name).param_groups:
                    group["lr"] = learning_rate

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        """One gradient step of the learner's own networks on a minibatch; returns scalars to log.

        :param dones: shape (batch, 1), 1 for the transitions stored as terminal (with ``timeout_done`` the last one
            of every episode); None: none is. Only DADS reads it (its reference masks them out of its loss).
        """
        raise NotImplementedError

    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """The intrinsic reward of each transition with the current networks, shape (batch, 1), no gradient."""
        raise NotImplementedError
