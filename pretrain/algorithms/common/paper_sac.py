"""SAC with the settings that the METRA paper trains METRA and its baselines with, for the algorithms' SB3-style
convenience classes (``LSD``, ``DIAYN``, ``DADS``, ``CIC``; ``METRA`` spells the same defaults out itself)."""

from __future__ import annotations

from typing import Any, ClassVar

from stable_baselines3.common.type_aliases import GymEnv

from metra_gym.registration import EPISODE_STEPS
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.policies import SkillSACPolicy


class PaperSkillSAC(SkillSAC):
    """:class:`SkillSAC` with the official METRA repository's SAC settings, which its baselines share (same
    ``tests/main.py``): Adam lr 1e-4, alpha initially 0.01 and learned, learning after 10,000 transitions, 50
    gradient steps per 200-step rollout, policy and critics 2 x 1024. A subclass passes its
    ``skill_learner_class`` and ``skill_learner_kwargs``.

    Parameters: :class:`~pretrain.algorithms.common.backbones.SkillDiscoveryMixin` and SB3's SAC.
    """

    policy_aliases: ClassVar[dict[str, type]] = {"MlpPolicy": SkillSACPolicy}

    def __init__(self, policy: str | type[SkillSACPolicy], env: GymEnv | str, skill_dim: int = 2,
                 discrete_skills: bool = False, learning_rate: float = 1e-4, learning_starts: int = 10_000,
                 train_freq: int | tuple[int, str] = (EPISODE_STEPS, "step"), gradient_steps: int = 50,
                 ent_coef: str | float = "auto_0.01", policy_kwargs: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(policy, env, skill_dim=skill_dim, discrete_skills=discrete_skills,
                         learning_rate=learning_rate, learning_starts=learning_starts, train_freq=train_freq,
                         gradient_steps=gradient_steps, ent_coef=ent_coef,
                         policy_kwargs={"net_arch": [1024, 1024]} if policy_kwargs is None else policy_kwargs, **kwargs)
