"""Skill-discovery algorithms as Stable-Baselines3 extensions, one folder each (the sb3-contrib layout).

An algorithm is a :class:`~pretrain.algorithms.common.skill_learner.SkillLearner` (its networks, their update and
its intrinsic reward) trained beside an off-policy backbone (:mod:`pretrain.algorithms.common.backbones`); its
SB3-shaped class (``METRA``, ``LSD``, ``DIAYN``, ``DADS``, ``CIC``: :mod:`pretrain.algorithms.common.algorithm`)
is what the CLI, the sweep and a user's script build.

:data:`REGISTRY` is the one table of the algorithms: adding one is a folder ``pretrain/algorithms/<name>/`` that
exports ``<NAME>`` (the class) and ``<NAME>Learner`` (its skill learner), plus one row here. The run configuration
(:mod:`pretrain.run.config`) reads its choices and each algorithm's own keys from it. :func:`skill_learner` maps a
configuration to the learner and its hyperparameters; :func:`algorithm_class` to the class; :func:`skill_prior` to
the prior of its continuous skills.

This module stays light (no torch): the configuration and the CLI import it; the classes load on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pretrain.algorithms.common.algorithm import SkillAlgorithm
    from pretrain.algorithms.common.skill_learner import SkillLearner

# The off-policy backbones (pretrain.algorithms.common.backbones: SkillSAC, SkillCrossQ, SkillTQC); sac is the paper's.
BACKBONES = ("sac", "crossq", "tqc")
# Initialisation of the networks: PyTorch's default, or "official" (xavier-normal weights, zero biases).
INITS = ("torch", "official")
# Extra keywords of every Adam optimiser a config builds: fused Adam, faster per step on CPU (benchmarks/README.md,
# "Cheaper gradient steps").
OPTIMIZER_KWARGS: dict[str, Any] = {"fused": True}


@dataclass(frozen=True)
class AlgorithmEntry:
    """One algorithm of :data:`REGISTRY`: how its skill learner takes the run configuration.

    :param networks: the learner's keywords of its networks' hidden widths and of their learning rate; every
        algorithm's networks take the config's ``phi_width`` (else ``net_width``) and ``learning_rate``.
    :param own_keys: learner keyword -> the config key of this algorithm alone that sets it (the config's
        :data:`~pretrain.run.config.ALGORITHM_KEYS`).
    :param choices: config key of ``own_keys`` -> (its allowed values, what they mean), checked by the config.
    :param skill_space: the skill space the algorithm's own paper fixes (``skill_dim``, ``discrete_skills``),
        taken when a config is switched to it by an override (the config's ``ALGORITHM_SKILL_SPACES``).
    """

    networks: tuple[str, str]
    own_keys: dict[str, str] = field(default_factory=dict)
    choices: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    skill_space: dict[str, Any] = field(default_factory=dict)

    @property
    def config_keys(self) -> tuple[str, ...]:
        """The config keys only this algorithm reads."""
        return tuple(self.own_keys.values())


# name (the config's ``algo``) -> entry; the order is the CLI's and the docs'.
REGISTRY: dict[str, AlgorithmEntry] = {
    "metra": AlgorithmEntry(("phi_net_arch", "phi_learning_rate"),
                            {"dual_learning_rate": "dual_learning_rate", "dual_slack": "dual_slack",
                             "dual_lam_init": "dual_lam_init"}),
    "lsd": AlgorithmEntry(("phi_net_arch", "phi_learning_rate")),
    "diayn": AlgorithmEntry(("discriminator_net_arch", "discriminator_learning_rate"),
                            {"learn_std": "diayn_learn_std"}),
    "dads": AlgorithmEntry(("dynamics_net_arch", "dynamics_learning_rate"),
                           {"alt_skills": "dads_alt_skills", "batch_norm": "dads_batch_norm"}),
    "cic": AlgorithmEntry(("cic_net_arch", "cic_learning_rate"),
                          {"temperature": "cic_temperature", "knn_k": "cic_knn_k", "knn_clip": "cic_knn_clip",
                           "knn_query": "cic_knn_query", "project_skill": "cic_project_skill"},
                          choices={"cic_knn_query": (("next_state", "state"), "k-NN distances from g(s'), as in "
                                                     "URLB, or from g(s), as in the CSF fork")},
                          skill_space={"skill_dim": 64, "discrete_skills": False}),  # URLB's agent/cic.yaml
}


def _entry(algo: str) -> AlgorithmEntry:
    if algo not in REGISTRY:
        raise ValueError(f"algo must be one of {', '.join(REGISTRY)}, got {algo!r}")
    return REGISTRY[algo]


def algorithm_class(algo: str, backbone: str = "sac") -> type[SkillAlgorithm]:
    """The SB3 class of ``algo`` on ``backbone``: ``METRA`` for ("metra", "sac"), ``METRACrossQ`` for ("metra",
    "crossq"), ... Each algorithm's folder exports its class under the upper-cased name of the algorithm."""
    _entry(algo)
    return getattr(import_module(f"pretrain.algorithms.{algo}"), algo.upper()).on_backbone(backbone)


def skill_learner(config) -> tuple[type[SkillLearner], dict[str, Any]]:
    """The skill learner of a configuration's ``algo`` (a PretrainConfig) and its keyword arguments."""
    entry = _entry(config.algo)
    widths, learning_rate = entry.networks
    kwargs = {widths: config.phi_hidden, learning_rate: config.learning_rate,
              **{keyword: getattr(config, key) for keyword, key in entry.own_keys.items()},
              "optimizer_kwargs": dict(OPTIMIZER_KWARGS)}
    return getattr(import_module(f"pretrain.algorithms.{config.algo}"), f"{config.algo.upper()}Learner"), kwargs


def skill_prior(config) -> str:
    """The prior of a configuration's continuous skills: its algorithm's (:attr:`SkillLearner.skill_prior`)."""
    return skill_learner(config)[0].skill_prior
