"""METRA on Stable-Baselines3 SAC, with its policies beside it (the sb3-contrib layout)."""

from pretrain.algorithms.metra.metra import METRA, NonFiniteLossError
from pretrain.algorithms.metra.policies import METRAPolicy, MlpPolicy

__all__ = ["METRA", "METRAPolicy", "MlpPolicy", "NonFiniteLossError"]
