"""APT, Active Pre-Training (Liu, Abbeel, NeurIPS 2021, https://arxiv.org/abs/2103.04551), as URLB's exploration
baseline ("APT(ICM)"), on Stable-Baselines3.

Reference code: URLB (https://github.com/rll-research/url_benchmark, commit bb98f0c), ``agent/icm_apt.py`` and
``agent/icm_apt.yaml`` (``agent=icm_apt``, which URLB's README lists as APT), the implementation the METRA paper
compares with on state Ant; line numbers are of ``agent/icm_apt.py``.

- Representation (lines 11-52): an embedding e(s) = tanh(LayerNorm(W s + b)) of ``icm_rep_dim`` = 512, trained
  only by ICM's forward and inverse losses in that space (mean ||e(s') - f(e(s), a)|| + mean ||a - g(e(s), e(s'))||,
  ``update_icm`` lines 76-94; :class:`~pretrain.algorithms.common.forward_inverse.ForwardInverseModel`).
- Reward (``compute_intr_reward`` lines 96-100, URLB's ``utils.PBE`` lines 279-319): the particle-based entropy of
  the embeddings of the minibatch's states s (URLB embeds ``obs``, not ``next_obs``), averaged over the k = 12
  nearest particles of the same minibatch, itself included:

      r_i = log(1 + (1/k) sum_{j in kNN(i)} max(||e(s_i) - e(s_j)|| / M - c, 0))

  :class:`~pretrain.algorithms.common.particle_entropy.ParticleEntropy`. ``icm_apt.yaml`` sets ``knn_rms: false``
  and ``knn_clip: 0.0``: the distances are not normalised (M = 1) and not clipped (c = 0); ``apt_knn_rms: true``
  divides them by the running mean M of the k-NN distances, as APS does (and as URLB's unused ``state_apt.yaml``
  would, with ``knn_clip: 0.0001``; that file lacks ``icm_rep_dim`` and cannot build its agent).

An exploration method has no skill: the policy is pi(a | s) (``skill_dim`` 0), and its export is a plain policy.

Settings. The backbone (SAC here, DDPG in URLB) and its learning rates, widths, batch and schedule are the run's;
the forward and inverse models take the width of phi (``phi_width``, else ``net_width``) x ``net_layers`` and the
networks' learning rate:

| value | here (config key) | URLB (``agent/icm_apt.yaml``) |
|---|---|---|
| embedding size | 512 (``apt_embedding_dim``) | ``icm_rep_dim: 512`` |
| hidden layers of f and g | the run's (``phi_width`` x ``net_layers``) | one of ``hidden_dim: 1024`` |
| learning rate | the run's (``learning_rate``) | ``lr: 1e-4`` |
| neighbours k | 12 (``apt_knn_k``; at most the batch size) | ``knn_k: 12``, ``knn_avg: true`` |
| particles (the minibatch) | the run's ``batch_size`` (256) | ``batch_size: 1024`` |
| distances divided by their running mean | no (``apt_knn_rms``) | ``knn_rms: false`` |
| clip c | 0 (``apt_knn_clip``) | ``knn_clip: 0.0`` |
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th

from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.forward_inverse import ForwardInverseModel
from pretrain.algorithms.common.particle_entropy import ParticleEntropy
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["apt"].learner_defaults


class APTLearner(SkillLearner):
    """APT's embedding with ICM's forward and inverse models on it, and the particle entropy of its reward. It takes
    no skill (z is empty and not read).

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: 0 (an exploration method; not read).
    :param discrete_skills: not read.
    :param action_dim: size of the action.
    :param icm_net_arch: hidden widths of the forward and of the inverse model (ReLU); None: the default
        configuration's.
    :param icm_learning_rate: Adam learning rate of the embedding and both models.
    :param embedding_dim: size of the embedding e(s).
    :param knn_k: k, the neighbours of the entropy estimate (itself included); at most the batch size.
    :param knn_clip: c, subtracted from the (normalised) distances before they are clipped at 0.
    :param knn_rms: divide the distances by the running mean of the k-NN distances.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("icm_optimizer",)
    uses_actions: ClassVar[bool] = True

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, action_dim: int,
                 icm_net_arch: list[int] | None = None, icm_learning_rate: float = DEFAULTS.learning_rate,
                 embedding_dim: int = OWN["embedding_dim"], knn_k: int = OWN["knn_k"],
                 knn_clip: float = OWN["knn_clip"], knn_rms: bool = OWN["knn_rms"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        self.model = ForwardInverseModel(obs_dim, action_dim, list(icm_net_arch or DEFAULTS.phi_hidden), embedding_dim)
        self.entropy = ParticleEntropy(knn_k, knn_clip, knn_rms)
        self.icm_optimizer = th.optim.Adam(self.model.parameters(), lr=icm_learning_rate, **self.optimizer_kwargs)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, dones: th.Tensor | None = None, *,
               actions: th.Tensor) -> dict[str, th.Tensor]:
        # 1. ICM's losses shape the embedding (URLB lines 76-94).
        loss, errors = self.model.loss(obs, actions, next_obs)
        self.descend(self.icm_optimizer, loss)
        # 2. With knn_rms, this batch's k-NN distances under the updated embedding join their running mean (URLB
        #    merges them as it computes the reward of the same batch: the same numbers). Without it (APT's default)
        #    nothing reads the moments, so the embedding of the batch is not computed for them.
        if self.entropy.knn_rms:
            with th.no_grad():
                self.entropy.update(self.model.embedding(obs))
        return {"apt/loss": loss, **{f"apt/{name}": value for name, value in errors.items()}}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, *, actions: th.Tensor) -> th.Tensor:
        """The particle entropy of e(s) among the minibatch's states, shape (batch, 1) (URLB lines 96-100); it reads
        neither the action nor s'."""
        return self.entropy(self.model.embedding(obs))


class APT(SkillAlgorithm, SkillSAC):
    """APT on SAC, a plain policy pi(a | s) (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`APTLearner`) hyperparameters are keywords of their own.
    """

    algo = "apt"
    learner_class = APTLearner
