"""One METRA pretraining run: environments, model, callbacks, checkpoints and resume, in a run folder.

Run folder layout::

    RUN_DIR/config.yaml                      the resolved configuration
    RUN_DIR/run_state/latest/                model.zip, replay buffer (replay_buffer.pkl + replay.*.npy),
                                             coverage.npz, state.json
    RUN_DIR/eval/coverage.csv|json           one row per evaluation
    RUN_DIR/eval/trajectories_epoch_*.png    x-y paths of the evaluation skills
    RUN_DIR/tb/                              TensorBoard scalars
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch as th
from stable_baselines3.common.callbacks import CallbackList

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.evaluation.coverage import CoverageTracker, SkillRollouts
from pretrain.export import export_model
from pretrain.run.callbacks import EpochCallback, TrainingCoverage, training_task_metrics
from pretrain.run.collector import attach_collector
from pretrain.run.config import ConfigError, PretrainConfig
from pretrain.run.device import resolve_device
from pretrain.run.envs import env_factory, training_env, with_fitted_normalizer
from pretrain.run.memory import check_memory
from pretrain.run.model import algorithm_class, build_model, set_learning_rate
from pretrain.run.run_config import RESUMABLE_KEYS, save_config
from pretrain.run.run_state import (
    RunFolderLock,
    check_config_unchanged,
    discard_unsaved_state,
    has_saved_state,
    load_run_state,
    run_state_dir,
    save_run_state,
    verify_files,
)
from pretrain.run.signals import StopOnSignal


def no_coverage_note(config: PretrainConfig) -> str:
    """Why a run's coverage columns are empty: its environment gives no position."""
    return (f"no coverage: {config.env_id} puts no info['coordinates'] and the config names no coordinates "
            "(observation indices, e.g. [0, 1], or info keys, e.g. [x_position, y_position])")


@dataclass
class TrainResult:
    """How a call of :func:`train` ended: the evaluation history, the last epoch saved or reached, and the name of
    the signal that stopped it early (None when it reached ``epochs``)."""

    history: list[dict[str, float]]
    epoch: int
    stopped_by: str | None = None


def train(config: PretrainConfig, run_dir: str | Path, resume: bool = False, progress_bar: bool = False,
          verbose: int = 1, on_evaluation: Callable[[dict[str, float]], object] | None = None) -> TrainResult:
    """Train (or continue) a run until ``config.epochs``, or until SIGINT / SIGTERM asks it to stop after the
    current epoch (then the run state is saved first). ``on_evaluation(row)`` is called with every evaluation
    row (e.g. to report it to Ray Tune). Returns the evaluation history and how it ended."""
    run_dir = Path(run_dir)
    device = resolve_device(config)
    th.set_num_threads(config.torch_threads)
    config = with_fitted_normalizer(config)  # a new run's fitted normaliser, saved in its config.yaml below
    make = env_factory(config)
    probe = make()
    info = probe.reset(seed=0)[1]
    probe.close()
    tracker = CoverageTracker(n_coordinates=len(info.get("coordinates", ())),
                              task_names=list(info.get(TASK_SUCCESS_KEY, ())))
    coverage_note = None if "coordinates" in info else no_coverage_note(config)
    check_memory(config, probe.observation_space, probe.action_space, device)  # before hours of nothing
    start_epoch, start_wall_clock = 0, 0.0
    if resume:
        run_state_dir(run_dir, recover=False, resume=True)  # the clear error for a folder without a run state
    else:
        existing = next((p for p in (run_dir, *run_dir.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            where = "it is a file" if existing == run_dir else f"{existing} is a file"
            raise ConfigError(f"--run-dir {run_dir} must be a folder for the run, but {where}; choose another path")
        if has_saved_state(run_dir):  # (a folder whose first save never finished holds nothing to resume)
            raise ConfigError(f"{run_dir} already holds a run; continue it with --resume or choose a new --run-dir")
    created = [p for p in (run_dir, *run_dir.parents) if not p.exists()]
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = None
    try:
        if not os.access(run_dir, os.W_OK):
            raise ConfigError(f"cannot write to the run folder {run_dir}; choose a writable --run-dir")
        lock = RunFolderLock(run_dir)  # held until training ends: no second process trains this folder
        if resume:
            folder = run_state_dir(run_dir)  # (moves a state left by a killed save back into place)
            check_config_unchanged(verify_files(folder), config.to_dict(), run_dir, RESUMABLE_KEYS)
        else:
            discard_unsaved_state(run_dir)  # a first save that never finished: start afresh
        venv = training_env(config, make)
        if resume:
            try:
                model = algorithm_class(config).load(folder / "model.zip", env=venv, device=device)
            except ValueError as error:  # SB3: the spaces differ (config.yaml edited, state saved before it was recorded)
                raise ConfigError(f"{run_dir / 'config.yaml'} does not fit the saved model ({error}); restore the "
                                  "values the run was started with, or start a new run") from None
            model.tensorboard_log = str(run_dir / "tb")  # the saved one is where the run folder was (moved, copied)
            attach_collector(model, config)
            state = load_run_state(folder, model, tracker)
            start_epoch, start_wall_clock = int(state["epoch"]), float(state.get("wall_clock_s", 0.0))
            set_learning_rate(model, config.learning_rate)
        else:
            model = build_model(config, venv, run_dir)
            attach_collector(model, config)
        save_config(config, run_dir)
    except BaseException:
        if lock is not None:
            lock.release()
        for folder_made in created:  # a run that never started leaves no empty folders behind
            try:
                folder_made.rmdir()
            except OSError:
                break
        raise

    rollouts = SkillRollouts(make, config.eval_skills, config.episode_steps)

    def save(epoch: int) -> None:  # called by the callback below, so `epochs` exists by then
        save_run_state(run_dir, model, tracker, epoch, config.save_replay_buffer,
                       extra={"wall_clock_s": epochs.wall_clock(), "config": config.to_dict()})

    def snapshot(epoch: int) -> None:  # a small skill checkpoint, for evaluations held out from training's
        export_model(model, config, run_dir / "snapshots" / f"epoch_{epoch:06d}",
                     {"run": run_dir.name, "env_steps": int(model.num_timesteps), "epochs": epoch,
                      "policy_coverage": None, "wall_clock_h": round(epochs.wall_clock() / 3600, 3),
                      "command": "snapshot during training",
                      **({"training": training_task_metrics(tracker)} if tracker.task_names else {})})

    epochs = EpochCallback(run_dir, config.steps_per_epoch, rollouts, tracker, config.eval_every,
                           config.save_every, save=save, snapshot=snapshot, snapshot_every=config.snapshot_every,
                           start_epoch=start_epoch,
                           start_wall_clock=start_wall_clock, seed=config.seed, verbose=verbose,
                           on_evaluation=on_evaluation, coverage_note=coverage_note)
    remaining = config.epochs * config.steps_per_epoch - model.num_timesteps
    try:
        with StopOnSignal() as stop:
            epochs.stop_requested = stop.requested
            if remaining > 0:
                callbacks = [epochs] if coverage_note else [TrainingCoverage(tracker), epochs]
                model.learn(remaining, callback=CallbackList(callbacks), log_interval=None,
                            tb_log_name="metra", reset_num_timesteps=not resume, progress_bar=progress_bar)
    finally:
        if model.collector is not None:
            model.collector.close()
        rollouts.close()
        venv.close()
        lock.release()
    return TrainResult(epochs.history, epochs.last_epoch, stop.signal_name)
