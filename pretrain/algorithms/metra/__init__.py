"""METRA: its skill learner (phi and lambda) and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.metra.metra import METRA, METRALearner

__all__ = ["METRA", "METRALearner"]
