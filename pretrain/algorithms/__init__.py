"""Skill-discovery and exploration algorithms as Stable-Baselines3 extensions, one folder each (the sb3-contrib
layout).

An algorithm is a :class:`~pretrain.algorithms.common.skill_learner.SkillLearner` (its networks, their update and
its intrinsic reward) trained beside an off-policy backbone (:mod:`pretrain.algorithms.common.backbones`); its
SB3-shaped class (``METRA``, ``LSD``, ``DIAYN``, ``DADS``, ``CIC``; the exploration methods ``ICM``, ``LBS``,
``RND``, ``APT``, ``DISAGREEMENT`` and ``APS``: :mod:`pretrain.algorithms.common.algorithm`) is what the CLI, the
sweep and a user's script build. An exploration method has no skill (``skill_dim`` 0,
:data:`pretrain.config.NO_SKILLS`): its policy is pi(a | s); APS's task vector is its skill.

Adding one is a folder ``pretrain/algorithms/<name>/`` that exports ``<NAME>`` (the class, which names its skill
learner) plus one row of the registry (:data:`pretrain.config.registry.REGISTRY`), which the configuration reads.
:func:`algorithm_class` finds the class of a row; it loads the folder on first use, so that this module stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from pretrain.config.registry import algorithm_module

if TYPE_CHECKING:
    from pretrain.algorithms.common.algorithm import SkillAlgorithm


def algorithm_class(algo: str, backbone: str = "sac") -> type[SkillAlgorithm]:
    """The SB3 class of ``algo`` on ``backbone``: ``METRA`` for ("metra", "sac"), ``METRACrossQ`` for ("metra",
    "crossq"), ... Each algorithm's module exports its class under the upper-cased name of the algorithm.

    :raises ValueError: for an algorithm or a backbone that has no row.
    """
    return getattr(import_module(algorithm_module(algo)), algo.upper()).on_backbone(backbone)
