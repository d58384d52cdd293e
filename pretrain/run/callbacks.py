"""Callbacks of a METRA run: coverage statistics, periodic evaluation with plots, checkpoints, epochs/s."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.evaluation.coverage import CoverageTracker, SkillRollouts, plot_trajectories, policy_coverage
from pretrain.run.run_state import ResumeError, write_json_atomic, write_text_atomic


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


# The Kitchen metrics of an evaluation row (METRA's policy, queue and total task coverage), as TensorBoard logs them.
TASK_METRICS = ("tasks_achieved", "queue_tasks_achieved", "total_tasks_achieved")


TRAINING_TASK_KEYS = ("queue_tasks_achieved", "total_tasks_achieved", "queue_tasks", "total_tasks")


def training_task_metrics(tracker: CoverageTracker) -> dict[str, int | str]:
    """Queue and total task coverage of the training transitions so far: their counts and names."""
    queue, total = tracker.queue_tasks(), tracker.total_tasks_achieved()
    return {"queue_tasks_achieved": sum(queue.values()), "total_tasks_achieved": sum(total.values()),
            "queue_tasks": ";".join(name for name, done in queue.items() if done),
            "total_tasks": ";".join(name for name, done in total.items() if done)}


def read_history(run_dir: Path) -> list[dict[str, float]]:
    """The evaluation rows of a run folder (``eval/coverage.json``), with a clear error for a damaged file."""
    path = Path(run_dir) / "eval" / "coverage.json"
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


class EpochCallback(BaseCallback):
    """At epoch boundaries (after an epoch's gradient steps): evaluate, checkpoint, log epochs/s.

    Evaluation appends a row to ``eval/coverage.csv`` and ``eval/coverage.json`` in the run folder and saves
    a trajectory plot ``eval/trajectories_epoch_XXXXXX.png``. On environments with tasks (Kitchen) the row also
    holds METRA's three task metrics: ``tasks_achieved`` (how many tasks any evaluation rollout achieved: policy
    coverage), ``queue_tasks_achieved`` (by the most recent 100,000 training transitions) and
    ``total_tasks_achieved`` (by any training transition so far), and the names of each set (``tasks``,
    ``queue_tasks``, ``total_tasks``, joined by ``;``).

    :param run_dir: the run folder.
    :param steps_per_epoch: env steps of one epoch (n_envs x episode steps).
    :param rollouts: the evaluation environments.
    :param tracker: training coverage statistics.
    :param eval_every: epochs between evaluations.
    :param save_every: epochs between checkpoints.
    :param save: ``save(epoch)`` writes the run state.
    :param snapshot: ``snapshot(epoch)`` writes a skill checkpoint of the current networks.
    :param snapshot_every: epochs between snapshots (0: none).
    :param start_epoch: epoch the run (re)starts from.
    :param start_wall_clock: training seconds spent before this segment (resume).
    :param seed: seed of the evaluation skills and resets.
    :param on_evaluation: called with each evaluation row.
    :param coverage_note: set when the environment gives no coordinates: evaluations then write empty coverage
        columns and this note (why) instead of rolling out skills.
    """

    def __init__(self, run_dir: Path, steps_per_epoch: int, rollouts: SkillRollouts, tracker: CoverageTracker,
                 eval_every: int, save_every: int, save: Callable[[int], object],
                 snapshot: Callable[[int], object] | None = None, snapshot_every: int = 0, start_epoch: int = 0,
                 start_wall_clock: float = 0.0, seed: int = 0, verbose: int = 0,
                 on_evaluation: Callable[[dict[str, float]], object] | None = None,
                 coverage_note: str | None = None) -> None:
        super().__init__(verbose)
        self.coverage_note = coverage_note
        self.run_dir = Path(run_dir)
        self.steps_per_epoch = steps_per_epoch
        self.rollouts = rollouts
        self.tracker = tracker
        self.eval_every, self.save_every = eval_every, save_every
        self.save = save
        self.snapshot, self.snapshot_every = snapshot, snapshot_every
        self.on_evaluation = on_evaluation
        self.last_epoch = start_epoch
        self.seed = seed
        self.start_wall_clock = start_wall_clock
        self._start_time = time.time()
        self._start_epoch = start_epoch
        # A resumed run keeps the rows up to its saved epoch; a new run (start_epoch 0: a run state is first saved
        # at epoch 1) starts its own, also in a folder whose earlier start never finished its first save.
        self.history = [row for row in read_history(self.run_dir) if row["epoch"] <= start_epoch] if start_epoch else []
        self.stop_requested: Callable[[], bool] = lambda: False
        self._stopping = False

    @property
    def epoch(self) -> int:
        return self.num_timesteps // self.steps_per_epoch

    def _on_step(self) -> bool:
        return not self._stopping  # False ends learn() before the step is stored: the saved state stays exact

    def _on_training_start(self) -> None:
        if self.last_epoch == 0 and not self.history:
            self.evaluate(0)  # the untrained policy: the first point of every coverage curve
            self.model.dump_logs()  # at step 0 in TensorBoard, not under the first epoch's step

    def _on_rollout_start(self) -> None:
        self._at_epoch_end()

    def _on_training_end(self) -> None:
        self._at_epoch_end(final=True)

    def _at_epoch_end(self, final: bool = False) -> None:
        epoch = self.epoch
        if epoch == self.last_epoch:
            return
        self.last_epoch = epoch
        elapsed = time.time() - self._start_time
        self.logger.record("time/epochs_per_s", (epoch - self._start_epoch) / max(elapsed, 1e-9))
        self.logger.record("time/epoch", epoch)
        if final or epoch % self.eval_every == 0:
            self.evaluate(epoch)
        # One TensorBoard point per epoch: SB3 writes its logs only when episodes end inside its own rollout loop,
        # which an overlapped collector replaces (learn() gets log_interval=None, so the two never both write).
        self.model.dump_logs()
        if self.snapshot is not None and self.snapshot_every and epoch % self.snapshot_every == 0:
            self.snapshot(epoch)
        stop = self.stop_requested()
        if final or stop or epoch % self.save_every == 0:
            self.save(epoch)
        self._stopping = stop

    def evaluate(self, epoch: int) -> dict[str, float | str | None]:
        model = self.model
        row: dict[str, float | str | None] = {"epoch": epoch, "env_steps": int(self.num_timesteps),
                                              "wall_clock_s": round(self.wall_clock(), 1)}
        eval_dir = self.run_dir / "eval"
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
        write_json_atomic(eval_dir / "coverage.json", self.history)
        table = io.StringIO()
        writer = csv.DictWriter(table, fieldnames=list(row))
        writer.writeheader()
        writer.writerows(self.history)
        write_text_atomic(eval_dir / "coverage.csv", table.getvalue())
        for key in ("policy_coverage", "queue_coverage", "total_coverage", *TASK_METRICS):
            if row.get(key) is not None:
                self.logger.record(f"eval/{key}", row[key])
        if self.on_evaluation is not None:
            self.on_evaluation(row)
        if self.verbose:
            print(f"[epoch {epoch}] " + ", ".join(f"{k}={v}" for k, v in row.items() if k != "epoch"), flush=True)
        return row

    def wall_clock(self) -> float:
        """Seconds of training in this run so far, resumed segments added up."""
        return self.start_wall_clock + time.time() - self._start_time
