"""LBS: its learner (a latent dynamics model, the latent Bayesian surprise as reward) and the algorithm on SAC (the
sb3-contrib layout)."""

from pretrain.algorithms.lbs.lbs import LBS, LBSLearner

__all__ = ["LBS", "LBSLearner"]
