"""ICM: its learner (forward and inverse models, the curiosity reward) and the algorithm on SAC (the sb3-contrib
layout)."""

from pretrain.algorithms.icm.icm import ICM, ICMLearner

__all__ = ["ICM", "ICMLearner"]
