"""CIC, Contrastive Intrinsic Control (Laskin, Liu, Peng, Yarats, Rajeswaran, Abbeel, 2022,
https://arxiv.org/abs/2202.00161) on Stable-Baselines3.

Reference code: https://github.com/rll-research/cic (``agent/cic.py`` and ``agent/cic.yaml``, on URLB; "URLB" below),
followed here where it and the CSF fork's port (https://github.com/jens321/csf, ``iod/cic.py``, on the METRA code)
differ. CIC maximises I(tau; z) = H(tau) - H(tau | z) for transitions tau = (s, s'):

- H(tau | z) is lowered by a contrastive (InfoNCE / CPC) loss: a state encoder g, a transition embedding
  k = f(g(s), g(s')) and a skill projection q = h(z), both unit-normalised, with logits l_ij = q_i^T k_j / T over the
  minibatch and the positive pairs on the diagonal. The positive is taken out of the denominator as both reference
  codes do, by subtracting e^(1/T), the largest value its term can take (so exactly once q_i and k_i align):

      loss_i = -log(e^(l_ii) / (max(sum_j e^(l_ij) - e^(1/T), 1e-6) + 1e-6))

  This only shapes the representation.
- H(tau) is the reward: a particle-based k-NN entropy estimate in the encoder's space, over the minibatch. As in
  URLB (``compute_apt_reward(next_obs, next_obs)``), the particles are the embeddings g(s') of the batch's next
  states, and the reward averages over the k nearest neighbours (itself included, distance 0):

      r_i = log(1 + (1/k) sum_{j in kNN(i)} max(d_ij / S - c, 0)),   d_ij = ||g(s'_i) - g(s'_j)||

  where S is a running estimate of the distances' variance (the reference's ``RMS``: it divides by its second
  statistic although it calls it a std) and c = 0.0005 a clip. The CSF fork measures d_ij = ||g(s_i) - g(s'_j)||
  instead (``_compute_apt_reward(source=phi(obs), target=phi(next_obs))``): ``knn_query="state"``.

Skills are URLB's: 64-dimensional, uniform in [0, 1]^64 (:attr:`CICLearner.skill_prior`; the CSF fork draws them
as METRA does). URLB draws a new skill every 50 steps (``update_skill_every_step``); here, as for every method of
this package and in the CSF fork, one skill per episode (200 steps), which the skill policy then keeps for its whole
rollout at evaluation too. The running statistics of the k-NN distances are saved with the model (URLB keeps them
in a module-level global).

Per minibatch: :meth:`CICLearner.update` (contrastive step, then the running statistics of the k-NN distances under
the updated encoder), :meth:`CICLearner.reward` (the entropy reward of the minibatch), then the backbone's RL step.

Settings. The backbone (SAC here, DDPG in URLB; its learning rates, widths, batch, buffer, schedule) is the run's,
shared by every method; g, f and h take the width of phi (``phi_width``, else ``net_width``; URLB: 1024) and the
networks' learning rate (URLB: 1e-4). CIC's own values:

| value | here (config key) | URLB | CSF fork |
|---|---|---|---|
| skill dimension | 64 (``skill_dim``, set when ``algo=cic`` replaces another algorithm) | ``skill_dim: 64`` | ``--dim_option 64`` |
| skill prior | U[0, 1]^64 | ``np.random.uniform(0, 1)`` | METRA's |
| skill resampled | every episode (200 steps) | every 50 steps | every episode |
| temperature T | 0.5 (``cic_temperature``) | ``temp: 0.5`` | ``--cic_temp 0.5`` |
| neighbours k | 16 (``cic_knn_k``) | ``knn_k=16`` | ``--apt_knn_k 16`` |
| k-NN distances from | g(s') (``cic_knn_query``) | g(s') | g(s) |
| clip c | 0.0005 (``cic_knn_clip``) | 0.0005 | 0.0005 |
| skill projection h | on (``cic_project_skill``) | ``project_skill: true`` | a z encoder |

CIC has no goal-conditioned representation for zero-shot goal reaching, so it has no ``phi``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch as th
import torch.nn.functional as F
from torch import nn

from metra_gym.networks import mlp
from metra_gym.skill_priors import UNIFORM
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.particle_entropy import RMS_START_COUNT, merge_moments
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["cic"].learner_defaults

# k-NN distances from g(s') (URLB) or from g(s) (the CSF fork), to the g(s'); the registry lists the choices.
KNN_QUERIES = REGISTRY["cic"].choices["cic_knn_query"][0]
CONTRASTIVE_EPS = 1e-6  # the references' clamp of the denominator and its offset


class CICLearner(SkillLearner):
    """CIC's state encoder g, transition embedding f and skill projection h, and the running statistics of its
    k-NN distances.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: D, the size of z and of every embedding (URLB: 64).
    :param discrete_skills: one-hot skills instead of uniform draws in [0, 1]^D.
    :param cic_net_arch: hidden widths of g, f and h (ReLU); None: the default configuration's.
    :param cic_learning_rate: Adam learning rate of g, f and h.
    :param temperature: T of the contrastive logits.
    :param knn_k: k, the neighbours of the entropy estimate (itself included); at most the batch size.
    :param knn_clip: c, subtracted from the normalised distances before they are clipped at 0.
    :param knn_query: the k-NN distances are from g(s') (``"next_state"``, URLB) or from g(s) (``"state"``, the CSF
        fork) to the batch's g(s').
    :param project_skill: map z through the MLP h (else h is the identity).
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("cic_optimizer",)
    skill_prior: ClassVar[str] = UNIFORM

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, cic_net_arch: list[int] | None = None,
                 cic_learning_rate: float = DEFAULTS.learning_rate, temperature: float = OWN["temperature"],
                 knn_k: int = OWN["knn_k"], knn_clip: float = OWN["knn_clip"], knn_query: str = OWN["knn_query"],
                 project_skill: bool = OWN["project_skill"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        if knn_k < 1:
            raise ValueError(f"knn_k must be >= 1, got {knn_k}")
        if knn_query not in KNN_QUERIES:
            raise ValueError(f"knn_query must be one of {', '.join(KNN_QUERIES)}, got {knn_query!r}")
        self.temperature, self.knn_k, self.knn_clip, self.knn_query = temperature, knn_k, knn_clip, knn_query
        hidden = list(cic_net_arch or DEFAULTS.phi_hidden)
        self.state_net = mlp(obs_dim, hidden, skill_dim, nn.ReLU)            # g(s)
        self.pred_net = mlp(2 * skill_dim, hidden, skill_dim, nn.ReLU)       # f(g(s), g(s')): the transition key
        self.skill_net = mlp(skill_dim, hidden, skill_dim, nn.ReLU) if project_skill else nn.Identity()  # h(z)
        # Running mean and variance of the k-NN distances (the reference code's RMS, started at 0, 1 and 1e-4
        # samples), float64 because the count grows by batch x k every step.
        self.register_buffer("knn_mean", th.zeros((), dtype=th.float64))
        self.register_buffer("knn_var", th.ones((), dtype=th.float64))
        self.register_buffer("knn_count", th.tensor(RMS_START_COUNT, dtype=th.float64))
        self.cic_optimizer = th.optim.Adam(self.parameters(), lr=cic_learning_rate, **self.optimizer_kwargs)

    def contrastive_logits(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """(batch, batch) logits q_i^T k_j / T of skill i against transition j, both unit-normalised."""
        g_s, g_next = self.state_net(th.cat([obs, next_obs])).chunk(2)
        key = F.normalize(self.pred_net(th.cat([g_s, g_next], dim=1)), dim=1)
        query = F.normalize(self.skill_net(z), dim=1)
        return query @ key.T / self.temperature

    def contrastive_loss(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """InfoNCE with the positive out of the denominator (module docstring), mean over the batch.

        Computed in float64 and shifted by 1/T, the largest logit: the same value as the references' float32
        formula at T = 0.5, and still finite at a small T whose e^(1/T) would overflow."""
        logits = self.contrastive_logits(obs, next_obs, z).double()
        top = 1.0 / self.temperature
        # sum_j e^(l_ij) - e^(1/T) = e^(1/T) (sum_j e^(l_ij - 1/T) - 1), and the eps scale alike.
        eps = CONTRASTIVE_EPS * math.exp(-top)
        negatives = ((logits - top).exp().sum(dim=1) - 1.0).clamp(min=eps) + eps
        return (negatives.log() - (logits.diagonal() - top)).mean().float()

    def knn_distances(self, obs: th.Tensor, next_obs: th.Tensor) -> th.Tensor:
        """Distances from each g(s') (or g(s), ``knn_query="state"``) to its k nearest g(s') in the batch (for
        g(s'): itself first, at 0), shape (batch, k)."""
        if self.knn_query == "next_state":
            query = target = self.state_net(next_obs)
        else:
            query, target = self.state_net(th.cat([obs, next_obs])).chunk(2)
        # The exact pairwise formula: the matmul shortcut leaves self-distances of about 1e-3 instead of 0.
        distances = th.cdist(query, target, compute_mode="donot_use_mm_for_euclid_dist")
        return distances.topk(self.knn_k, dim=1, largest=False, sorted=True).values

    def update_knn_statistics(self, distances: th.Tensor) -> None:
        """Merge a batch of distances into the running mean and variance (the reference code's RMS update)."""
        merge_moments(self.knn_mean, self.knn_var, self.knn_count, distances)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # 1. The contrastive step shapes g, f and h so that transitions identify their skill.
        loss = self.contrastive_loss(obs, next_obs, z)
        self.descend(self.cic_optimizer, loss)
        # 2. The k-NN distances of this batch under the updated encoder join the running statistics that the
        #    reward is normalised with (the reference code updates them as it computes the reward).
        with th.no_grad():
            self.update_knn_statistics(self.knn_distances(obs, next_obs))
        return {"cic/contrastive_loss": loss, "cic/knn_distance_var": self.knn_var.float()}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """The k-NN entropy reward of each transition among the batch's next states, shape (batch, 1); it does not
        use z (nor s, unless ``knn_query="state"``)."""
        normalised = self.knn_distances(obs, next_obs) / self.knn_var.to(next_obs.dtype)
        return th.log1p((normalised - self.knn_clip).clamp(min=0).mean(dim=1, keepdim=True))


class CIC(SkillAlgorithm, SkillSAC):
    """CIC on SAC, with the CIC paper's learner settings and the METRA paper's SAC settings (:meth:`on_backbone`
    gives it on CrossQ or TQC).

    The skill learner's (:class:`CICLearner`) hyperparameters are keywords of their own.
    """

    algo = "cic"
    learner_class = CICLearner
