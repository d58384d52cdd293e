"""The torch device of a run, checked against this machine."""

from __future__ import annotations

import torch as th

from pretrain.run.config import ConfigError, PretrainConfig


def resolve_device(config: PretrainConfig) -> str:
    """The torch device of a config, refusing one that does not exist here instead of silently using the CPU."""
    device = config.device
    try:
        resolved = th.device(device if device != "auto" else ("cuda" if th.cuda.is_available() else "cpu"))
    except RuntimeError:
        raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}") from None
    if resolved.type == "cuda" and not th.cuda.is_available():
        raise ConfigError(f"device={device!r} but this machine has no CUDA GPU; use device=cpu")
    if resolved.type == "cuda" and (resolved.index or 0) >= th.cuda.device_count():
        raise ConfigError(f"device={device!r} but this machine has {th.cuda.device_count()} CUDA device(s)")
    if resolved.type not in ("cpu", "cuda"):
        raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}")
    return str(resolved)
