"""The pickle-free skill checkpoint: a folder with ``model.safetensors`` and ``config.json``.

``model.safetensors`` holds the skill actor (``actor.*``) and phi (``phi.*``) as float32 tensors;
``config.json`` says what they need (environment, observation normaliser, skill space, network shape) and
where they came from (training provenance). A model card ``README.md`` may sit beside them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
CARD = "README.md"
REQUIRED_KEYS = ("format_version", "env_id", "env_kwargs", "obs_dim", "action_dim", "action_low", "action_high",
                 "skill_dim", "discrete_skills", "actor_hidden", "phi_hidden", "normalizer", "provenance")


class CheckpointError(ValueError):
    """A skill checkpoint that cannot be used; the message names the file and the fix."""


def read_config(folder: Path) -> dict[str, Any]:
    """Read and check ``config.json`` of a checkpoint folder."""
    path = Path(folder) / CONFIG
    if not path.is_file():
        raise CheckpointError(f"{folder} is not a skill checkpoint: {CONFIG} is missing "
                              f"(export one with `metra-pretrain export RUN_DIR OUT_DIR`)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON ({error}); re-export or re-download the checkpoint") from None
    missing = [key for key in REQUIRED_KEYS if key not in config]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}; re-export the checkpoint with this version")
    if config["format_version"] > FORMAT_VERSION:
        raise CheckpointError(f"{path} has format version {config['format_version']}, newer than this metra-gym "
                              f"reads ({FORMAT_VERSION}); upgrade metra-gym")
    return config


def read_weights(folder: Path) -> dict[str, Any]:
    """Load ``model.safetensors`` as torch tensors, turning a missing, truncated or corrupted file into one error."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder) / WEIGHTS
    if not path.is_file():
        raise CheckpointError(f"{path} is missing; re-export or re-download the checkpoint")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or corrupted ({error}); delete it and re-download or "
                              "re-export the checkpoint") from None
