"""What a pretraining run is made of: its configuration (every key, its default, its checks), the bundled and
user config files, and the registry of algorithms. The bottom layer of ``pretrain``: no torch, nothing above it.

The names below load on first use (the registry alone is the standard library): ``import pretrain``, which reads
the registry, and the start of ``metra-pretrain``, where a Ctrl-C must meet the command's own answer rather than
an import half done, stay light."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see of the names loaded below
    from pretrain.config.files import builtin_configs, load_config, parse_override, read_config_file  # noqa: F401
    from pretrain.config.pretrain_config import (  # noqa: F401
        ALGORITHM_KEYS,
        ALGORITHM_SKILL_SPACES,
        ALGORITHMS,
        AUTO,
        COLLECTORS,
        FITTED,
        MAX_ENVS,
        NORMALIZERS,
        ConfigError,
        PretrainConfig,
        SharedConfig,
        build_config,
        default_normalizer,
        key_owner,
        validate_skill_spec,
        without_other_algorithms,
    )
    from pretrain.config.registry import (  # noqa: F401
        BACKBONES,
        INITS,
        NO_SKILLS,
        OPTIMIZER_KWARGS,
        REGISTRY,
        AlgorithmEntry,
        Key,
    )

# name -> the module of this package that defines it
_MODULES = {
    **dict.fromkeys(["builtin_configs", "load_config", "parse_override", "read_config_file"], "files"),
    **dict.fromkeys(["ALGORITHM_KEYS", "ALGORITHM_SKILL_SPACES", "ALGORITHMS", "AUTO", "COLLECTORS", "FITTED",
                     "MAX_ENVS", "NORMALIZERS", "ConfigError", "PretrainConfig", "SharedConfig", "build_config",
                     "default_normalizer", "key_owner", "validate_skill_spec", "without_other_algorithms"],
                    "pretrain_config"),
    **dict.fromkeys(["BACKBONES", "INITS", "NO_SKILLS", "OPTIMIZER_KWARGS", "REGISTRY", "AlgorithmEntry", "Key"],
                    "registry"),
}
__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'pretrain.config' has no attribute {name!r}")
    value = getattr(import_module(f"pretrain.config.{_MODULES[name]}"), name)
    globals()[name] = value  # loaded once
    return value
