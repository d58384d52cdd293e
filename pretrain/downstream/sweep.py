"""The downstream campaign as one resumable sweep (seeds x tasks x agents) through the project's Ray set-up
(:mod:`pretrain.sweep`: Ray started here or joined, SIGINT / SIGTERM stop it cleanly, a watchdog ends Ray's
processes whatever ends the sweep, one sweep per run root).

A sweep file::

    seeds: [0, 1, 2, 3, 4, 5, 6, 7]
    tasks:                      # task -> low-level steps of each learned run
      ant_multigoals: 2000000
    agents:
      controller: [paper, v0.3]     # learned agents -> their protocols
      flat: [paper]
      references: [random, untrained, zero_shot, zero_shot_every_step, lookahead]
    eval_every: 100000          # low-level steps between evaluations of a learned run
    eval_episodes: 10           # episodes of those evaluations
    final_episodes: 50          # of the first and last evaluations, and of the reference controllers

Every seed x task x agent (x protocol) is a run (:class:`~pretrain.downstream.runs.RunSpec`) whose file goes to
``RUN_ROOT/runs/NAME.json``. Running the same sweep again skips the runs whose file is finished with the same
settings and runs the others: a learned run from its run state in ``RUN_ROOT/run_states/NAME/`` (saved after every
evaluation, removed when the run finishes: :mod:`pretrain.downstream.run_state`), else from its start. The reference
controllers run first (minutes), then the learned agents in seed order, so a sweep stopped part-way has every
agent of the first seeds.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pretrain.config import ConfigError
from pretrain.downstream.protocol import PROTOCOLS, TASKS
from pretrain.downstream.reference import REFERENCES
from pretrain.downstream.run_state import remove_run_state
from pretrain.downstream.runs import AGENTS, LEARNED, RunSpec, is_finished, read_run

TOP_KEYS = ("seeds", "tasks", "agents", "eval_every", "eval_episodes", "final_episodes")
RUNS = "runs"  # RUN_ROOT/runs/NAME.json
ERRORS = "errors"  # RUN_ROOT/errors/NAME.txt: the traceback of a failed run (removed when it succeeds)
UNTRAINED = "untrained_skills"  # RUN_ROOT/untrained_skills/: the untrained skill checkpoints of the references
STATES = "run_states"  # RUN_ROOT/run_states/NAME/: the run state of a learned run not yet finished


def _fail(path: Path, message: str) -> ConfigError:
    return ConfigError(f"downstream sweep file {path}: {message}")


def _positive_int(path: Path, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(path, f"{what} must be a positive integer, got {value!r}")
    return value


def read_sweep_file(path: str | Path, overrides: dict[str, int] | None = None) -> list[RunSpec]:
    """The runs of a downstream sweep file (module docstring), in the order they run.

    :param overrides: ``steps`` (every task's budget), ``eval_every``, ``eval_episodes``, ``final_episodes``
        replacing the file's (a smoke test at tiny budgets).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ConfigError(f"cannot read the downstream sweep file {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise _fail(path, f"not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise _fail(path, "must be a mapping with seeds, tasks and agents")
    unknown = [key for key in data if key not in TOP_KEYS]
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r}; the keys are {', '.join(TOP_KEYS)}")
    for key in ("seeds", "tasks", "agents"):
        if key not in data:
            raise _fail(path, f"{key} is missing")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int and s >= 0 for s in seeds) \
            or len(set(seeds)) != len(seeds):
        raise _fail(path, f"seeds must be a list of distinct integers >= 0, got {seeds!r}")
    tasks = data["tasks"]
    if not isinstance(tasks, dict) or not tasks:
        raise _fail(path, "tasks must map task names to low-level steps")
    for name, steps in tasks.items():
        if name not in TASKS:
            raise _fail(path, f"unknown task {name!r}; the tasks are {', '.join(sorted(TASKS))}")
        _positive_int(path, steps, f"tasks.{name}")
    agents = data["agents"]
    if not isinstance(agents, dict) or not agents:
        raise _fail(path, "agents must map controller / flat to protocols and references to names")
    runs_of: list[tuple[str, str | None]] = []
    for agent, values in agents.items():
        known = PROTOCOLS if agent in LEARNED else REFERENCES if agent == "references" else None
        if known is None:
            raise _fail(path, f"unknown agent {agent!r}; give controller, flat or references")
        if not isinstance(values, list) or not values or any(v not in known for v in values):
            raise _fail(path, f"agents.{agent} must list some of {', '.join(sorted(known))}, got {values!r}")
        runs_of += [(agent, v) for v in values] if agent in LEARNED else [(v, None) for v in values]
    settings = {key: _positive_int(path, data.get(key, default), key)
                for key, default in (("eval_every", 100_000), ("eval_episodes", 10), ("final_episodes", 50))}
    overrides = dict(overrides or {})
    settings.update({k: v for k, v in overrides.items() if k != "steps" and v is not None})
    settings["eval_episodes"] = min(settings["eval_episodes"], settings["final_episodes"])  # a subset of them
    # The reference controllers first (minutes: each task's attainable range is known early), then the learned
    # agents seed by seed.
    references = [RunSpec(name, agent, seed, final_episodes=settings["final_episodes"],
                          eval_episodes=settings["eval_episodes"])
                  for seed in seeds for name in tasks for agent, protocol_name in runs_of if protocol_name is None]
    learned = [RunSpec(name, agent, seed, protocol_name, overrides.get("steps") or steps, **settings)
               for seed in seeds for name, steps in tasks.items() for agent, protocol_name in runs_of
               if protocol_name is not None]
    return references + learned


def select(specs: list[RunSpec], only: list[str]) -> list[RunSpec]:
    """The runs of ``specs`` that ``only`` names: names of one kind (tasks; agents; protocols) add up, kinds narrow
    down, so ``["controller", "flat"]`` keeps both learned agents and ``["controller", "paper"]`` the paper's
    controller alone (not flat SAC under the paper's protocol, nor the ``v0.3`` controller).

    :raises ConfigError: for a name that is no task, agent or protocol, or when nothing is left.
    """
    kinds = {"task": set(TASKS), "agent": set(AGENTS), "protocol": set(PROTOCOLS)}
    wanted: dict[str, set[str]] = {}
    for name in only:
        kind = next((kind for kind, names in kinds.items() if name in names), None)
        if kind is None:
            raise ConfigError(f"--only {name!r} is no task, agent or protocol; the tasks are "
                              f"{', '.join(sorted(TASKS))}, the agents {', '.join(AGENTS)}, the protocols "
                              f"{', '.join(sorted(PROTOCOLS))}")
        wanted.setdefault(kind, set()).add(name)
    kept = [spec for spec in specs if all(getattr(spec, kind) in names for kind, names in wanted.items())]
    if not kept:
        raise ConfigError(f"--only {' '.join(only)} selects no run of the sweep file")
    return kept


@dataclass
class RunOutcome:
    name: str
    outcome: str  # "finished", "already finished" or "failed"
    error: str | None = None


def _error_path(run_root: Path, name: str) -> Path:
    return run_root / ERRORS / f"{name}.txt"


def run_in_worker(tune_config: dict[str, Any], specs: dict[str, dict[str, Any]], run_root: str) -> None:
    """One Ray Tune trial (in a Ray worker): one downstream run; a failure leaves its traceback in ``errors/``."""
    from pretrain.downstream.runs import run

    name, root = tune_config["trial"], Path(run_root)
    error = _error_path(root, name)
    try:
        error.unlink(missing_ok=True)
        run(RunSpec(**specs[name]), root / RUNS, root / UNTRAINED, root / STATES)
    except Exception:
        error.parent.mkdir(parents=True, exist_ok=True)
        error.write_text(traceback.format_exc())
        raise


def _error_line(run_root: Path, name: str) -> str:
    try:
        lines = [line for line in _error_path(run_root, name).read_text().splitlines() if line.strip()]
    except OSError:
        return "the run's worker ended without a Python error (killed, or out of memory)"
    return f"{lines[-1] if lines else 'unknown error'} (traceback in {_error_path(run_root, name)})"


def _fit(pending: list[RunSpec], run_root: Path, cpus_per_run: int, address: str | None,
         echo: Callable[[str], None], scratch: str, max_concurrent: int | None = None) -> dict[str, Any]:
    """Start Ray (:func:`pretrain.sweep.ray_runner.start_ray`), run the pending runs, return each run's error."""
    from ray import tune

    from pretrain.sweep.ray_runner import runs_at_once, start_ray, trial_errors

    cpus = start_ray(address, cpus_per_run)
    echo(f"running {len(pending)} run(s), {runs_at_once(len(pending), cpus, cpus_per_run, max_concurrent)} at a time")

    class Progress(tune.Callback):
        def on_trial_complete(self, iteration: int, trials: list, trial, **info) -> None:
            row = read_run(run_root / RUNS / f"{trial.config['trial']}.json") or {}
            echo(f"run {trial.config['trial']}: finished, return {row.get('final', {}).get('mean')}")

        def on_trial_error(self, iteration: int, trials: list, trial, **info) -> None:
            echo(f"run {trial.config['trial']} failed: {_error_line(run_root, trial.config['trial'])}")

    specs = {spec.name: spec.settings() for spec in pending}
    trainable = tune.with_resources(tune.with_parameters(run_in_worker, specs=specs, run_root=str(run_root)),
                                    {"cpu": cpus_per_run})
    quiet = [logging.getLogger(name) for name in ("ray.tune", "ray.train", "ray.air")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:  # one line per finished or failed run (Progress), not Tune's own
        logger.setLevel(logging.CRITICAL)
    try:
        tuner = tune.Tuner(trainable, param_space={"trial": tune.grid_search(list(specs))},
                           tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent),
                           run_config=tune.RunConfig(name="downstream", storage_path=scratch, verbose=0,
                                                     callbacks=[Progress()]))
        return trial_errors(tuner.fit(), specs)
    finally:
        for logger, level in zip(quiet, levels):
            logger.setLevel(level)


def sweep(specs: list[RunSpec], run_root: str | Path, cpus_per_run: int = 1, address: str | None = None,
          echo: Callable[[str], None] = print, max_concurrent: int | None = None) -> list[RunOutcome]:
    """Run every run of ``specs`` whose file in ``run_root/runs`` is not finished with the same settings.

    :param max_concurrent: the most runs at once (None: as many as the CPUs allow); this sweep's share of a cluster
        that other sweeps join too (:func:`pretrain.sweep.ray_runner.runs_at_once`).
    :raises ConfigError: bad input (two runs of one name, a file where the run root should be), Ray that cannot run.
    :raises SweepInterrupted: SIGINT or SIGTERM stopped the sweep; the same call again resumes it.
    """
    from pretrain.sweep import RunRootLock
    from pretrain.sweep.ray_runner import fit_until_stopped, preflight

    preflight(cpus_per_run, address, max_concurrent)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"runs {', '.join(twice[:3])} are listed twice; each run once")
    run_root = Path(run_root).resolve()
    if run_root.exists() and not run_root.is_dir():
        raise ConfigError(f"the run root {run_root} is a file; give a folder for the runs")
    run_root.mkdir(parents=True, exist_ok=True)
    with RunRootLock(run_root):
        done = {spec.name for spec in specs if is_finished(run_root / RUNS / f"{spec.name}.json", spec)}
        for name in done:  # a run killed between its last write and removing its state
            remove_run_state(run_root / STATES / name)
        pending = [spec for spec in specs if spec.name not in done]
        echo(f"downstream sweep of {len(specs)} run(s) in {run_root}: {len(done)} finished, {len(pending)} to run")
        errors: dict[str, Any] = {}
        if pending:
            errors = fit_until_stopped(lambda scratch: _fit(pending, run_root, cpus_per_run, address, echo, scratch,
                                                             max_concurrent),
                                       prefix="metra-downstream-tune-")
    return [RunOutcome(spec.name, "already finished") if spec.name in done else
            RunOutcome(spec.name, "failed", _error_line(run_root, spec.name)) if errors.get(spec.name) is not None
            else RunOutcome(spec.name, "finished") for spec in specs]

