"""The configuration of a run folder: ``RUN_DIR/config.yaml``, written when a run starts (and when a resumed run
changes a key with ``--set``), and read back by ``--resume``, export and evaluation.

config.yaml is for people to read; the run state records the configuration it was saved with (``state.json``), and
config.yaml carries the sha256 of its own values in its first line. A file edited since it was written is refused:
its values differ from those the run state recorded (any key, or, when its sha256 still holds, a key a resumed run
may not change: a resume's ``--set`` is recorded at the run's next save).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from metra_gym.atomic_files import write_text_atomic
from pretrain.config import ConfigError, PretrainConfig, build_config, without_other_algorithms
from pretrain.run.run_state import ResumeError, has_saved_state, recorded_config

# Keys a resumed run may change; every other key is baked into the saved model, buffer or environments.
RESUMABLE_KEYS = frozenset({"epochs", "eval_every", "eval_skills", "save_every", "snapshot_every",
                            "save_replay_buffer", "torch_threads", "device", "learning_rate"})
CONFIG = "config.yaml"
_DIGEST_LINE = re.compile(r"^# Written by metra-pretrain; sha256 of the values: ([0-9a-f]{64})\b")


def values_digest(values: dict[str, Any]) -> str:
    """The sha256 of a configuration's values (not of their layout in the file)."""
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


def save_config(config: PretrainConfig, run_dir: Path) -> None:
    """Write a run's resolved configuration to ``run_dir/config.yaml`` (making the folder), atomically, with the
    sha256 of its values in the first line."""
    values = config.to_dict()
    header = (f"# Written by metra-pretrain; sha256 of the values: {values_digest(values)}\n"
              "# An edited file is refused; change what a resumed run may change with\n"
              "# `metra-pretrain train --resume RUN_DIR --set KEY=VALUE`.\n")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / CONFIG, header + yaml.safe_dump(values, sort_keys=False))


def read_run_config(run_dir: Path, overrides: dict[str, Any] | None = None) -> PretrainConfig:
    """The config of an existing run, with the overrides a resumed run may apply.

    :raises ConfigError: for a missing or damaged config.yaml, and an override of a key a resumed run may not change.
    :raises ResumeError: for a config.yaml edited since the run state was saved.
    """
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run folder: {path} is missing")
    try:
        text = path.read_text()
        saved = yaml.safe_load(text)
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
    recorded = recorded_config(run_dir)
    if recorded is not None:
        written = _DIGEST_LINE.match(text)
        as_written = written is not None and written.group(1) == values_digest(saved)
        check_config_unchanged(recorded, saved, run_dir, RESUMABLE_KEYS if as_written else ())
    if has_saved_state(run_dir):  # lists the other algorithms' keys at the defaults of the metra-gym that saved it
        saved = without_other_algorithms(saved, recorded)
    return build_config({**saved, **(overrides or {})})


def check_config_unchanged(recorded: dict[str, Any] | None, config: dict[str, Any], run_dir: Path,
                           may_change: frozenset[str] | tuple[str, ...] = ()) -> None:
    """Refuse a run's configuration that differs from the one its run state recorded (``state["config"]``, recorded
    at every save): the saved model, buffer and environments were built from the recorded values.

    :param recorded: the configuration the run state recorded (None: saved by an older metra-gym, which did not
        record it; nothing is compared).
    :param config: the configuration about to be used (config.yaml, or config.yaml with a resumed run's overrides).
    :param run_dir: the run folder, for the message.
    :param may_change: keys not compared (a resume's ``--set`` changes them before the next save records them).
    :raises ResumeError: one line naming every key that differs, with both values.
    """
    if not isinstance(recorded, dict):
        return
    recorded, current = without_other_algorithms(recorded), without_other_algorithms(json.loads(json.dumps(config)))
    differ = [key for key, value in recorded.items()
              if key not in may_change and key in current and current[key] != value]
    if differ:
        details = ", ".join(f"{key} (config.yaml {current[key]!r}, run state {recorded[key]!r})" for key in differ)
        raise ResumeError(f"{Path(run_dir) / CONFIG} was edited after the run state was saved: {details}. Restore "
                          f"these values (the saved model, buffer and environments were built from them), or start a "
                          f"new run; a resumed run changes only {', '.join(sorted(RESUMABLE_KEYS))}, with --set "
                          "KEY=VALUE")
