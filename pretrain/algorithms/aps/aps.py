"""APS, Active Pre-training with Successor features (Liu, Abbeel, ICML 2021,
http://proceedings.mlr.press/v139/liu21b.html), as URLB's exploration baseline, on Stable-Baselines3.

Reference code: URLB (https://github.com/rll-research/url_benchmark, commit bb98f0c), ``agent/aps.py`` and
``agent/aps.yaml``, the implementation the METRA paper compares with on state Ant; line numbers are of
``agent/aps.py``.

APS's task vector w is its skill: a unit vector of ``sf_dim`` = 10 (``init_meta``, lines 134-142: N(0, I)
normalised, which is the unit prior of this package), appended to the policy's and the critic's input.

- Features (class ``APS``, lines 70-84): phi(s) in R^sf_dim, an MLP of 2 hidden ReLU layers.
- Loss (``compute_aps_loss`` lines 180-183, ``update_aps`` lines 149-165): phi ascends the log-likelihood of w under a
  von Mises-Fisher distribution around phi(s'): the loss is -mean w^T phi(s') / ||phi(s')||.
- Reward (``compute_intr_reward`` lines 167-178, summed at line 207): the sum of
  - an exploration term, the particle-based entropy of the unnormalised phi(s') among the minibatch's next states,
    over the k = 12 nearest (itself included), the distances divided by their running mean M (``knn_rms: true``)
    and clipped at c = 0.0001 (URLB's ``utils.PBE``, ``utils.py`` lines 279-319;
    :class:`~pretrain.algorithms.common.particle_entropy.ParticleEntropy`):
    r_ent = log(1 + (1/k) sum_{j in kNN(i)} max(d_ij / M - c, 0));
  - an exploitation term, the successor-feature reward r_sf = w^T phi(s') / ||phi(s')||.
- Critic (``CriticSF``, lines 17-67): Q(s, w, a) = psi(s, w, a)^T w with successor features psi
  (:class:`~pretrain.algorithms.aps.policies.SuccessorFeatureCritic`), on SAC (``APS`` on the other backbones keeps
  their plain critics).

Differences from URLB: the task is drawn once per episode (URLB draws a new one every 5 steps,
``update_task_every_step: 5``) as for every method of this package, so that the policy's coverage is measured per
task as for the skills of the other methods; the fine-tuning stage (``regress_meta``: w by least squares on a task's
rewards) is not part of pretraining and not ported. URLB's running moments live in the agent; here they are buffers
saved with the learner.

Settings. The backbone (SAC here, DDPG in URLB) and its learning rates, widths, batch and schedule are the run's;
phi takes the width of phi (``phi_width``, else ``net_width``) x ``net_layers`` and the networks' learning rate:

| value | here (config key) | URLB (``agent/aps.yaml``) |
|---|---|---|
| task (skill) dimension | 10 (``skill_dim``, set when ``algo=aps`` replaces another algorithm) | ``sf_dim: 10`` |
| task resampled | every episode | every 5 steps |
| hidden layers of phi | the run's (``phi_width`` x ``net_layers``) | two of ``hidden_dim: 1024`` |
| learning rate | the run's (``learning_rate``) | ``lr: 1e-4`` |
| neighbours k | 12 (``aps_knn_k``; at most the batch size) | ``knn_k: 12``, ``knn_avg: true`` |
| particles (the minibatch) | the run's ``batch_size`` (256) | ``batch_size: 1024`` |
| distances divided by their running mean | yes (``aps_knn_rms``) | ``knn_rms: true`` |
| clip c | 0.0001 (``aps_knn_clip``) | ``knn_clip: 0.0001`` |
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
import torch.nn.functional as F
from stable_baselines3.common.policies import BasePolicy
from torch import nn

from metra_gym.networks import mlp
from pretrain.algorithms.aps.policies import SuccessorFeatureSACPolicy
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.particle_entropy import ParticleEntropy
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["aps"].learner_defaults


class APSLearner(SkillLearner):
    """APS's state features phi and the particle entropy of its reward. Continuous tasks w are unit vectors (the
    default :attr:`skill_prior`).

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: the size of w and of phi's output (URLB's ``sf_dim``).
    :param discrete_skills: one-hot tasks instead of unit vectors.
    :param aps_net_arch: hidden widths of phi (ReLU); None: the default configuration's.
    :param aps_learning_rate: Adam learning rate of phi.
    :param knn_k: k, the neighbours of the entropy estimate (itself included); at most the batch size.
    :param knn_clip: c, subtracted from the normalised distances before they are clipped at 0.
    :param knn_rms: divide the distances by the running mean of the k-NN distances.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("aps_optimizer",)

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, aps_net_arch: list[int] | None = None,
                 aps_learning_rate: float = DEFAULTS.learning_rate, knn_k: int = OWN["knn_k"],
                 knn_clip: float = OWN["knn_clip"], knn_rms: bool = OWN["knn_rms"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        self.features = mlp(obs_dim, list(aps_net_arch or DEFAULTS.phi_hidden), skill_dim, nn.ReLU)  # phi(s)
        self.entropy = ParticleEntropy(knn_k, knn_clip, knn_rms)
        self.aps_optimizer = th.optim.Adam(self.features.parameters(), lr=aps_learning_rate, **self.optimizer_kwargs)

    @staticmethod
    def successor_feature_reward(features: th.Tensor, z: th.Tensor) -> th.Tensor:
        """w^T phi(s') / ||phi(s')|| of each transition, shape (batch,)."""
        return (F.normalize(features, dim=1) * z).sum(dim=1)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # 1. phi(s') turns towards the task that reached s' (URLB lines 149-165, 180-183).
        loss = -self.successor_feature_reward(self.features(next_obs), z).mean()
        self.descend(self.aps_optimizer, loss)
        # 2. This batch's k-NN distances under the updated phi join their running mean (URLB merges them as it
        #    computes the reward of the same batch: the same numbers).
        with th.no_grad():
            self.entropy.update(self.features(next_obs))
        return {"aps/loss": loss, "aps/knn_distance_mean": self.entropy.moments.mean.float()}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = r_ent + r_sf: the particle entropy of phi(s') among the minibatch's next states plus
        w^T phi(s') / ||phi(s')||, shape (batch, 1) (URLB lines 167-178, 207)."""
        features = self.features(next_obs)
        return self.entropy(features) + self.successor_feature_reward(features, z).unsqueeze(1)


class APS(SkillAlgorithm, SkillSAC):
    """APS on SAC with its successor-feature critic; its skill is the task vector w (:meth:`on_backbone` gives it on
    CrossQ or TQC, with their plain critics).

    The skill learner's (:class:`APSLearner`) hyperparameters are keywords of their own.
    """

    algo = "aps"
    learner_class = APSLearner
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": SuccessorFeatureSACPolicy}

    def _setup_model(self) -> None:
        # The critic's successor features have the size of the task vector, the skill.
        self.policy_kwargs = {**self.policy_kwargs, "sf_dim": self.skill_dim}
        super()._setup_model()
