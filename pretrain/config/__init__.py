"""What a pretraining run is made of: its configuration (every key, its default, its checks), the bundled and
user config files, and the registry of algorithms. The bottom layer of ``pretrain``: no torch, nothing above it."""

from pretrain.config.files import builtin_configs, load_config, parse_override, read_config_file
from pretrain.config.pretrain_config import (
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
from pretrain.config.registry import BACKBONES, INITS, OPTIMIZER_KWARGS, REGISTRY, AlgorithmEntry, Key

__all__ = ["ALGORITHMS", "ALGORITHM_KEYS", "ALGORITHM_SKILL_SPACES", "AUTO", "BACKBONES", "COLLECTORS", "FITTED",
           "INITS", "MAX_ENVS", "NORMALIZERS", "OPTIMIZER_KWARGS", "REGISTRY", "AlgorithmEntry", "ConfigError", "Key",
           "PretrainConfig", "SharedConfig", "build_config", "builtin_configs", "default_normalizer", "key_owner",
           "load_config", "parse_override", "read_config_file", "validate_skill_spec", "without_other_algorithms"]
