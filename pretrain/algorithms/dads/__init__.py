"""DADS: its skill learner (the skill-dynamics model) and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.dads.dads import DADS, DADSLearner

__all__ = ["DADS", "DADSLearner"]
