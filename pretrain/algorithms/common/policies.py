"""The skill policy of the official METRA code (shared by its baselines): SB3's SAC policy with tanh hidden layers
and small output layers in the actor, and, for pixels, twin critics that each own their encoder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.tqc.policies import Actor as TQCActor
from sb3_contrib.tqc.policies import TQCPolicy
from stable_baselines3.common.policies import BaseModel, ContinuousCritic
from stable_baselines3.common.preprocessing import get_action_dim, preprocess_obs
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, create_mlp
from stable_baselines3.sac.policies import Actor, SACPolicy
from torch import nn


def _skill_actor(actor_class: type, actor_kwargs: dict, device) -> nn.Module:
    """An actor with tanh hidden layers and xavier-normal x 0.1 output layers (the official METRA policy)."""
    actor = actor_class(**{**actor_kwargs, "activation_fn": nn.Tanh}).to(device)
    for head in (actor.mu, actor.log_std):
        nn.init.xavier_normal_(head.weight, gain=0.1)
        nn.init.zeros_(head.bias)
    return actor


class QNetwork(nn.Module):
    """One Q head of :class:`FeaturesExtractorPerQCritic`: its own features extractor, then an MLP on
    ``[features, action]`` to one value.

    :param features_extractor: the head's own extractor (e.g. a pixel CNN).
    :param net: the MLP, from ``features_dim + action_dim`` inputs to 1.
    """

    def __init__(self, features_extractor: BaseFeaturesExtractor, net: nn.Module) -> None:
        super().__init__()
        self.features_extractor = features_extractor
        self.net = net

    def forward(self, preprocessed_obs: Any, actions: th.Tensor) -> th.Tensor:
        return self.net(th.cat([self.features_extractor(preprocessed_obs), actions], dim=1))


class FeaturesExtractorPerQCritic(ContinuousCritic):
    """Twin (or ``n_critics``) Q functions in which every head owns its features extractor, as in the official
    pixel METRA agent, where Q1 and Q2 each have their own CNN. SB3's :class:`ContinuousCritic` feeds all its heads
    from one extractor, so the critics' loss trains one CNN on both heads' errors; here Q1's loss reaches only Q1's
    encoder and Q2's only Q2's.

    ``q_networks[i]`` (registered as ``qf{i}``) is a :class:`QNetwork`; the critic itself has no
    ``features_extractor`` (None). The observation is preprocessed once (SB3's ``preprocess_obs``: images to
    float / 255) and handed to every head.

    :param observation_space: the observation space.
    :param action_space: the (Box) action space.
    :param net_arch: hidden widths of each head's MLP.
    :param make_features_extractor: builds one new features extractor (called ``n_critics`` times).
    :param activation_fn: of the MLPs' hidden layers.
    :param normalize_images: divide image observations by 255 (SB3's ``preprocess_obs``).
    :param n_critics: the number of Q heads.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Box, net_arch: list[int],
                 make_features_extractor: Callable[[], BaseFeaturesExtractor],
                 activation_fn: type[nn.Module] = nn.ReLU, normalize_images: bool = True, n_critics: int = 2) -> None:
        # BaseModel's constructor, not ContinuousCritic's: that one builds MLPs around one shared extractor.
        BaseModel.__init__(self, observation_space, action_space, features_extractor=None,
                           normalize_images=normalize_images)
        action_dim = get_action_dim(self.action_space)
        self.share_features_extractor = False
        self.n_critics = n_critics
        self.q_networks: list[nn.Module] = []
        for idx in range(n_critics):
            extractor = make_features_extractor()
            net = nn.Sequential(*create_mlp(extractor.features_dim + action_dim, 1, net_arch, activation_fn))
            q_net = QNetwork(extractor, net)
            self.add_module(f"qf{idx}", q_net)
            self.q_networks.append(q_net)

    def _preprocess(self, obs: Any) -> Any:
        return preprocess_obs(obs, self.observation_space, normalize_images=self.normalize_images)

    def forward(self, obs: Any, actions: th.Tensor) -> tuple[th.Tensor, ...]:
        preprocessed = self._preprocess(obs)
        return tuple(q_net(preprocessed, actions) for q_net in self.q_networks)

    def q1_forward(self, obs: Any, actions: th.Tensor) -> th.Tensor:
        """The first head's value, its encoder out of the graph (as SB3's ``q1_forward``, used by TD3's actor)."""
        q_net = self.q_networks[0]
        with th.no_grad():
            features = q_net.features_extractor(self._preprocess(obs))
        return q_net.net(th.cat([features, actions], dim=1))


class SkillSACPolicy(SACPolicy):
    """SAC policy whose actor uses tanh hidden activations and xavier-normal x 0.1 output layers, as the official
    METRA policy does; the critics keep ``activation_fn`` (ReLU by default, also as there).

    Observations are the normalised environment observation with the skill appended, or a Dict of pixels and the
    skill with a CNN features extractor. With ``share_features_extractor=False`` (SAC's default) the actor has its
    own extractor; ``features_extractor_per_q=True`` also gives every Q head its own
    (:class:`FeaturesExtractorPerQCritic`), as the official pixel agent does: four encoders with phi's.

    :param features_extractor_per_q: one features extractor per Q head instead of one for the critic's heads.
    Other parameters are SB3's :class:`SACPolicy`'s.
    """

    def __init__(self, *args, activation_fn: type[nn.Module] = nn.ReLU, features_extractor_per_q: bool = False,
                 **kwargs) -> None:
        if features_extractor_per_q and kwargs.get("share_features_extractor", False):
            raise ValueError("features_extractor_per_q=True gives every Q head its own features extractor; it cannot "
                             "also share the actor's (share_features_extractor=True): set one of them to False")
        self.features_extractor_per_q = features_extractor_per_q  # read by make_critic, which the super call runs
        super().__init__(*args, activation_fn=activation_fn, **kwargs)

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> Actor:
        return _skill_actor(Actor, self._update_features_extractor(self.actor_kwargs, features_extractor), self.device)

    def make_critic(self, features_extractor: BaseFeaturesExtractor | None = None) -> ContinuousCritic:
        if not self.features_extractor_per_q:
            return super().make_critic(features_extractor)
        kwargs = {key: value for key, value in self.critic_kwargs.items() if key != "share_features_extractor"}
        return FeaturesExtractorPerQCritic(**kwargs, make_features_extractor=self.make_features_extractor).to(
            self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "features_extractor_per_q": self.features_extractor_per_q}


class SkillTQCPolicy(TQCPolicy):
    """TQC's policy with the same skill actor as :class:`SkillSACPolicy` (its quantile critics keep ReLU), so that
    a TQC run exports to the same skill checkpoint."""

    def make_actor(self, features_extractor: BaseFeaturesExtractor | None = None) -> TQCActor:
        return _skill_actor(TQCActor, self._update_features_extractor(self.actor_kwargs, features_extractor),
                            self.device)
