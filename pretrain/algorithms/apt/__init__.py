"""APT: its learner (an ICM-trained embedding, the k-NN particle entropy reward) and the algorithm on SAC (the
sb3-contrib layout)."""

from pretrain.algorithms.apt.apt import APT, APTLearner

__all__ = ["APT", "APTLearner"]
