"""Disagreement, self-supervised exploration via disagreement (Pathak, Gandhi, Gupta, ICML 2019,
https://arxiv.org/abs/1906.04161; the model-free form of Plan2Explore's reward, Sekar et al., ICML 2020), as URLB's
exploration baseline, on Stable-Baselines3.

Reference code: URLB (https://github.com/rll-research/url_benchmark, commit bb98f0c), ``agent/disagreement.py`` and
``agent/disagreement.yaml``, the implementation the METRA paper compares with on state Ant ("Disagreement /
Plan2Explore"); line numbers are of ``agent/disagreement.py``.

- Ensemble (lines 11-18): N = 5 forward models f_i(s, a) of the next state, each an MLP of its own initialisation.
- Loss (``forward`` lines 20-34, ``update_disagreement`` lines 62-80): every model regresses s' on the same
  minibatch; the loss is the mean over models and transitions of ||s' - f_i(s, a)|| (a Euclidean norm, not squared).
- Reward (``get_disagreement`` lines 36-45, ``compute_intr_reward`` lines 82-85): the variance of the models'
  predictions, over the models (unbiased: divided by N - 1, torch's ``var``), averaged over the state's dimensions:

      r = (1/d) sum_k Var_i[f_i(s, a)_k]

  computed after the ensemble's step on the same minibatch (``update``, lines 102-108). It does not read s'.

An exploration method has no skill: the policy is pi(a | s) (``skill_dim`` 0), and its export is a plain policy.

Settings. The backbone (SAC here, DDPG in URLB) and its learning rates, widths, batch and schedule are the run's;
the models take the width of phi (``phi_width``, else ``net_width``) x ``net_layers`` and the networks' learning rate:

| value | here (config key) | URLB (``agent/disagreement.yaml``) |
|---|---|---|
| models N | 5 (``disagreement_n_models``) | ``n_models=5`` |
| hidden layers of each model | the run's (``phi_width`` x ``net_layers``) | one of ``hidden_dim: 1024`` |
| learning rate | the run's (``learning_rate``) | ``lr: 1e-4`` |

The class is ``DISAGREEMENT`` (the registry's rule: the upper-cased name of the algorithm, ``algo=disagreement``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch as th
from torch import nn

from metra_gym.networks import mlp
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import REGISTRY, PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's
OWN = REGISTRY["disagreement"].learner_defaults


class DISAGREEMENTLearner(SkillLearner):
    """Disagreement's ensemble of forward models. It takes no skill (z is empty and not read).

    :param obs_dim: size of the (normalised) observation, and of each model's prediction.
    :param skill_dim: 0 (an exploration method; not read).
    :param discrete_skills: not read.
    :param action_dim: size of the action.
    :param ensemble_net_arch: hidden widths of every model (ReLU); None: the default configuration's.
    :param ensemble_learning_rate: Adam learning rate of the ensemble.
    :param n_models: N, the number of models (at least 2: the reward is their variance).
    :param optimizer_kwargs: extra Adam arguments.
    """

    optimizer_names: ClassVar[tuple[str, ...]] = ("ensemble_optimizer",)
    uses_actions: ClassVar[bool] = True

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, action_dim: int,
                 ensemble_net_arch: list[int] | None = None, ensemble_learning_rate: float = DEFAULTS.learning_rate,
                 n_models: int = OWN["n_models"], optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        if n_models < 2:
            raise ValueError(f"n_models must be >= 2 (the reward is the variance of their predictions), got {n_models}")
        hidden = list(ensemble_net_arch or DEFAULTS.phi_hidden)
        self.ensemble = nn.ModuleList(mlp(obs_dim + action_dim, hidden, obs_dim, nn.ReLU) for _ in range(n_models))
        self.ensemble_optimizer = th.optim.Adam(self.ensemble.parameters(), lr=ensemble_learning_rate,
                                                **self.optimizer_kwargs)

    def predictions(self, obs: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """Every model's prediction of s', shape (n_models, batch, obs_dim)."""
        inputs = th.cat([obs, actions], dim=1)
        return th.stack([model(inputs) for model in self.ensemble])

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, dones: th.Tensor | None = None, *,
               actions: th.Tensor) -> dict[str, th.Tensor]:
        # Every model regresses s' on the same minibatch (URLB lines 62-80); they differ by their initialisation.
        loss = (next_obs - self.predictions(obs, actions)).norm(dim=2).mean()
        self.descend(self.ensemble_optimizer, loss)
        return {"disagreement/loss": loss}

    @th.no_grad()
    def reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor, *, actions: th.Tensor) -> th.Tensor:
        """r = mean over the state's dimensions of the (unbiased) variance of the models' predictions, shape
        (batch, 1) (URLB lines 36-45, 82-85)."""
        return self.predictions(obs, actions).var(dim=0).mean(dim=1, keepdim=True)


class DISAGREEMENT(SkillAlgorithm, SkillSAC):
    """Disagreement on SAC, a plain policy pi(a | s) (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`DISAGREEMENTLearner`) hyperparameters are keywords of their own.
    """

    algo = "disagreement"
    learner_class = DISAGREEMENTLearner
