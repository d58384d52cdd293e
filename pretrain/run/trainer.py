"""One pretraining run in a run folder (its layout: :mod:`pretrain.run.run_folder`): a new run or a resumed one,
trained until ``config.epochs`` or until SIGINT / SIGTERM asks it to stop after the current epoch.

:func:`train` reads top to bottom: the environments, the run folder taken (a new model, or the saved one with its run
state), the parts that work at epoch boundaries (:mod:`pretrain.run.callbacks`), then SB3's ``learn``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import torch as th
from stable_baselines3.common.callbacks import CallbackList

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.device import resolve_device
from pretrain.config import ConfigError, PretrainConfig
from pretrain.run.callbacks import (
    Clock,
    EpochEnd,
    Evaluation,
    Every,
    RunStateSaves,
    Snapshots,
    TrainingCoverage,
    resumed_history,
)
from pretrain.run.collector import attach_collector
from pretrain.run.coverage import CoverageTracker, SkillRollouts
from pretrain.run.envs import env_factory, training_env, with_fitted_normalizer
from pretrain.run.model import build_model, set_learning_rate
from pretrain.run.run_config import save_config
from pretrain.run.run_folder import RunFolder
from pretrain.run.run_state import RunFolderLock, discard_unsaved_state, has_saved_state, load_run_state, run_state_dir
from pretrain.run.signals import StopOnSignal


@dataclass
class TrainResult:
    """How a call of :func:`train` ended: the evaluation history, the last epoch saved or reached, and the name of
    the signal that stopped it early (None when it reached ``epochs``)."""

    history: list[dict[str, float]]
    epoch: int
    stopped_by: str | None = None


@dataclass
class Started:
    """A run taken up in its run folder: the model on its environments, with the run state it continues from."""

    model: SkillAlgorithm
    venv: object
    tracker: CoverageTracker
    start_epoch: int = 0
    wall_clock_s: float = 0.0


def train(config: PretrainConfig, run_dir: str | Path, resume: bool = False, progress_bar: bool = False,
          verbose: int = 1, on_evaluation: Callable[[dict[str, float]], object] | None = None) -> TrainResult:
    """Train (or continue) a run until ``config.epochs``, or until SIGINT / SIGTERM asks it to stop after the
    current epoch (then the run state is saved first).

    :param config: the run's configuration (:func:`pretrain.config.load_config`; to resume, the run folder's
        config.yaml with the keys a resumed run may change: :func:`pretrain.run.run_config.read_run_config`).
    :param run_dir: the run folder.
    :param resume: continue the run saved in ``run_dir`` (else start a new one there).
    :param progress_bar: SB3's progress bar.
    :param verbose: print each evaluation row.
    :param on_evaluation: called with every evaluation row (e.g. to report it to Ray Tune).
    :return: the evaluation history and how it ended.
    :raises ConfigError, ResumeError: for a configuration, environment or run folder that cannot be trained.
    """
    run_dir = Path(run_dir)
    device = resolve_device(config.device)
    th.set_num_threads(config.torch_threads)
    config = with_fitted_normalizer(config)  # a new run's fitted normaliser, saved in its config.yaml below
    make = env_factory(config)
    coordinates, task_names, coverage_note = _probe(config, make)
    _check_run_dir(run_dir, resume)
    created = [p for p in (run_dir, *run_dir.parents) if not p.exists()]
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = None
    try:
        if not os.access(run_dir, os.W_OK):
            raise ConfigError(f"cannot write to the run folder {run_dir}; choose a writable --run-dir")
        lock = RunFolderLock(run_dir)  # held until training ends: no second process trains this folder
        tracker = CoverageTracker(n_coordinates=coordinates, task_names=task_names)
        started = (_resumed(config, run_dir, make, device, tracker) if resume
                   else _new(config, run_dir, make, tracker))
        save_config(config, run_dir)
    except BaseException:
        if lock is not None:
            lock.release()
        for folder in created:  # a run that never started leaves no empty folders behind
            try:
                folder.rmdir()
            except OSError:
                break
        raise

    model = started.model
    clock = Clock(started.wall_clock_s)
    rollouts = SkillRollouts(make, config.eval_skills, config.episode_steps)
    evaluation = Evaluation(run_dir, rollouts, started.tracker, clock, config.seed,
                            resumed_history(run_dir, started.start_epoch), on_evaluation, coverage_note, verbose)
    try:
        with StopOnSignal() as stop:
            epoch_end = EpochEnd(config.steps_per_epoch, started.start_epoch,
                                 evaluate=(evaluation, Every(config.eval_every)),
                                 snapshot=(Snapshots(run_dir, config, clock, started.tracker),
                                           Every(config.snapshot_every)),
                                 save=(RunStateSaves(run_dir, config, started.tracker, clock), Every(config.save_every)),
                                 stop_requested=stop.requested, clock=clock)
            remaining = config.epochs * config.steps_per_epoch - model.num_timesteps
            if remaining > 0:
                callbacks = [epoch_end] if coverage_note else [TrainingCoverage(started.tracker), epoch_end]
                model.learn(remaining, callback=CallbackList(callbacks), log_interval=None,
                            tb_log_name="metra", reset_num_timesteps=not resume, progress_bar=progress_bar)
    finally:
        if model.collector is not None:
            model.collector.close()
        rollouts.close()
        started.venv.close()  # type: ignore[attr-defined]
        lock.release()
    return TrainResult(evaluation.history, epoch_end.last_epoch, stop.signal_name)


def _probe(config: PretrainConfig, make: Callable[[], gym.Env]) -> tuple[int, list[str], str | None]:
    """How many coordinates the environment's positions have (``info["coordinates"]``), the tasks it reports
    (``info[TASK_SUCCESS_KEY]``, Kitchen's), and why a run's coverage columns are empty when it gives no positions
    (else None)."""
    probe = make()
    info = probe.reset(seed=0)[1]
    probe.close()
    tasks = list(info.get(TASK_SUCCESS_KEY, ()))
    if "coordinates" in info:
        return len(info["coordinates"]), tasks, None
    return 0, tasks, (f"no coverage: {config.env_id} puts no info['coordinates'] and the config names no coordinates "
                      "(observation indices, e.g. [0, 1], or info keys, e.g. [x_position, y_position])")


def _check_run_dir(run_dir: Path, resume: bool) -> None:
    """Refuse a run folder that cannot take the run: none to resume, or, for a new run, a file or a saved run."""
    if resume:
        run_state_dir(run_dir, recover=False, resume=True)  # the clear error for a folder without a run state
        return
    existing = next((p for p in (run_dir, *run_dir.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        where = "it is a file" if existing == run_dir else f"{existing} is a file"
        raise ConfigError(f"--run-dir {run_dir} must be a folder for the run, but {where}; choose another path")
    if has_saved_state(run_dir):  # (a folder whose first save never finished holds nothing to resume)
        raise ConfigError(f"{run_dir} already holds a run; continue it with --resume or choose a new --run-dir")


def _new(config: PretrainConfig, run_dir: Path, make: Callable[[], gym.Env], tracker: CoverageTracker) -> Started:
    """A new model in ``run_dir`` (a first save that never finished is discarded: the run starts afresh)."""
    discard_unsaved_state(run_dir)
    venv = training_env(config, make)
    model = build_model(config, venv, run_dir)
    attach_collector(model, config)
    return Started(model, venv, tracker)


def _resumed(config: PretrainConfig, run_dir: Path, make: Callable[[], gym.Env], device: str,
             tracker: CoverageTracker) -> Started:
    """The saved model of ``run_dir`` with its run state (RNGs, replay buffer, coverage statistics), continued with
    ``config`` (which may change only the keys a resumed run may change)."""
    run = RunFolder.open(run_dir, resume=True)  # (moves a state left by a killed save back into place)
    run.check(config)
    venv = training_env(config, make)
    model = run.load_model(env=venv, device=device)
    model.tensorboard_log = str(run_dir / "tb")  # the saved one is where the run folder was (moved, copied)
    attach_collector(model, config)  # before the run state: it restores the collection in flight
    load_run_state(run.state_dir, run.state, model, tracker)
    set_learning_rate(model, config.learning_rate)
    return Started(model, venv, tracker, run.epoch, float(run.state.get("wall_clock_s", 0.0)))
