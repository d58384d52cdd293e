"""Disagreement (Plan2Explore-style): its learner (an ensemble of forward models, the variance of their predictions as
reward) and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.disagreement.disagreement import DISAGREEMENT, DISAGREEMENTLearner

__all__ = ["DISAGREEMENT", "DISAGREEMENTLearner"]
