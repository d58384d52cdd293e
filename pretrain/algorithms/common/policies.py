"""The skill policy of the official METRA code (shared by its baselines): SB3's SAC policy with tanh hidden layers
and small output layers in the actor."""

from __future__ import annotations

from sb3_contrib.tqc.policies import Actor as TQCActor
from sb3_contrib.tqc.policies import TQCPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.sac.policies import Actor, SACPolicy
from torch import nn


def _skill_actor(actor_class: type, actor_kwargs: dict, device) -> nn.Module:
    """An actor with tanh hidden layers and xavier-normal x 0.1 output layers (the official METRA policy)."""
    actor = actor_class(**{**actor_kwargs, "activation_fn": nn.Tanh}).to(device)
    for head in (actor.mu, actor.log_std):
        nn.init.xavier_normal_(head.weight, gain=0.1)
        nn.init.zeros_(head.bias)
    return actor


class SkillSACPolicy(SACPolicy):
    """SAC policy whose actor uses tanh hidden activations and xavier-normal x 0.1 output layers, as the official
    METRA policy does; the critics keep ``activation_fn`` (ReLU by default, also as there).

    Observations are the normalised environment observation with the skill appended.
    """

    def __init__(self, *args, activation_fn: type[nn.Module] = nn.ReLU, **kwargs) -> None:
        super().__init__(*args, activation_fn=activation_fn, **kwargs)

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> Actor:
        return _skill_actor(Actor, self._update_features_extractor(self.actor_kwargs, features_extractor), self.device)


class SkillTQCPolicy(TQCPolicy):
    """TQC's policy with the same skill actor as :class:`SkillSACPolicy` (its quantile critics keep ReLU), so that
    a TQC run exports to the same skill checkpoint."""

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> TQCActor:
        return _skill_actor(TQCActor, self._update_features_extractor(self.actor_kwargs, features_extractor),
                            self.device)
