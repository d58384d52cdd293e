"""LBS, Latent Bayesian Surprise (Mazzaglia, Catal, Verbelen, Dhoedt, AAAI 2022, https://arxiv.org/abs/2104.07495),
model-free on Stable-Baselines3.

URLB has no LBS; the METRA paper takes it from mastering-urlb (Rajeswar, Mazzaglia et al., ICML 2023,
https://github.com/mazpie/mastering-urlb, ``agent/lbs.py``, commit e40e392), where it runs on DreamerV2's world
model: the reward is the KL divergence between the posterior and the prior of the model's stochastic latent, which a
head regresses (``update_lbs``: ``-lbs(feat).log_prob(kl)``, lines 27-37) so that imagined states, which have no
posterior, get it too (``reward_fn = lbs(seq['feat']).mean``, line 51). Replayed transitions (s, a, s') do have a
posterior, so here the surprise is computed directly, with the LBS paper's latent dynamics model of its model-free
agents (prior p(z' | s, a), posterior q(z' | s, a, s'), reconstruction p(s' | z')):

- prior p(z' | s, a) = N(mu_p(s, a), I), posterior q(z' | s, a, s') = N(mu_q(s, a, s'), I), decoder
  p(s' | z') = N(mu_d(z'), I), each an MLP (unit variances: a simplification of the learned ones of the paper and
  of DreamerV2, which a public model-free port of LBS onto URLB's DDPG agent makes too; that port regresses the KL
  with a head, as mastering-urlb does, where here each replayed transition's own KL is its reward);
- the model maximises the evidence lower bound of s': with z' = mu_q + eps, eps ~ N(0, I) (reparameterised), the
  loss is the batch mean of

      -log p(s' | z') + KL(q || p) = 1/2 ||s' - mu_d(z')||^2 + (d/2) log 2 pi + 1/2 ||mu_q - mu_p||^2

- the reward is the surprise of the transition under the updated model, the KL between the unit-variance Gaussians:

      r = KL(q(z' | s, a, s') || p(z' | s, a)) = 1/2 ||mu_q(s, a, s') - mu_p(s, a)||^2

Also differing: the model-free port decodes the posterior mean mu_q rather than a sample (here a sample, as the
lower bound and DreamerV2's decoder do, so mu_q carries s' against unit noise and the KL, the reward, grows with
the information s' needs); mastering-urlb divides the reward by a running mean of |r| and uses DreamerV2's free
nats (1) and KL balancing (0.8), which the port does not and neither does this (SAC's entropy weight adapts to the
raw scale); every network takes the run's ``init`` (the port: orthogonal weights).

An exploration method has no skill: the policy is pi(a | s) (``skill_dim`` 0), and its export is a plain policy.

Settings. The backbone (SAC here; DreamerV2's actor-critic in mastering-urlb) and its learning rates, widths, batch
and schedule are the run's; the three networks take the width of phi (``phi_width``, else ``net_width``) x
``net_layers`` and the networks' learning rate:

| value | here (config key) | the model-free port |
|---|---|---|
| hidden layers of prior, posterior, decoder | the run's (``phi_width`` x ``net_layers``) | one of ``hidden_dim`` |
| latent size | the last hidden width (``lbs_latent_dim``: null) | ``hidden_dim`` |
| learning rate | the run's (``learning_rate``) | the agent's ``lr`` |
| variances of prior, posterior, decoder | 1 | 1 |
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
from torch import nn

from metra_gym.networks import mlp
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.learner_parts import LOG_2PI
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["lbs"].learner_defaults


class LBSLearner(SkillLearner):
    """LBS's latent dynamics model: prior, posterior and decoder. It takes no skill (z is empty and not read).

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: 0 (an exploration method; not read).
    :param discrete_skills: not read.
    :param action_dim: size of the action.
    :param lbs_net_arch: hidden widths of the prior, the posterior and the decoder (ReLU); None: the default
        configuration's.
    :param lbs_learning_rate: Adam learning rate of the model.
    :param latent_dim: size of the latent z'; None: the last hidden width.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("lbs_optimizer",)
    uses_actions: ClassVar[bool] = True

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, action_dim: int,
                 lbs_net_arch: list[int] | None = None, lbs_learning_rate: float = DEFAULTS.learning_rate,
                 latent_dim: int | None = OWN["latent_dim"], optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        hidden = list(lbs_net_arch or DEFAULTS.phi_hidden)
        latent_dim = latent_dim or hidden[-1]
        self.prior_net = mlp(obs_dim + action_dim, hidden, latent_dim, nn.ReLU)          # mu_p(s, a)
        self.posterior_net = mlp(2 * obs_dim + action_dim, hidden, latent_dim, nn.ReLU)  # mu_q(s, a, s')
        self.decoder = mlp(latent_dim, hidden, obs_dim, nn.ReLU)                         # mu_d(z')
        self.lbs_optimizer = th.optim.Adam(self.parameters(), lr=lbs_learning_rate, **self.optimizer_kwargs)

    def latent_means(self, obs: th.Tensor, actions: th.Tensor, next_obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """(mu_q(s, a, s'), mu_p(s, a)): the means of the posterior and of the prior of z', each (batch, latent)."""
        posterior_mean = self.posterior_net(th.cat([obs, actions, next_obs], dim=1))
        return posterior_mean, self.prior_net(th.cat([obs, actions], dim=1))

    @staticmethod
    def surprise(posterior_mean: th.Tensor, prior_mean: th.Tensor) -> th.Tensor:
        """KL(N(mu_q, I) || N(mu_p, I)) = 1/2 ||mu_q - mu_p||^2 of each transition, shape (batch,)."""
        return 0.5 * (posterior_mean - prior_mean).pow(2).sum(dim=1)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, dones: th.Tensor | None = None, *,
               actions: th.Tensor) -> dict[str, th.Tensor]:
        # The negative evidence lower bound of s': reconstruct s' from a posterior sample, keep the posterior near
        # the prior that does not see s'.
        posterior_mean, prior_mean = self.latent_means(obs, actions, next_obs)
        latent = posterior_mean + th.randn_like(posterior_mean)
        reconstruction = 0.5 * (next_obs - self.decoder(latent)).pow(2).sum(dim=1) + 0.5 * obs.shape[1] * LOG_2PI
        kl = self.surprise(posterior_mean, prior_mean)
        loss = reconstruction.mean() + kl.mean()
        self.descend(self.lbs_optimizer, loss)
        return {"lbs/loss": loss, "lbs/reconstruction": reconstruction.detach().mean(), "lbs/kl": kl.detach().mean()}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, *, actions: th.Tensor) -> th.Tensor:
        """r = KL(q(z' | s, a, s') || p(z' | s, a)) under the current model, shape (batch, 1)."""
        return self.surprise(*self.latent_means(obs, actions, next_obs)).unsqueeze(1)


class LBS(SkillAlgorithm, SkillSAC):
    """LBS on SAC, a plain policy pi(a | s) (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`LBSLearner`) hyperparameters are keywords of their own.
    """

    algo = "lbs"
    learner_class = LBSLearner
