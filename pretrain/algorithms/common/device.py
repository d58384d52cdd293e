"""The torch device of a model, checked against this machine (SB3 would fall back to the CPU without a word)."""

from __future__ import annotations

import torch as th

from pretrain.config import ConfigError


def resolve_device(device: str) -> str:
    """The torch device ``device`` names ("cpu", "cuda", "cuda:N", "auto"), refusing one that does not exist here
    instead of silently using the CPU."""
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
