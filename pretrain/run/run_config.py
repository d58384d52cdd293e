"""The configuration of a run folder: ``RUN_DIR/config.yaml``, written when a run starts and read back (with the
overrides a resumed run may apply) by ``--resume``, export and evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pretrain.run.config import ConfigError, PretrainConfig, build_config, without_other_algorithms
from pretrain.run.run_state import has_saved_state, recorded_config

# Keys a resumed run may change; every other key is baked into the saved model, buffer or environments.
RESUMABLE_KEYS = frozenset({"epochs", "eval_every", "eval_skills", "save_every", "snapshot_every",
                            "save_replay_buffer", "torch_threads", "device", "learning_rate"})


def save_config(config: PretrainConfig, run_dir: Path) -> None:
    """Write a run's resolved configuration to ``run_dir/config.yaml`` (making the folder)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))


def read_run_config(run_dir: Path, overrides: dict[str, Any] | None = None) -> PretrainConfig:
    """The config of an existing run, with the overrides a resumed run may apply."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run folder: {path} is missing")
    try:
        saved = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid YAML ({str(error).splitlines()[0]}); restore it, or start a new "
                          "--run-dir") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{path} must be a mapping of config keys to values, got {type(saved).__name__}; "
                          "restore it, or start a new --run-dir")
    fixed = sorted(k for k, v in (overrides or {}).items() if k not in RESUMABLE_KEYS and saved.get(k, v) != v)
    if fixed:
        raise ConfigError(f"cannot change {', '.join(fixed)} when resuming (the saved model depends on it); "
                          f"a resumed run may change {', '.join(sorted(RESUMABLE_KEYS))}, or start a new --run-dir")
    if has_saved_state(run_dir):  # lists the other algorithms' keys at the defaults of the metra-gym that saved it
        saved = without_other_algorithms(saved, recorded_config(run_dir))
    return build_config({**saved, **(overrides or {})})
