"""RND: its learner (a predictor of a fixed random network, the novelty reward) and the algorithm on SAC (the
sb3-contrib layout)."""

from pretrain.algorithms.rnd.rnd import RND, RNDLearner

__all__ = ["RND", "RNDLearner"]
