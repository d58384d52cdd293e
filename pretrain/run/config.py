"""Training configuration: one YAML file per environment, overridable from the command line."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pretrain.algorithms.common.skills import validate_skill_spec


class ConfigError(ValueError):
    """A configuration that cannot be used; the message says what to change."""


@dataclass
class PretrainConfig:
    """Everything a METRA pretraining run depends on. Defaults are the paper's values for state Ant."""

    env_id: str = "metra/Ant-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    normalizer: str = "ant"
    skill_dim: int = 2
    discrete_skills: bool = False
    n_envs: int = 8
    episode_steps: int = 200
    gradient_steps: int = 50
    epochs: int = 2000
    net_width: int = 256
    net_layers: int = 2
    learning_rate: float = 1e-4            # Adam, networks: policy, critics, phi
    dual_learning_rate: float = 1e-4       # Adam, log lambda
    alpha_learning_rate: float = 1e-4      # Adam, log alpha
    init: str = "torch"                    # "official": xavier-normal weights, zero biases
    random_warmup: bool = True             # uniform random actions until learning_starts (SB3); False: policy
    batch_size: int = 256
    buffer_size: int = 1_000_000
    learning_starts: int = 10_000
    gamma: float = 0.99
    tau: float = 0.005
    alpha_init: float = 0.01
    learn_alpha: bool = True
    target_entropy: float | None = None
    dual_slack: float = 1e-3
    dual_lam_init: float = 30.0
    timeout_done: bool = True
    eval_every: int = 100
    eval_skills: int = 48
    save_every: int = 50
    save_replay_buffer: bool = True
    seed: int = 0
    torch_threads: int = 2
    device: str = "cpu"

    @property
    def steps_per_epoch(self) -> int:
        return self.n_envs * self.episode_steps

    @property
    def hidden(self) -> list[int]:
        return [self.net_width] * self.net_layers

    def validate(self) -> PretrainConfig:
        try:
            validate_skill_spec(self.skill_dim, self.discrete_skills)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        positive = ["n_envs", "episode_steps", "gradient_steps", "epochs", "net_width", "net_layers", "batch_size",
                    "buffer_size", "eval_every", "eval_skills", "save_every", "torch_threads"]
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def builtin_configs() -> list[str]:
    """Names of the bundled configs (``ant``, ``half_cheetah``, ``point_mass``)."""
    return sorted(p.name[:-5] for p in resources.files("pretrain.run.configs").iterdir() if p.name.endswith(".yaml"))


def _read_yaml(name_or_path: str) -> dict[str, Any]:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        text = path.read_text()
    elif name_or_path in builtin_configs():
        text = resources.files("pretrain.run.configs").joinpath(f"{name_or_path}.yaml").read_text()
    else:
        raise ConfigError(f"unknown config {name_or_path!r}: give a YAML file or one of {builtin_configs()}")
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {name_or_path!r} must be a mapping of keys to values")
    return data


def _parse_override(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like key=value, e.g. epochs=100")
    key, value = item.split("=", 1)
    return key.strip(), yaml.safe_load(value)


def build_config(values: dict[str, Any]) -> PretrainConfig:
    """A validated config from a mapping; unknown keys are an error that suggests the closest valid key."""
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
        expected = type(getattr(PretrainConfig(), f.name))
        if expected is float or f.name == "target_entropy":
            if value is None and f.name == "target_entropy":
                continue
            try:  # YAML reads 1e-4 (no dot) as a string
                setattr(config, f.name, float(value))
            except (TypeError, ValueError):
                raise ConfigError(f"config key {f.name!r} must be a number, got {value!r}") from None
        elif value is not None and expected in (int, bool, str) and type(value) is not expected:
            raise ConfigError(f"config key {f.name!r} must be {expected.__name__}, got {value!r}")
    return config.validate()


def load_config(name_or_path: str, overrides: list[str] | None = None) -> PretrainConfig:
    """Read a bundled or file config and apply ``key=value`` overrides (values parsed as YAML)."""
    values = _read_yaml(name_or_path)
    values.update(dict(_parse_override(item) for item in overrides or []))
    return build_config(values)
