"""What a run does at its epoch boundaries, one part each: evaluate (coverage, plots, the evaluation table), log
(one TensorBoard point per epoch), snapshot (a skill checkpoint), save (the run state) and stop (after SIGINT or
SIGTERM). :class:`EpochEnd` calls them in that order; :class:`TrainingCoverage` feeds the coverage statistics."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from metra_gym.atomic_files import write_json_atomic, write_text_atomic
from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.algorithms.common.skill_export import export_model
from pretrain.config import PretrainConfig
from pretrain.project_paths import SNAPSHOTS, snapshot_name
from pretrain.run.coverage import CoverageTracker, SkillRollouts, plot_trajectories, policy_coverage
from pretrain.run.run_folder import HISTORY, read_history
from pretrain.run.run_state import save_run_state


class TrainingCoverage(BaseCallback):
    """Feed every training position (``info["coordinates"]``) and, on environments with tasks (Kitchen), its task
    flags (``info[TASK_SUCCESS_KEY]``) into a :class:`CoverageTracker`."""

    def __init__(self, tracker: CoverageTracker) -> None:
        super().__init__()
        self.tracker = tracker
        self._buffer: list[np.ndarray] = []
        self._tasks: list[np.ndarray] = []

    def _on_step(self) -> bool:
        infos = self.locals["infos"]
        self._buffer.append(np.stack([info["coordinates"] for info in infos]))
        if self.tracker.task_names:
            self._tasks.append(np.array([[bool(info[TASK_SUCCESS_KEY][name]) for name in self.tracker.task_names]
                                         for info in infos]))
        return True

    def _on_rollout_end(self) -> None:
        if self._buffer:
            self.tracker.add(np.concatenate(self._buffer), np.concatenate(self._tasks) if self._tasks else None)
            self._buffer.clear()
            self._tasks.clear()


# The Kitchen metrics of an evaluation row (METRA's policy, queue and total task coverage), as TensorBoard logs them.
TASK_METRICS = ("tasks_achieved", "queue_tasks_achieved", "total_tasks_achieved")
TRAINING_TASK_KEYS = ("queue_tasks_achieved", "total_tasks_achieved", "queue_tasks", "total_tasks")


def training_task_metrics(tracker: CoverageTracker) -> dict[str, int | str]:
    """Queue and total task coverage of the training transitions so far: their counts and names."""
    queue, total = tracker.queue_tasks(), tracker.total_tasks_achieved()
    return {"queue_tasks_achieved": sum(queue.values()), "total_tasks_achieved": sum(total.values()),
            "queue_tasks": ";".join(name for name, done in queue.items() if done),
            "total_tasks": ";".join(name for name, done in total.items() if done)}


def actor_act(model) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The deterministic skill policy of an SB3 METRA model as ``act(obs, z)``, scaled to the action space."""

    if getattr(model, "pixels", False):  # SB3 transposes and scales the images itself
        return lambda obs, skills: model.predict({"pixels": obs, "skill": skills}, deterministic=True)[0]

    def act(obs: np.ndarray, skills: np.ndarray) -> np.ndarray:
        with th.no_grad():
            x = th.as_tensor(np.concatenate([obs, skills], axis=1), dtype=th.float32, device=model.device)
            action = model.actor(x, deterministic=True).cpu().numpy()
        return model.policy.unscale_action(action)

    return act


class Clock:
    """Seconds of training in a run so far, resumed segments added up.

    :param before: seconds of training before this segment (a resumed run's).
    """

    def __init__(self, before: float = 0.0) -> None:
        self.before, self.start = before, time.time()

    def __call__(self) -> float:
        return self.before + time.time() - self.start


@dataclass(frozen=True)
class Every:
    """Every ``epochs`` epochs (0: never)."""

    epochs: int

    def due(self, epoch: int) -> bool:
        return self.epochs > 0 and epoch % self.epochs == 0


class Evaluation:
    """Evaluate the skills: a row of ``eval/coverage.csv`` and ``eval/coverage.json`` (policy coverage of the
    evaluation skills, queue and total coverage of training), a trajectory plot ``eval/trajectories_epoch_XXXXXX.png``,
    the ``eval/`` scalars of TensorBoard. On environments with tasks (Kitchen) the row also holds METRA's three task
    metrics: ``tasks_achieved`` (how many tasks any evaluation rollout achieved: policy coverage),
    ``queue_tasks_achieved`` (by the most recent 100,000 training transitions) and ``total_tasks_achieved`` (by any
    training transition so far), and the names of each set (``tasks``, ``queue_tasks``, ``total_tasks``, joined by
    ``;``).

    :param run_dir: the run folder.
    :param rollouts: the evaluation environments.
    :param tracker: training coverage statistics.
    :param clock: the run's training time.
    :param seed: seed of the evaluation skills and resets.
    :param history: the rows of the evaluations before (a resumed run's).
    :param on_evaluation: called with each row (e.g. to report it to Ray Tune).
    :param coverage_note: set when the environment gives no coordinates: the rows then have empty coverage columns
        and this note (why) instead of rolling out skills.
    :param verbose: print each row.
    """

    def __init__(self, run_dir: Path, rollouts: SkillRollouts, tracker: CoverageTracker, clock: Clock, seed: int,
                 history: list[dict[str, Any]], on_evaluation: Callable[[dict[str, Any]], object] | None = None,
                 coverage_note: str | None = None, verbose: int = 0) -> None:
        self.run_dir, self.rollouts, self.tracker, self.clock, self.seed = Path(run_dir), rollouts, tracker, clock, seed
        self.history, self.on_evaluation = history, on_evaluation
        self.coverage_note, self.verbose = coverage_note, verbose

    def __call__(self, model, epoch: int) -> dict[str, Any]:
        row: dict[str, Any] = {"epoch": epoch, "env_steps": int(model.num_timesteps),
                               "wall_clock_s": round(self.clock(), 1)}
        eval_dir = self.run_dir / HISTORY.parent
        if self.coverage_note is None:
            bins, positions, skills = policy_coverage(self.rollouts, actor_act(model), model.skill_dim,
                                                      model.discrete_skills, seed=self.seed,
                                                      prior=model.skill_learner.skill_prior)
            row.update(policy_coverage=bins, queue_coverage=self.tracker.queue_coverage(),
                       total_coverage=self.tracker.total_coverage())
            plot_trajectories(positions, skills, eval_dir / f"trajectories_epoch_{epoch:06d}.png",
                              title=f"epoch {epoch}: policy coverage {bins}")
        else:
            row.update(policy_coverage=None, queue_coverage=None, total_coverage=None, coverage=self.coverage_note)
        achieved = self.rollouts.achieved_tasks()
        if achieved is not None:  # environments with tasks (Kitchen): the paper's policy, queue and total task coverage
            row.update(training_task_metrics(self.tracker), tasks_achieved=sum(achieved.values()),
                       tasks=";".join(name for name, done in achieved.items() if done))
        self.history.append(row)
        self._write_table()
        for key in ("policy_coverage", "queue_coverage", "total_coverage", *TASK_METRICS):
            if row.get(key) is not None:
                model.logger.record(f"eval/{key}", row[key])
        if self.on_evaluation is not None:
            self.on_evaluation(row)
        if self.verbose:
            print(f"[epoch {epoch}] " + ", ".join(f"{k}={v}" for k, v in row.items() if k != "epoch"), flush=True)
        return row

    def _write_table(self) -> None:
        write_json_atomic(self.run_dir / HISTORY, self.history)
        table = io.StringIO()
        writer = csv.DictWriter(table, fieldnames=list(self.history[-1]))
        writer.writeheader()
        writer.writerows(self.history)
        write_text_atomic((self.run_dir / HISTORY).with_suffix(".csv"), table.getvalue())


class Snapshots:
    """Write a small skill checkpoint of the current networks to ``RUN_DIR/snapshots/epoch_XXXXXX``, for
    evaluations held out from training's.

    :param run_dir: the run folder.
    :param config: the run's configuration.
    :param clock: the run's training time.
    :param tracker: training coverage statistics (on environments with tasks, the snapshot records the run's queue
        and total task coverage so far).
    """

    def __init__(self, run_dir: Path, config: PretrainConfig, clock: Clock, tracker: CoverageTracker) -> None:
        self.run_dir, self.config, self.clock, self.tracker = Path(run_dir), config, clock, tracker

    def __call__(self, model, epoch: int) -> None:
        export_model(model, self.config, self.run_dir / SNAPSHOTS / snapshot_name(epoch),
                     {"run": self.run_dir.name, "env_steps": int(model.num_timesteps), "epochs": epoch,
                      "policy_coverage": None, "wall_clock_h": round(self.clock() / 3600, 3),
                      "command": "snapshot during training",
                      **({"training": training_task_metrics(self.tracker)} if self.tracker.task_names else {})})


class RunStateSaves:
    """Save the run state (:func:`pretrain.run.run_state.save_run_state`), recording the training time and the
    configuration.

    :param run_dir: the run folder.
    :param config: the run's configuration.
    :param tracker: training coverage statistics.
    :param clock: the run's training time.
    """

    def __init__(self, run_dir: Path, config: PretrainConfig, tracker: CoverageTracker, clock: Clock) -> None:
        self.run_dir, self.config, self.tracker, self.clock = Path(run_dir), config, tracker, clock

    def __call__(self, model, epoch: int) -> None:
        save_run_state(self.run_dir, model, self.tracker, epoch, self.config.save_replay_buffer,
                       extra={"wall_clock_s": self.clock(), "config": self.config.to_dict()})


class EpochEnd(BaseCallback):
    """At every epoch boundary (after an epoch's gradient steps), in this order: evaluate (every ``evaluate_every``
    epochs and at the end), log (epochs/s, one TensorBoard point), snapshot (every ``snapshot_every``), save (every
    ``save_every``, at the end, and when a stop was asked for), stop (ends ``learn()`` when asked, after the save).
    The untrained policy is evaluated when a new run starts: the first point of every coverage curve.

    :param steps_per_epoch: env steps of one epoch (n_envs x episode steps).
    :param start_epoch: the epoch the run (re)starts from.
    :param evaluate: the evaluation, and how often.
    :param snapshot: the snapshots, and how often.
    :param save: the run state's saves, and how often.
    :param stop_requested: whether a stop was asked for (a signal); checked once per epoch.
    :param clock: the run's training time (for epochs/s).
    """

    def __init__(self, steps_per_epoch: int, start_epoch: int, evaluate: tuple[Evaluation, Every],
                 snapshot: tuple[Snapshots, Every], save: tuple[RunStateSaves, Every],
                 stop_requested: Callable[[], bool], clock: Clock) -> None:
        super().__init__()
        self.steps_per_epoch, self.start_epoch, self.last_epoch = steps_per_epoch, start_epoch, start_epoch
        (self.evaluate, self.evaluate_every), (self.snapshot, self.snapshot_every) = evaluate, snapshot
        self.save, self.save_every = save
        self.stop_requested, self.clock = stop_requested, clock
        self._stopping = False

    @property
    def epoch(self) -> int:
        return self.num_timesteps // self.steps_per_epoch

    def _on_training_start(self) -> None:
        if self.last_epoch == 0 and not self.evaluate.history:
            self.evaluate(self.model, 0)  # the untrained policy: the first point of every coverage curve
            self.model.dump_logs()  # at step 0 in TensorBoard, not under the first epoch's step

    def _on_step(self) -> bool:
        return not self._stopping  # False ends learn() before the step is stored: the saved state stays exact

    def _on_rollout_start(self) -> None:
        self._at_epoch_end()

    def _on_training_end(self) -> None:
        self._at_epoch_end(final=True)

    def _at_epoch_end(self, final: bool = False) -> None:
        epoch = self.epoch
        if epoch == self.last_epoch:
            return
        self.last_epoch = epoch
        self._log_progress(epoch)
        if final or self.evaluate_every.due(epoch):
            self.evaluate(self.model, epoch)
        # One TensorBoard point per epoch: SB3 writes its logs only when episodes end inside its own rollout loop,
        # which an overlapped collector replaces (learn() gets log_interval=None, so the two never both write).
        self.model.dump_logs()
        if self.snapshot_every.due(epoch):
            self.snapshot(self.model, epoch)
        stop = self.stop_requested()
        if final or stop or self.save_every.due(epoch):
            self.save(self.model, epoch)
        self._stopping = stop

    def _log_progress(self, epoch: int) -> None:
        elapsed = time.time() - self.clock.start
        self.logger.record("time/epochs_per_s", (epoch - self.start_epoch) / max(elapsed, 1e-9))
        self.logger.record("time/epoch", epoch)


def resumed_history(run_dir: Path, start_epoch: int) -> list[dict[str, Any]]:
    """The evaluation rows a run (re)starting at ``start_epoch`` keeps: those up to its saved epoch when it resumes;
    none for a new run (start_epoch 0: a run state is first saved at epoch 1), also in a folder whose earlier start
    never finished its first save."""
    return [row for row in read_history(run_dir) if row["epoch"] <= start_epoch] if start_epoch else []
