"""RND, Random Network Distillation (Burda, Edwards, Storkey, Klimov, ICLR 2019, https://arxiv.org/abs/1810.12894),
as URLB's exploration baseline, on Stable-Baselines3.

Reference code: URLB (https://github.com/rll-research/url_benchmark, commit bb98f0c), ``agent/rnd.py`` and
``agent/rnd.yaml``, the implementation the METRA paper compares with on state Ant; line numbers are of
``agent/rnd.py``.

- Observation normalisation (lines 27-30, 49-51): URLB's ``BatchNorm1d(affine=False)``, which its module never leaves
  training mode, so every batch is standardised with its own statistics (mean and biased variance, eps 1e-5), then
  clipped to [-5, 5] (``clip_val``). Written out here: x = clip((s - mean_B(s)) / sqrt(var_B(s) + 1e-5), -5, 5).
  (The RND paper keeps running statistics instead; URLB's batch statistics are what the METRA paper ran.)
- Networks (lines 32-44): a predictor and a frozen, randomly initialised target of the same shape, observation ->
  2 hidden ReLU layers -> ``rnd_rep_dim`` = 512.
- Prediction error (lines 52-55): e(s) = mean_d (target(x) - predictor(x))_d^2; the loss is its batch mean
  (``update_rnd``, lines 74-92), on the current observations s (URLB trains and rewards s, not s').
- Reward (``compute_intr_reward``, lines 94-99):

      r = c e(s) / (sqrt(S) + 1e-8)

  where S is the running variance of the prediction errors (URLB's ``RMS``, ``utils.py`` lines 257-276, merged with
  this batch's errors under the updated predictor) and c = ``rnd_scale`` = 1. The running moments are saved with the
  learner (:class:`~pretrain.algorithms.common.particle_entropy.RunningMoments`).

An exploration method has no skill: the policy is pi(a | s) (``skill_dim`` 0), and its export is a plain policy.

Settings. The backbone (SAC here, DDPG in URLB) and its learning rates, widths, batch and schedule are the run's;
the predictor and target take the width of phi (``phi_width``, else ``net_width``) x ``net_layers`` and the networks'
learning rate:

| value | here (config key) | URLB (``agent/rnd.yaml``) |
|---|---|---|
| hidden layers | the run's (``phi_width`` x ``net_layers``) | two of ``hidden_dim: 1024`` |
| output size | 512 (``rnd_rep_dim``) | ``rnd_rep_dim: 512`` |
| learning rate | the run's (``learning_rate``) | ``lr: 1e-4`` |
| observation clip | 5 (``rnd_obs_clip``) | ``clip_val=5.`` |
| reward scale c | 1 (``rnd_scale``) | ``rnd_scale: 1.0`` |
| initial weights (also the frozen target's) | the run's ``init`` (PyTorch's default) | orthogonal, zero biases (``utils.weight_init``) |
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
from torch import nn

from metra_gym.networks import mlp
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.particle_entropy import RunningMoments
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["rnd"].learner_defaults

BATCH_NORM_EPS = 1e-5  # torch's BatchNorm1d default, which URLB's normalisation is
REWARD_EPS = 1e-8  # URLB's offset of the reward's divisor


class RNDLearner(SkillLearner):
    """RND's predictor, its frozen random target, and the running variance of the prediction errors. It takes no
    skill (z is empty and not read).

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: 0 (an exploration method; not read).
    :param discrete_skills: not read.
    :param rnd_net_arch: hidden widths of the predictor and of the target (ReLU); None: the default configuration's.
    :param rnd_learning_rate: Adam learning rate of the predictor.
    :param rnd_rep_dim: size of the networks' output.
    :param obs_clip: the standardised observations are clipped to [-obs_clip, obs_clip].
    :param rnd_scale: c, the scale of the reward.
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("rnd_optimizer",)

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, rnd_net_arch: list[int] | None = None,
                 rnd_learning_rate: float = DEFAULTS.learning_rate, rnd_rep_dim: int = OWN["rnd_rep_dim"],
                 obs_clip: float = OWN["obs_clip"], rnd_scale: float = OWN["rnd_scale"],
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        self.obs_clip, self.rnd_scale = obs_clip, rnd_scale
        hidden = list(rnd_net_arch or DEFAULTS.phi_hidden)
        self.predictor = mlp(obs_dim, hidden, rnd_rep_dim, nn.ReLU)
        self.target = mlp(obs_dim, hidden, rnd_rep_dim, nn.ReLU).requires_grad_(False)  # fixed at its random init
        self.error_moments = RunningMoments()
        self.rnd_optimizer = th.optim.Adam(self.predictor.parameters(), lr=rnd_learning_rate, **self.optimizer_kwargs)

    def standardised(self, obs: th.Tensor) -> th.Tensor:
        """The batch standardised with its own mean and biased variance, clipped (URLB's BatchNorm1d in training
        mode)."""
        x = (obs - obs.mean(dim=0)) / (obs.var(dim=0, unbiased=False) + BATCH_NORM_EPS).sqrt()
        return x.clamp(-self.obs_clip, self.obs_clip)

    def prediction_error(self, obs: th.Tensor) -> th.Tensor:
        """e(s) = mean_d (target(x) - predictor(x))_d^2 of each observation, shape (batch,)."""
        x = self.standardised(obs)
        return (self.target(x) - self.predictor(x)).pow(2).mean(dim=1)

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # 1. The predictor distils the random target on the replayed states (URLB lines 74-92).
        loss = self.prediction_error(obs).mean()
        self.descend(self.rnd_optimizer, loss)
        # 2. The errors of this batch under the updated predictor join the running variance that the reward is
        #    divided by (URLB merges them as it computes the reward, line 96: the same numbers).
        with th.no_grad():
            self.error_moments.update(self.prediction_error(obs))
        return {"rnd/loss": loss, "rnd/error_std": self.error_moments.var.sqrt().float()}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = c e(s) / (sqrt(S) + 1e-8), shape (batch, 1) (URLB lines 94-99)."""
        scale = self.error_moments.var.sqrt().to(obs.dtype) + REWARD_EPS
        return (self.rnd_scale * self.prediction_error(obs) / scale).unsqueeze(1)


class RND(SkillAlgorithm, SkillSAC):
    """RND on SAC, a plain policy pi(a | s) (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`RNDLearner`) hyperparameters are keywords of their own.
    """

    algo = "rnd"
    learner_class = RNDLearner
