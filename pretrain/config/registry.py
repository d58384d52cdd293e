"""The algorithms a configuration may name, one row each, and the backbones and initialisations they run with.

An algorithm is a folder ``pretrain/algorithms/<name>/`` that exports ``<NAME>``, its SB3-shaped class (the class
names its skill learner), plus one row of :data:`REGISTRY`. The row says what the configuration needs to know of it
without importing torch: which learner keywords take the networks' width and learning rate, the config keys that
only this algorithm reads (their defaults, the learner keyword each sets, their allowed values), and the skill
space its paper fixes. The configuration's fields, its checks and the CLI's choices are read from the rows; the
algorithm classes take their defaults from the configuration.

This module stays light (no torch): the configuration and the CLI's start import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The off-policy backbones (pretrain.algorithms.common.backbones: SkillSAC, SkillCrossQ, SkillTQC); sac is the paper's.
BACKBONES = ("sac", "crossq", "tqc")
# Initialisation of the networks: PyTorch's default, or "official" (xavier-normal weights, zero biases).
INITS = ("torch", "official")
# Extra keywords of every Adam optimiser a config builds: fused Adam, faster per step on CPU (benchmarks/README.md,
# "Cheaper gradient steps").
OPTIMIZER_KWARGS: dict[str, Any] = {"fused": True}
# The skill space of an exploration method (ICM, RND, ...): no skill input at all, the policy is pi(a | s).
NO_SKILLS: dict[str, Any] = {"skill_dim": 0, "discrete_skills": False}


@dataclass(frozen=True)
class Key:
    """A config key that only one algorithm reads.

    :param default: its value when a config does not give it (the algorithm's own paper's or reference code's).
    :param keyword: the keyword of the algorithm's skill learner that it sets.
    :param help: what it means (the CLI's and the docs' words).
    :param choices: the values it may take (empty: any value of the default's type).
    :param low: the lowest value it may take (numbers; None: no bound).
    :param low_ok: whether ``low`` itself is allowed.
    """

    default: Any
    keyword: str
    help: str = ""
    choices: tuple[Any, ...] = ()
    low: float | None = None
    low_ok: bool = True


@dataclass(frozen=True)
class AlgorithmEntry:
    """One algorithm of :data:`REGISTRY`.

    :param networks: the learner's keywords of its networks' hidden widths and of their learning rate; every
        algorithm's networks take the config's ``phi_width`` (else ``net_width``) and ``learning_rate``.
    :param keys: config key -> :class:`Key`, the keys only this algorithm reads.
    :param skill_space: the skill space the algorithm's own paper fixes (``skill_dim``, ``discrete_skills``), taken
        when a config is switched to it by an override and by its class built in Python; :data:`NO_SKILLS` for an
        exploration method, whose policy takes no skill.
    :param checks: functions of a config that return what is wrong with it for this algorithm (None: nothing).
    :param module: the module that exports the class (default ``pretrain.algorithms.<name>``).
    """

    networks: tuple[str, str]
    keys: dict[str, Key] = field(default_factory=dict)
    skill_space: dict[str, Any] = field(default_factory=dict)
    checks: tuple[Callable[[Any], str | None], ...] = ()
    module: str | None = None

    @property
    def config_keys(self) -> tuple[str, ...]:
        """The config keys only this algorithm reads."""
        return tuple(self.keys)

    @property
    def skills(self) -> bool:
        """Whether the algorithm learns skills (False: an exploration method, whose policy is pi(a | s))."""
        return self.skill_space != NO_SKILLS

    @property
    def own_keys(self) -> dict[str, str]:
        """Learner keyword -> the config key that sets it."""
        return {key.keyword: name for name, key in self.keys.items()}

    @property
    def learner_defaults(self) -> dict[str, Any]:
        """Learner keyword -> the default of the config key that sets it (the learner's signature takes these)."""
        return {key.keyword: key.default for key in self.keys.values()}

    @property
    def choices(self) -> dict[str, tuple[tuple[Any, ...], str]]:
        """Config key -> (its allowed values, what they mean), for the keys that take one of a few values."""
        return {name: (key.choices, key.help) for name, key in self.keys.items() if key.choices}


def _knn_within_batch(key: str) -> Callable[[Any], str | None]:
    """The check that config key ``key``, the k of a k-NN reward, fits in a minibatch."""

    def check(config: Any) -> str | None:
        if getattr(config, key) > config.batch_size:
            return (f"{key} ({getattr(config, key)}) must be <= batch_size ({config.batch_size}): the k-NN reward "
                    "looks for neighbours within a minibatch")
        return None

    return check


def _latent_dim(config: Any) -> str | None:
    if config.lbs_latent_dim is not None and config.lbs_latent_dim < 1:
        return f"lbs_latent_dim must be >= 1 or null (the last hidden width), got {config.lbs_latent_dim}"
    return None


# name (the config's ``algo``) -> entry; the order is the CLI's and the docs'. Each algorithm's module docstring
# has the table of its own values against its reference code.
REGISTRY: dict[str, AlgorithmEntry] = {
    "metra": AlgorithmEntry(("phi_net_arch", "phi_learning_rate"), {
        "dual_learning_rate": Key(1e-4, "dual_learning_rate", "Adam learning rate of log lambda", low=0, low_ok=False),
        "dual_slack": Key(1e-3, "dual_slack", "eps of the relaxed constraint min(eps, 1 - ||phi(s') - phi(s)||^2)", low=0),
        "dual_lam_init": Key(30.0, "dual_lam_init", "initial lambda", low=0, low_ok=False)}),
    "lsd": AlgorithmEntry(("phi_net_arch", "phi_learning_rate")),
    "diayn": AlgorithmEntry(("discriminator_net_arch", "discriminator_learning_rate"), {
        "diayn_learn_std": Key(True, "learn_std", "continuous skills: learn the std of q(z|s') (official), else 1")}),
    "dads": AlgorithmEntry(("dynamics_net_arch", "dynamics_learning_rate"), {
        "dads_alt_skills": Key(100, "alt_skills", "L, alternative skills per transition in the reward (paper: 100)",
                               low=1),
        "dads_batch_norm": Key(True, "batch_norm", "batch-normalise the skill dynamics' input and target (official)")}),
    "cic": AlgorithmEntry(("cic_net_arch", "cic_learning_rate"), {
        "cic_temperature": Key(0.5, "temperature", "temperature of the contrastive logits (URLB: 0.5)", low=0,
                               low_ok=False),
        "cic_knn_k": Key(16, "knn_k", "neighbours of the k-NN entropy reward (URLB: 16)", low=1),
        "cic_knn_clip": Key(0.0005, "knn_clip", "clip of the normalised k-NN distances (URLB: 0.0005)", low=0),
        "cic_knn_query": Key("next_state", "knn_query", "k-NN distances from g(s'), as in URLB, or from g(s), as in "
                             "the CSF fork", choices=("next_state", "state")),
        "cic_project_skill": Key(True, "project_skill", "project z with an MLP (URLB: yes)")},
        skill_space={"skill_dim": 64, "discrete_skills": False},  # URLB's agent/cic.yaml
        checks=(_knn_within_batch("cic_knn_k"),)),
    # The exploration methods of the paper's comparison, in its order (URLB's; LBS after mastering-urlb). They take
    # no skill (NO_SKILLS), except APS, whose task vector is its skill.
    "icm": AlgorithmEntry(("icm_net_arch", "icm_learning_rate"), {
        "icm_scale": Key(1.0, "icm_scale", "c of the reward log(1 + c ||s' - f(s, a)||) (URLB: 1)", low=0,
                         low_ok=False)},
        skill_space=NO_SKILLS),
    "lbs": AlgorithmEntry(("lbs_net_arch", "lbs_learning_rate"), {
        "lbs_latent_dim": Key(None, "latent_dim", "size of the latent z' (null: the last hidden width, as in the "
                              "model-free port)")},
        skill_space=NO_SKILLS, checks=(_latent_dim,)),
    "rnd": AlgorithmEntry(("rnd_net_arch", "rnd_learning_rate"), {
        "rnd_rep_dim": Key(512, "rnd_rep_dim", "output size of the predictor and the random target (URLB: 512)",
                           low=1),
        "rnd_obs_clip": Key(5.0, "obs_clip", "clip of the batch-standardised observations (URLB: 5)", low=0,
                            low_ok=False),
        "rnd_scale": Key(1.0, "rnd_scale", "scale of the reward (URLB: 1)", low=0, low_ok=False)},
        skill_space=NO_SKILLS),
    "apt": AlgorithmEntry(("icm_net_arch", "icm_learning_rate"), {
        "apt_embedding_dim": Key(512, "embedding_dim", "size of the embedding e(s) (URLB: icm_rep_dim 512)", low=1),
        "apt_knn_k": Key(12, "knn_k", "neighbours of the k-NN entropy reward (URLB: 12)", low=1),
        "apt_knn_clip": Key(0.0, "knn_clip", "clip of the k-NN distances (URLB's icm_apt: 0)", low=0),
        "apt_knn_rms": Key(False, "knn_rms", "divide the k-NN distances by their running mean (URLB's icm_apt: no)")},
        skill_space=NO_SKILLS, checks=(_knn_within_batch("apt_knn_k"),)),
    "disagreement": AlgorithmEntry(("ensemble_net_arch", "ensemble_learning_rate"), {
        "disagreement_n_models": Key(5, "n_models", "forward models of the ensemble (URLB: 5)", low=2)},
        skill_space=NO_SKILLS),
    "aps": AlgorithmEntry(("aps_net_arch", "aps_learning_rate"), {
        "aps_knn_k": Key(12, "knn_k", "neighbours of the k-NN entropy reward (URLB: 12)", low=1),
        "aps_knn_clip": Key(0.0001, "knn_clip", "clip of the normalised k-NN distances (URLB: 0.0001)", low=0),
        "aps_knn_rms": Key(True, "knn_rms", "divide the k-NN distances by their running mean (URLB: yes)")},
        skill_space={"skill_dim": 10, "discrete_skills": False},  # URLB's agent/aps.yaml: sf_dim 10, unit vectors
        checks=(_knn_within_batch("aps_knn_k"),)),
}


def entry(algo: str) -> AlgorithmEntry:
    """The row of ``algo``, with a clear error for a name that has none."""
    if algo not in REGISTRY:
        raise ValueError(f"algo must be one of {', '.join(REGISTRY)}, got {algo!r}")
    return REGISTRY[algo]


def algorithm_module(algo: str) -> str:
    """The module that exports the class of ``algo`` (under its upper-cased name)."""
    return entry(algo).module or f"pretrain.algorithms.{algo}"
