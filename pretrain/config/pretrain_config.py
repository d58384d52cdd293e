"""The configuration of a pretraining run: every key, its default and its checks. The bottom layer of ``pretrain``:
it imports no torch and nothing of ``pretrain`` but the registry of algorithms (:mod:`pretrain.config.registry`).

:class:`PretrainConfig` holds the keys every algorithm shares, written out here, and the keys of each algorithm
alone, taken from its registry row. The algorithm classes (``METRA``, ``LSD``, ...) take their defaults from it:
it is the one source of defaults.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metra_gym.envs.normalization import PRESET_OF_ENV, PRESETS
from metra_gym.registration import EPISODE_STEPS
from pretrain.config.registry import BACKBONES, INITS, REGISTRY


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says what to change."""


# Choices. The algorithms, backbones and initialisations are the registry's.
ALGORITHMS = tuple(REGISTRY)
COLLECTORS = ("sequential", "overlapped")
FITTED = "fitted"  # normalizer: fitted: mean and std of random rollouts at the start of a run (normalizer_stats)
# normalizer: auto: METRA's preset of the environment when it has one (PRESET_OF_ENV: metra/Ant-v0, metra/HalfCheetah-v0),
# else none; a configuration resolves it when it is made, so that its config.yaml names the normaliser it used.
AUTO = "auto"
NORMALIZERS = ("none", FITTED, *PRESETS)
MAX_ENVS = 256  # more environments in one process than this is a typo, not a plan
# The keys only one algorithm reads (the registry's). Every other key (networks, SAC, environment, schedule) is
# shared; every algorithm's networks take the phi width and the networks' learning rate.
ALGORITHM_KEYS: dict[str, tuple[str, ...]] = {algo: entry.config_keys for algo, entry in REGISTRY.items()}
# Skill spaces that an algorithm's own paper fixes (the registry's). The bundled configs set METRA's skill_dim and
# discrete_skills for their environment, so a config switched to one of these algorithms by an override takes its
# skill space instead, unless the overrides give skill_dim or discrete_skills too (CIC: 64 continuous skills).
ALGORITHM_SKILL_SPACES: dict[str, dict[str, Any]] = {algo: entry.skill_space for algo, entry in REGISTRY.items()
                                                     if entry.skill_space}


def validate_skill_spec(skill_dim: int, discrete: bool) -> None:
    """Raise a clear ``ValueError`` for a skill space no algorithm can use (0: no skill, an exploration method's;
    which algorithm takes which is :func:`check_skill_space`'s)."""
    if not isinstance(skill_dim, (int, np.integer)) or isinstance(skill_dim, bool) or skill_dim < 0:
        raise ValueError(f"skill_dim must be an integer >= 1 (0: no skill, for the exploration methods), got "
                         f"{skill_dim!r}")
    if discrete and skill_dim < 2:
        raise ValueError(
            "discrete skills need skill_dim >= 2: with one skill the zero-centred reward is 0/0; "
            "use skill_dim >= 2 or continuous skills"
        )


def check_skill_space(algo: str, skill_dim: int) -> None:
    """Raise a clear ``ValueError`` when ``skill_dim`` does not fit ``algo``: an exploration method takes no skill
    (0), a skill-discovery method at least one dimension."""
    if REGISTRY[algo].skills and skill_dim == 0:
        raise ValueError(f"algo {algo} learns skills: skill_dim must be >= 1, got 0 (0 is for the exploration methods "
                         f"{', '.join(name for name, entry in REGISTRY.items() if not entry.skills)})")
    if not REGISTRY[algo].skills and skill_dim != 0:
        raise ValueError(f"algo {algo} is an exploration method without skills (its policy is pi(a | s)): skill_dim "
                         f"must be 0, got {skill_dim}; remove skill_dim")


def default_normalizer(env_id: Any) -> str:
    """What ``normalizer: auto`` is for ``env_id``: METRA's preset of that environment, else ``none``."""
    return PRESET_OF_ENV.get(env_id, "none") if isinstance(env_id, str) else "none"


def key_owner(key: str) -> str | None:
    """The algorithm that alone reads config key ``key`` (None: a shared key)."""
    return next((algo for algo, entry in REGISTRY.items() if key in entry.keys), None)


@dataclass
class SharedConfig:
    """The keys every algorithm shares (networks, backbone, environment, schedule). Defaults are the METRA paper's
    values for state Ant."""

    algo: str = "metra"
    backbone: str = "sac"                  # off-policy RL: sac (the paper's), crossq or tqc (sb3-contrib)
    env_id: str = "metra/Ant-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    normalizer: str = AUTO                 # none, fitted, a preset (ant, half_cheetah), or auto (the env's preset)
    normalizer_stats: dict[str, list[float]] | None = None  # normalizer: fitted: {mean, std}, written at the start
    # normalizer: fitted: the smallest std a dimension is divided by. null: dimensions that random actions leave
    # (almost) constant are left unscaled. A number (Kitchen's object joints, which random actions move by 1e-4,
    # take 0.01): each std is raised to it, so such a dimension is amplified at most 1/normalizer_min_std times.
    normalizer_min_std: float | None = None
    # The agent's position for the coverage metrics: observation indices ([0, 1]) or info keys ([x_position,
    # y_position]); null: info["coordinates"] when the environment gives it, else no coverage metrics.
    coordinates: list[int] | list[str] | None = None
    skill_dim: int = 2
    discrete_skills: bool = False
    n_envs: int = 8
    episode_steps: int = EPISODE_STEPS
    gradient_steps: int = 50
    epochs: int = 2000
    net_width: int = 256                   # hidden units of every network (paper: 1024)...
    net_layers: int = 2
    critic_width: int | None = None        # ... unless the critics' width is given (null: net_width)
    phi_width: int | None = None           # ... or phi's, and the other learners' networks (null: net_width)
    encoder_channels: list[int] | None = None  # pixels: channels of the CNN's 4 convolutions (null: 48-96-192-384)
    learning_rate: float = 1e-4            # Adam, networks: policy, critics, phi
    alpha_learning_rate: float = 1e-4      # Adam, log alpha
    init: str = "torch"                    # "official": xavier-normal weights, zero biases
    random_warmup: bool = True             # uniform random actions until learning_starts (SB3); False: policy
    collector: str = "sequential"          # "overlapped": collect the next epoch in a worker while training
    collector_workers: int = 1             # worker processes of the overlapped collector (split n_envs)
    batch_size: int = 256
    buffer_size: int = 1_000_000
    learning_starts: int = 10_000
    gamma: float = 0.99
    tau: float = 0.005
    alpha_init: float = 0.01
    learn_alpha: bool = True
    target_entropy: float | None = None
    timeout_done: bool = True
    eval_every: int = 100
    eval_skills: int = 48
    save_every: int = 50
    snapshot_every: int = 0                # epochs between skill snapshots in RUN_DIR/snapshots (0: none)
    save_replay_buffer: bool = True
    seed: int = 0
    torch_threads: int = 2
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.normalizer == AUTO:
            self.normalizer = default_normalizer(self.env_id)

    @property
    def steps_per_epoch(self) -> int:
        return self.n_envs * self.episode_steps

    @property
    def hidden(self) -> list[int]:
        """Hidden layers of the actor."""
        return [self.net_width] * self.net_layers

    @property
    def critic_hidden(self) -> list[int]:
        return [self.critic_width or self.net_width] * self.net_layers

    @property
    def phi_hidden(self) -> list[int]:
        return [self.phi_width or self.net_width] * self.net_layers

    def validate(self) -> PretrainConfig:
        """Raise one :class:`ConfigError` for the first value that cannot be meant; return self otherwise."""
        if not (isinstance(self.env_id, str) and self.env_id.strip()):
            raise ConfigError(f"env_id must be a Gymnasium environment id (e.g. metra/Ant-v0, or "
                              f"package.module:Env-v0), got {self.env_id!r}")
        try:
            validate_skill_spec(self.skill_dim, self.discrete_skills)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        for name, choices in (("algo", tuple(REGISTRY)), ("backbone", BACKBONES), ("init", INITS),
                              ("collector", COLLECTORS), ("normalizer", NORMALIZERS)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")
        entry = REGISTRY[self.algo]
        try:
            check_skill_space(self.algo, self.skill_dim)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        lowest = {name: 1 for name in ("n_envs", "episode_steps", "gradient_steps", "epochs", "net_width", "net_layers",
                                       "batch_size", "buffer_size", "eval_every", "eval_skills", "save_every",
                                       "torch_threads", "collector_workers")}
        lowest.update({name: int(key.low) for name, key in entry.keys.items()
                       if key.low is not None and type(key.default) is int})
        for name, low in lowest.items():
            if getattr(self, name) < low:
                raise ConfigError(f"{name} must be >= {low}, got {getattr(self, name)}")
        for name in ("critic_width", "phi_width"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1 or null (net_width), got {getattr(self, name)}")
        for name in ("n_envs", "eval_skills"):
            if getattr(self, name) > MAX_ENVS:
                raise ConfigError(f"{name} must be <= {MAX_ENVS} (environments in one process), got {getattr(self, name)}")
        if self.collector == "overlapped" and self.n_envs % self.collector_workers:
            raise ConfigError(f"n_envs ({self.n_envs}) must be a multiple of collector_workers "
                              f"({self.collector_workers}): each worker steps the same number of environments")
        if not 0 <= self.seed < 2**32:  # numpy's and torch's seeds
            raise ConfigError(f"seed must be an integer in [0, 2**32 - 1], got {self.seed}")
        if self.snapshot_every < 0:
            raise ConfigError(f"snapshot_every must be >= 0 (0: no snapshots), got {self.snapshot_every}")
        for name, (choices, meaning) in entry.choices.items():
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)} ({meaning}), got {getattr(self, name)!r}")
        if self.learning_starts < 0:
            raise ConfigError(f"learning_starts must be >= 0, got {self.learning_starts}")
        if self.buffer_size < max(self.batch_size, self.steps_per_epoch):
            raise ConfigError(f"buffer_size must hold at least one epoch ({self.steps_per_epoch} transitions) and one "
                              f"batch ({self.batch_size}), got {self.buffer_size}")
        # (name, lowest, highest, lowest allowed, highest allowed); NaN fails every comparison.
        ranges = [("learning_rate", 0, None, False, None), ("alpha_learning_rate", 0, None, False, None),
                  ("alpha_init", 0, None, False, None), ("gamma", 0, 1, False, True), ("tau", 0, 1, False, True),
                  *((name, key.low, None, key.low_ok, None) for name, key in entry.keys.items()
                    if key.low is not None and isinstance(key.default, float))]
        for name, low, high, low_ok, high_ok in ranges:
            value = getattr(self, name)
            above = value >= low if low_ok else value > low
            below = high is None or (value <= high if high_ok else value < high)
            if not (above and below and math.isfinite(value)):
                bound = f"{'[' if low_ok else '('}{low}, {high if high is not None else 'inf'}{']' if high_ok else ')'}"
                raise ConfigError(f"{name} must be a finite number in {bound}, got {value}")
        for check in entry.checks:
            problem = check(self)
            if problem is not None:
                raise ConfigError(problem)
        if self.backbone == "crossq" and self.tau != SharedConfig.tau:
            raise ConfigError(f"tau ({self.tau}) is the rate of the target networks' updates, and backbone crossq has no "
                              "target networks; remove tau, or choose backbone sac or tqc")
        if self.target_entropy is not None and not math.isfinite(self.target_entropy):
            raise ConfigError(f"target_entropy must be a finite number or null (-|A|/2), got {self.target_entropy}")
        self._validate_environment_keys()
        return self

    def _validate_environment_keys(self) -> None:
        coordinates = self.coordinates
        indices = isinstance(coordinates, list) and all(type(c) is int and c >= 0 for c in coordinates)
        keys = isinstance(coordinates, list) and all(isinstance(c, str) and c for c in coordinates)
        if coordinates is not None and not (coordinates and (indices or keys)):
            raise ConfigError("coordinates must be a list of observation indices (e.g. [0, 1]) or of info keys (e.g. "
                              f"[x_position, y_position]), or null (info['coordinates']); got {coordinates!r}")
        if self.normalizer_min_std is not None:
            if not (math.isfinite(self.normalizer_min_std) and self.normalizer_min_std > 0):
                raise ConfigError(f"normalizer_min_std must be a finite number in (0, inf) or null, got "
                                  f"{self.normalizer_min_std}")
            if self.normalizer != FITTED:
                raise ConfigError(f"normalizer_min_std is read only with normalizer: {FITTED} (normalizer is "
                                  f"{self.normalizer!r}); remove it, or set normalizer: {FITTED}")
        stats = self.normalizer_stats
        if stats is None:
            return
        if self.normalizer != FITTED:
            raise ConfigError(f"normalizer_stats are read only with normalizer: {FITTED} (normalizer is "
                              f"{self.normalizer!r}); remove them, or set normalizer: {FITTED}")
        numbers = isinstance(stats, dict) and set(stats) == {"mean", "std"} and all(
            isinstance(v, list) and v and all(type(x) in (int, float) and math.isfinite(x) for x in v)
            for v in stats.values())
        if not numbers or len(stats["mean"]) != len(stats["std"]) or min(stats["std"]) <= 0:
            raise ConfigError("normalizer_stats must be {mean: [...], std: [...]}: equally long lists of finite "
                              "numbers, std positive; remove them to fit them again")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _algorithm_fields() -> list[tuple[str, type, Any]]:
    """The dataclass fields of every algorithm's own keys, from the registry rows."""
    return [(name, type(key.default), field(default=key.default))
            for entry in REGISTRY.values() for name, key in entry.keys.items()]


PretrainConfig = dataclasses.make_dataclass(
    "PretrainConfig", _algorithm_fields(), bases=(SharedConfig,),
    namespace={"__module__": __name__, "__doc__": """Everything a pretraining run depends on: the shared keys
    (:class:`SharedConfig`; defaults: the METRA paper's values for state Ant) and each algorithm's own keys
    (:data:`ALGORITHM_KEYS`, from its registry row; defaults: its own paper's values, each algorithm's module docstring
    has the table). The skill space of an algorithm whose paper fixes it (:data:`ALGORITHM_SKILL_SPACES`) is taken
    when an override switches a config to it."""})


def build_config(values: dict[str, Any]) -> PretrainConfig:
    """A validated config from a mapping; unknown keys are an error that suggests the closest valid key, and so is
    a key of another algorithm than ``algo`` (see :func:`_check_algorithm_keys`)."""
    names = [f.name for f in dataclasses.fields(PretrainConfig)]
    for key in values:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(names)}"
            raise ConfigError(f"unknown config key {key!r}{hint}")
    try:
        config = PretrainConfig(**values)
    except TypeError as error:
        raise ConfigError(str(error)) from None
    for f in dataclasses.fields(PretrainConfig):
        value = getattr(config, f.name)
        default = getattr(PretrainConfig(), f.name)
        if f.name in ("coordinates", "normalizer_stats"):  # checked by validate()
            continue
        if default is None:  # optional keys: null, or a value of the type the annotation names
            if value is None:
                continue
            if "list" in str(f.type):
                if not (isinstance(value, list) and value and all(type(v) is int and v > 0 for v in value)):
                    raise ConfigError(f"config key {f.name!r} must be a list of positive integers or null, "
                                      f"got {value!r}")
                continue
            expected = float if "float" in str(f.type) else int
        else:
            expected = type(default)
        if expected is float:
            try:  # YAML reads 1e-4 (no dot) as a string
                if isinstance(value, bool):  # float(True) is 1.0, but true is no learning rate
                    raise TypeError
                setattr(config, f.name, float(value))
            except (TypeError, ValueError):
                raise ConfigError(f"config key {f.name!r} must be a number, got {value!r}") from None
        elif value is None and expected in (int, bool, str):  # `--set epochs=` is null
            raise ConfigError(f"config key {f.name!r} must be {expected.__name__}, got nothing (null); give a value "
                              f"or leave the key out (default: {default!r})")
        elif expected in (int, bool, str) and type(value) is not expected:
            raise ConfigError(f"config key {f.name!r} must be {expected.__name__}, got {value!r}")
        elif expected is dict and not isinstance(value, dict):
            raise ConfigError(f"config key {f.name!r} must be a mapping of keyword arguments (e.g. "
                              f"{{obs_type: state}}), got {value!r}")
    _check_algorithm_keys(values, config)
    return config.validate()


def without_other_algorithms(values: dict[str, Any], recorded: dict[str, Any] | None = None) -> dict[str, Any]:
    """``values`` without the keys of algorithms other than its own ``algo``.

    A saved run's config.yaml (and its run state's recorded config) lists every key, the other algorithms' at the
    defaults of the metra-gym that wrote it. They configure nothing of the run, and a later change of their defaults
    must not stop it from resuming, so they are dropped; with ``recorded`` (the config a run state recorded), only
    those equal to it are, and a value edited by hand since is left for :func:`build_config` to refuse.
    """
    algo = values.get("algo", PretrainConfig.algo)
    return {k: v for k, v in values.items()
            if (key_owner(k) or algo) == algo or (recorded is not None and recorded.get(k, v) != v)}


def _check_algorithm_keys(values: dict[str, Any], config: PretrainConfig) -> None:
    """Refuse a key of ``values`` that belongs to another algorithm than ``config.algo``, unless it has its default
    value: a saved run's config.yaml (and a checkpoint's provenance) lists every key, the other algorithms' at their
    defaults, and must build again."""
    if config.algo not in REGISTRY:
        return  # validate() names the choices
    defaults = PretrainConfig()
    for key in values:
        owner = key_owner(key)
        if owner is not None and owner != config.algo and getattr(config, key) != getattr(defaults, key):
            raise ConfigError(f"config key {key!r} is an option of algo {owner}, but algo is {config.algo!r}; "
                              f"remove it, or set algo={owner}")
