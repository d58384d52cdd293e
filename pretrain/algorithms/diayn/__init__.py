"""DIAYN: its skill learner (the discriminator q(z|s')) and the algorithm on SAC (the sb3-contrib layout)."""

from pretrain.algorithms.diayn.diayn import DIAYN, DIAYNLearner

__all__ = ["DIAYN", "DIAYNLearner"]
