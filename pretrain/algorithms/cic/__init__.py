"""CIC: its skill learner (contrastive encoder and k-NN entropy reward) and the algorithm on SAC (the sb3-contrib
layout)."""

from pretrain.algorithms.cic.cic import CIC, CICLearner

__all__ = ["CIC", "CICLearner"]
