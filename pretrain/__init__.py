"""The training stage of metra-gym: METRA and its baselines on Stable-Baselines3, runs in run folders, skill export.

The public API (what ``examples/`` use); everything loads on first use, so that ``import pretrain`` (and the CLI's
start) stays light:

- the algorithm classes ``METRA``, ``LSD``, ``DIAYN``, ``DADS``, ``CIC`` and the exploration methods ``ICM``, ``LBS``,
  ``RND``, ``APT``, ``DISAGREEMENT``, ``APS`` (SB3 algorithms; ``METRA.on_backbone("crossq")``
  gives one on another backbone, ``algorithm_class(algo, backbone)`` one by name, ``ALGORITHMS`` lists the names)::

      from pretrain import METRA
      model = METRA("MlpPolicy", "metra/PointMass-v0").learn(100_000)

- ``load_config(name_or_path, overrides)``: a bundled config (``"ant"``, ...) or a YAML file, with ``key=value``
  overrides, as ``metra-pretrain train --config ... --set ...`` reads it (a :class:`PretrainConfig`; bad values raise
  one :class:`ConfigError`);
- ``train(config, run_dir, resume=False)``: a run in a run folder, as ``metra-pretrain train`` trains it (evaluations,
  run states, exact resume); ``read_run_config(run_dir, overrides)`` is the configuration to resume it with;
- ``export_run(run_dir, out_dir)``: a run's skills as the pickle-free skill checkpoint that
  :class:`metra_gym.SkillPolicy` and :class:`metra_gym.SkillEnv` load, as ``metra-pretrain export``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from pretrain.config.registry import REGISTRY, algorithm_module

if TYPE_CHECKING:  # what type checkers and editors see of the names loaded below
    from pretrain.algorithms import algorithm_class  # noqa: F401
    from pretrain.config import ALGORITHMS, ConfigError, PretrainConfig, load_config  # noqa: F401
    from pretrain.export import export_run  # noqa: F401
    from pretrain.run.run_config import read_run_config  # noqa: F401
    from pretrain.run.trainer import TrainResult, train  # noqa: F401

# name -> the module that defines it
_API = {"algorithm_class": "pretrain.algorithms", "ALGORITHMS": "pretrain.config", "ConfigError": "pretrain.config",
        "PretrainConfig": "pretrain.config",
        "load_config": "pretrain.config", "train": "pretrain.run.trainer", "TrainResult": "pretrain.run.trainer",
        "read_run_config": "pretrain.run.run_config", "export_run": "pretrain.export"}
# Each algorithm's module exports its class under the upper-cased name of the algorithm (its registry row).
ALGORITHM_CLASSES = [algo.upper() for algo in REGISTRY]
__all__ = [*ALGORITHM_CLASSES, *_API]


def __getattr__(name: str) -> Any:
    if name in ALGORITHM_CLASSES:
        return getattr(import_module(algorithm_module(name.lower())), name)
    if name in _API:
        return getattr(import_module(_API[name]), name)
    raise AttributeError(f"module 'pretrain' has no attribute {name!r}")
