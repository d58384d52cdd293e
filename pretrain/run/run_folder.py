"""A run folder opened to be read or resumed, in one place: its newest complete run state located, every file of it
checked against its sha256, ``state.json`` and ``config.yaml`` read and checked against each other, once.

Run folder layout::

    RUN_DIR/config.yaml                      the resolved configuration (pretrain.run.run_config)
    RUN_DIR/run_state/latest/                model.zip, replay buffer, coverage.npz, state.json (pretrain.run.run_state)
    RUN_DIR/eval/coverage.csv|json           one row per evaluation
    RUN_DIR/eval/trajectories_epoch_*.png    x-y paths of the evaluation skills
    RUN_DIR/snapshots/epoch_*/               skill checkpoints taken while training (snapshot_every)
    RUN_DIR/tb/                              TensorBoard scalars
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pretrain.algorithms import algorithm_class
from pretrain.config import ConfigError, PretrainConfig
from pretrain.run.run_config import CONFIG, RESUMABLE_KEYS, check_config_unchanged, read_run_config
from pretrain.run.run_state import ResumeError, run_state_dir, verify_files

HISTORY = Path("eval") / "coverage.json"


def read_history(run_dir: Path) -> list[dict[str, float]]:
    """The evaluation rows of a run folder (``eval/coverage.json``), with a clear error for a damaged file."""
    path = Path(run_dir) / HISTORY
    if not path.is_file():
        return []
    try:
        rows = json.loads(path.read_text())
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "epoch" in r for r in rows):
            raise ValueError("not a list of evaluation rows")
    except ValueError as error:
        raise ResumeError(f"{path} is damaged ({error}); restore it, or delete it to start the evaluation history "
                          "afresh (the run state does not depend on it)") from None
    return rows


@dataclass(frozen=True)
class RunFolder:
    """A run folder whose newest complete run state was located and checked (:meth:`open`).

    :param path: the run folder.
    :param config: its configuration (config.yaml, with the overrides a resumed run applies).
    :param state_dir: the folder of its newest complete run state.
    :param state: that run state's ``state.json``, checked.
    """

    path: Path
    config: PretrainConfig
    state_dir: Path
    state: dict[str, Any]

    @classmethod
    def open(cls, run_dir: str | Path, overrides: dict[str, Any] | None = None, resume: bool = False) -> RunFolder:
        """Locate, verify and read a run folder.

        :param overrides: what a resumed run changes (``--set``; only :data:`RESUMABLE_KEYS`).
        :param resume: put a run state left by a killed save back into place (the caller holds the run folder's
            lock) and speak of resuming in the messages; without it nothing is moved (a run may still be training).
        :raises ResumeError: for a folder without a usable run state, files changed since they were written, a
            config.yaml edited since, or a state.json that does not fit its configuration.
        :raises ConfigError: for a damaged config.yaml, an override that a resumed run may not make, or ``epochs``
            below the epoch the run has reached.
        """
        path = Path(run_dir)
        state_dir = run_state_dir(path, recover=resume)
        config = read_run_config(path, overrides)
        folder = cls(path, config, state_dir, verify_files(state_dir))
        folder.check(config)
        return folder

    def check(self, config: PretrainConfig) -> None:
        """Refuse to continue the run with ``config``: a key a resumed run may not change differs from the one the
        run state recorded, the run state's counters do not fit it, or ``epochs`` is below the epoch reached.

        :raises ResumeError, ConfigError: naming the value and what to do.
        """
        check_config_unchanged(self.state.get("config"), config.to_dict(), self.path, RESUMABLE_KEYS)
        steps = self.epoch * config.steps_per_epoch
        if self.state["num_timesteps"] != steps:
            raise ResumeError(f"{self.state_dir / 'state.json'} does not fit the run: epoch {self.epoch} of "
                              f"{config.steps_per_epoch} steps is {steps} steps, but it records "
                              f"{self.state['num_timesteps']}; restore the file, or start a new run")
        if config.epochs < self.epoch:
            raise ConfigError(f"the run in {self.path} has reached epoch {self.epoch}, so epochs={config.epochs} "
                              f"cannot be its end; give --set epochs={self.epoch} or more (nothing was changed)")

    @property
    def epoch(self) -> int:
        """The epoch the run state was saved at."""
        return int(self.state["epoch"])

    def history(self) -> list[dict[str, float]]:
        """The evaluation rows up to the run state's epoch."""
        return [row for row in read_history(self.path) if row["epoch"] <= self.epoch]

    def load_model(self, env: Any = None, device: str = "cpu"):
        """The saved model, on ``env`` (None: without an environment, for export) and ``device``.

        :raises ConfigError: when config.yaml does not fit the saved model (a state saved before the configuration
            was recorded), naming the file.
        """
        cls = algorithm_class(self.config.algo, self.config.backbone)
        try:
            model = cls.load(self.state_dir / "model.zip", env=env, device=device)
        except ValueError as error:  # SB3: the spaces differ
            if isinstance(error, ConfigError):
                raise
            raise ConfigError(f"{self.path / CONFIG} does not fit the saved model ({error}); restore the values the "
                              "run was started with, or start a new run") from None
        if model.num_timesteps != self.state["num_timesteps"]:
            raise ResumeError(f"{self.state_dir / 'state.json'} records {self.state['num_timesteps']} steps, the saved "
                              f"model {model.num_timesteps}; restore the file, or start a new run")
        return model
