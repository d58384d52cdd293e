"""APS: its learner (successor features of states, the entropy and successor-feature rewards), its successor-feature
critic, and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.aps.aps import APS, APSLearner
from pretrain.algorithms.aps.policies import SuccessorFeatureCritic, SuccessorFeatureSACPolicy

__all__ = ["APS", "APSLearner", "SuccessorFeatureCritic", "SuccessorFeatureSACPolicy"]
