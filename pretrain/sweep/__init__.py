"""Many training runs through Ray Tune, on this machine or a Ray cluster (``address``): seeds x a grid of config
overrides, or the trials of a sweep file (a comparison of methods over envs and seeds, see
:mod:`pretrain.sweep.sweep_file`).

Each trial is an ordinary run folder under ``run_root`` (named for its settings), so a sweep is resumable across
sessions: run the same command again and finished trials are not run again, unfinished ones resume from their run
state, new ones start. Every run can be inspected, resumed or exported with the other commands. All trials are
checked before any starts (their configs, run folders, environments, device and memory, as ``train`` checks a
run); a failed trial is reported while the others go on; the summary over seeds goes to ``run_root/summary/``
(summary.json, figure.png, table.md).

    metra-pretrain sweep --config ant --seeds 0 1 --grid gradient_steps=50,100 --run-root runs/sweep --cpus-per-run 2
    metra-pretrain sweep benchmarks/comparison.yaml --run-root runs/comparison --cpus-per-run 2
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pretrain.config import ConfigError
from pretrain.sweep.ray_runner import SweepInterrupted, TrialOutcome, preflight, run_trials
from pretrain.sweep.sweep_file import read_sweep_file
from pretrain.sweep.trials import (
    FINISHED,
    NEW,
    RESUME,
    Trial,
    check_trials_can_start,
    clear_first_saves,
    grid_trials,
    parse_grid,
    plan,
    trial_name,
)

__all__ = ["SweepInterrupted", "SweepResult", "Trial", "parse_grid", "sweep", "trial_name"]

SUMMARY_DIR = "summary"


@dataclass
class SweepResult:
    """What a sweep did: each trial's outcome, and the folder of its summary over seeds (None when ``skip`` left
    out every trial: nothing ran, and the summary of earlier sweeps there is left as it is)."""

    outcomes: list[TrialOutcome]
    summary_dir: Path | None

    @property
    def failed(self) -> list[TrialOutcome]:
        return [outcome for outcome in self.outcomes if outcome.outcome == "failed"]


class RunRootLock:
    """One sweep at a time per run root: an exclusive ``flock`` on the folder, released when the sweep's process
    ends however it ends. Taken before the run folders are read when the folder exists, else once it is made."""

    def __init__(self, run_root: Path) -> None:
        self.run_root = run_root
        self._fd = -1

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: no lock
            return
        if self._fd >= 0 or not self.run_root.is_dir():
            return
        self._fd = os.open(self.run_root, os.O_RDONLY)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            self._fd = -1
            raise ConfigError(f"another sweep is running in {self.run_root}; wait for it (or stop it) before "
                              "starting this one, or use another --run-root") from None

    def __enter__(self) -> RunRootLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def leave_out(trials: list[Trial], names: list[str], every: list[Trial]) -> list[Trial]:
    """``trials`` without those named in ``names``, each of which must name one of ``every`` (the sweep's trials
    before ``only`` narrowed them: a name of another env or method is no mistake)."""
    known = {trial.name for trial in every}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"--skip {unknown[0]}: no trial of this sweep has that name (they are named like "
                          f"{min(known)}, as their run folders); check the name against the sweep's trials")
    return [trial for trial in trials if trial.name not in set(names)]


def sweep(config_name: str = "ant", run_root: str | Path = "runs/sweep", seeds: list[int] | None = None,
          grid: dict[str, list[Any]] | None = None, overrides: list[str] | None = None, cpus_per_run: int = 1,
          address: str | None = None, sweep_file: str | Path | None = None, only: list[str] | None = None,
          echo: Callable[[str], None] = print, max_concurrent: int | None = None,
          skip: list[str] | None = None) -> SweepResult:
    """Train every trial (seeds x ``grid`` of ``config_name``, or the trials of ``sweep_file``) that has not finished.

    :param config_name: a bundled config or a YAML file (without ``sweep_file``).
    :param run_root: the folder that receives one run folder per trial, and the summary.
    :param seeds: the seeds to train (without ``sweep_file``; default 0 and 1).
    :param grid: config keys and the values to try, every combination a trial (without ``sweep_file``).
    :param overrides: ``key=value`` settings of every trial.
    :param cpus_per_run: CPUs Ray reserves per trial: its torch threads, less one per overlapped-collector worker.
    :param address: a Ray cluster to join (``"auto"`` or ``HOST:PORT``); None starts Ray on this machine. Several
        sweeps on one cluster (``ray start --head --num-cpus N``, then each with ``"auto"``) share its CPUs, with no
        order between the sweeps' trials: on 2 CPUs a sweep started later took both freed CPUs while an earlier
        one's trials waited, with ``TUNE_MAX_PENDING_TRIALS_PG`` at Ray Tune's default or 1. Where the order
        matters, give each sweep its share with ``max_concurrent``, or run the sweeps one after the other.
    :param sweep_file: a sweep file (its seeds, envs, budgets and methods).
    :param only: with ``sweep_file``: the env and method labels to run.
    :param echo: where progress lines go.
    :param max_concurrent: the most trials of this sweep at once (None: as many as the CPUs allow); a sweep's share
        of a cluster that other sweeps use too.
    :param skip: names of trials to leave out (``ENV-METHOD-seed=N``, as their run folders are named): runs that
        finished elsewhere, on a machine whose run folders are gone, and whose results are kept; without this the
        sweep, which sees run folders only, trains them again.
    :raises ConfigError: bad input, found before any trial starts.
    :raises SweepInterrupted: SIGINT or SIGTERM stopped the sweep; run it again to resume.
    """
    preflight(cpus_per_run, address, max_concurrent)
    epoch_seconds: dict[tuple[str, str], float] = {}
    if sweep_file is not None:
        read = read_sweep_file(sweep_file, overrides, only)
        trials, epoch_seconds = read.trials, read.epoch_seconds
    else:
        if only:
            raise ConfigError("--only selects envs or methods of a sweep file; give the sweep file")
        trials = grid_trials(config_name, [0, 1] if seeds is None else list(seeds), grid, overrides)
    if skip:
        trials = leave_out(trials, skip, read_sweep_file(sweep_file, overrides).trials if sweep_file else trials)
        if not trials:  # all landed elsewhere: a summary of no trials would overwrite the one there with nothing
            echo(f"sweep: --skip leaves out every trial of this sweep; nothing to run in {run_root}")
            return SweepResult([], None)
    run_root = Path(run_root).resolve()
    if run_root.exists() and not run_root.is_dir():
        raise ConfigError(f"--run-root {run_root} is a file; give a folder for the runs")
    with RunRootLock(run_root) as lock:
        planned = plan(trials, run_root, cpus_per_run)
        check_trials_can_start(planned, local=address is None)
        run_root.mkdir(parents=True, exist_ok=True)
        lock.acquire()
        clear_first_saves(planned)
        counts = {state: sum(item.state == state for item in planned) for state in (FINISHED, RESUME, NEW)}
        echo(f"sweep of {len(planned)} trial(s) in {run_root}: {counts[FINISHED]} finished, {counts[RESUME]} to "
             f"resume, {counts[NEW]} new")
        outcomes = run_trials(planned, cpus_per_run, address, echo, max_concurrent)
        from pretrain.sweep.summary import summarize, write_summary

        out = write_summary(summarize(trials, run_root, epoch_seconds), run_root / SUMMARY_DIR)
    return SweepResult(outcomes, out)
