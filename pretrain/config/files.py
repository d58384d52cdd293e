"""Configuration files: the bundled ones (``pretrain/config/bundled/*.yaml``, one per environment) and the user's,
with ``key=value`` overrides from the command line."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pretrain.config.pretrain_config import (
    ALGORITHM_KEYS,
    ALGORITHM_SKILL_SPACES,
    ConfigError,
    PretrainConfig,
    build_config,
)

BUNDLED = "pretrain.config.bundled"


def builtin_configs() -> list[str]:
    """Names of the bundled configs (``ant``, ``half_cheetah``, ``point_mass``, ...)."""
    return sorted(p.name[:-5] for p in resources.files(BUNDLED).iterdir() if p.name.endswith(".yaml"))


def read_config_file(name_or_path: str) -> dict[str, Any]:
    """The mapping of a bundled config's name or of a YAML file, with one clear error for anything else."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if path.is_dir():
            raise ConfigError(f"config {path} is a folder; give a YAML file (e.g. {path / 'my_config.yaml'}) or one "
                              f"of {builtin_configs()}")
        if not path.exists():
            raise ConfigError(f"config file {path} does not exist")
        try:  # a regular file, or what a shell's <(...) gives
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
            raise ConfigError(f"cannot read config {path} ({reason}); give a readable YAML file") from None
    elif name_or_path in builtin_configs():
        text = resources.files(BUNDLED).joinpath(f"{name_or_path}.yaml").read_text()
    else:
        raise ConfigError(f"unknown config {name_or_path!r}: give a YAML file or one of {builtin_configs()}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"config {name_or_path!r} is not valid YAML: {str(error).splitlines()[0]} "
                          f"({getattr(error, 'problem_mark', '')})".replace(" ()", "")) from None
    if data is None:
        raise ConfigError(f"config {name_or_path!r} is empty; give a YAML mapping of config keys to values (at least "
                          f"env_id), or one of {builtin_configs()}")
    if not isinstance(data, dict):
        raise ConfigError(f"config {name_or_path!r} must be a mapping of keys to values")
    return data


def parse_override(item: str) -> tuple[str, Any]:
    """``key=value`` -> (key, value parsed as YAML)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like key=value, e.g. epochs=100")
    key, value = item.split("=", 1)
    try:
        return key.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        raise ConfigError(f"override {item!r}: the value is not valid YAML; quote it") from None


def load_config(name_or_path: str, overrides: list[str] | None = None) -> PretrainConfig:
    """Read a bundled or file config and apply ``key=value`` overrides (values parsed as YAML).

    A config file's algorithm-specific keys configure the file's own algorithm (its ``algo``, METRA when it names
    none, as the bundled ones do). When an override switches ``algo`` they are left behind, so that
    ``--config ant --set algo=diayn`` runs DIAYN with its own defaults, and ``--set algo=cic`` CIC with its own
    skill space (:data:`ALGORITHM_SKILL_SPACES`: 64 continuous skills) unless ``skill_dim`` or ``discrete_skills``
    is given as an override too; a key of another algorithm given as an override, or in a file for another
    algorithm than the file's own, is still an error.

    :raises ConfigError: one line saying what is wrong and what to do.
    """
    values = read_config_file(name_or_path)
    overrides_given = dict(parse_override(item) for item in overrides or [])
    file_algo = values.get("algo", PretrainConfig.algo)
    algo = overrides_given.get("algo", file_algo)
    if isinstance(file_algo, str) and algo != file_algo:
        values = {k: v for k, v in values.items() if k not in ALGORITHM_KEYS.get(file_algo, ())}
        skill_space = ALGORITHM_SKILL_SPACES.get(algo, {}) if isinstance(algo, str) else {}
        if not skill_space.keys() & overrides_given.keys():
            values.update(skill_space)
    values.update(overrides_given)
    return build_config(values)
