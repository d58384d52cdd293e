"""The training stage of metra-gym: METRA and its baselines on Stable-Baselines3, its CLI, metrics and skill export.

The algorithm classes load lazily, so that ``import pretrain`` (and the CLI's start) stays light::

    from pretrain import METRA
    model = METRA("MlpPolicy", "Swimmer-v5", skill_dim=2).learn(100_000)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from pretrain.algorithms import REGISTRY

# Each algorithm's folder exports its class under the upper-cased name of the algorithm (pretrain.algorithms).
__all__ = [algo.upper() for algo in REGISTRY]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module(f"pretrain.algorithms.{name.lower()}"), name)
    raise AttributeError(f"module 'pretrain' has no attribute {name!r}")
