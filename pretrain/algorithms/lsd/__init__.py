"""LSD: its skill learner (a spectrally normalised phi) and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.lsd.lsd import LSD, LSDLearner

__all__ = ["LSD", "LSDLearner"]
