"""APS's critic: Q as successor features of the task vector, Q_i(s, w, a) = psi_i(s, w, a)^T w.

Reference: URLB (https://github.com/rll-research/url_benchmark, commit bb98f0c), ``agent/aps.py``, ``CriticSF``
(lines 17-67): for state observations a trunk on [s, w, a] (the observation there already holds the task, line 227),
then two heads of ``sf_dim`` outputs each, and Q = psi^T w (lines 64-65). Here the heads are SB3's critic MLPs with
``sf_dim`` outputs instead of one; everything else (twin heads, targets, the actor) is SAC's as for every method.
"""

from __future__ import annotations

from typing import Any

import torch as th
from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from pretrain.algorithms.common.policies import SkillSACPolicy


class SuccessorFeatureCritic(ContinuousCritic):
    """SB3's twin critic whose heads output successor features psi_i(s, w, a) in R^sf_dim, read as
    Q_i = psi_i^T w with the task w in the observation's last ``sf_dim`` entries.

    :param sf_dim: the size of w and of the successor features.
    Other parameters are SB3's :class:`ContinuousCritic`'s.
    """

    def __init__(self, *args: Any, sf_dim: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sf_dim = sf_dim
        for q_net in self.q_networks:  # each head's output layer: sf_dim features instead of one value
            q_net[-1] = nn.Linear(q_net[-1].in_features, sf_dim)

    def successor_features(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, ...]:
        """psi_i(s, w, a) of every head, each of shape (batch, sf_dim)."""
        return super().forward(obs, actions)

    def forward(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, ...]:
        task = obs[:, -self.sf_dim:]
        return tuple((psi * task).sum(dim=1, keepdim=True) for psi in self.successor_features(obs, actions))

    def q1_forward(self, obs: th.Tensor, actions: th.Tensor) -> th.Tensor:
        with th.no_grad():
            features = self.extract_features(obs, self.features_extractor)
        psi = self.q_networks[0](th.cat([features, actions], dim=1))
        return (psi * obs[:, -self.sf_dim:]).sum(dim=1, keepdim=True)


class SuccessorFeatureSACPolicy(SkillSACPolicy):
    """The skill SAC policy of every method (:class:`SkillSACPolicy`) with APS's successor-feature critic.

    :param sf_dim: the size of the task vector w (the skill) and of the successor features.
    Other parameters are :class:`SkillSACPolicy`'s.
    """

    def __init__(self, *args: Any, sf_dim: int, **kwargs: Any) -> None:
        self.sf_dim = sf_dim  # read by make_critic, which the super call runs
        super().__init__(*args, **kwargs)

    def make_critic(self, features_extractor: BaseFeaturesExtractor | None = None) -> SuccessorFeatureCritic:
        kwargs = self._update_features_extractor(self.critic_kwargs, features_extractor)
        return SuccessorFeatureCritic(**kwargs, sf_dim=self.sf_dim).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "sf_dim": self.sf_dim}
