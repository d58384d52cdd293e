"""Several training runs at once through Ray Tune: seeds and a grid of config overrides, on this machine or on a
Ray cluster (``address="auto"``). Each trial is an ordinary run folder under ``run_root`` (named for its
settings), so a trial stopped with its cluster resumes from its run state when the sweep is started again, and
every run can be inspected, resumed or exported with the other commands.

    metra-pretrain sweep --config ant --seeds 0 1 --grid gradient_steps=50,100 --run-root runs/sweep --cpus-per-run 2
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from pretrain.run.config import ConfigError, load_config


def trial_name(params: dict[str, Any]) -> str:
    """The run folder name of a trial: its settings, sorted, e.g. ``gradient_steps=100-seed=1``."""
    return "-".join(f"{k}={v}" for k, v in sorted(params.items()))


def parse_grid(items: list[str]) -> dict[str, list[Any]]:
    """``["gradient_steps=50,100", "learning_rate=1e-4,4e-4"]`` -> {key: [values]} (values parsed as YAML)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"grid entry {item!r} must look like key=v1,v2")
        key, values = item.split("=", 1)
        grid[key.strip()] = [yaml.safe_load(v) for v in values.split(",")]
    return grid


def _trial(params: dict[str, Any], config_name: str, overrides: list[str], run_root: str) -> None:
    """One Ray Tune trial: train (or resume) the run of these settings, reporting every evaluation."""
    from ray import tune

    from pretrain.run.trainer import read_run_config, train

    run_dir = Path(run_root) / trial_name(params)
    settings = [*overrides, *(f"{k}={v}" for k, v in params.items())]
    if (run_dir / "run_state").exists():
        config = read_run_config(run_dir, {"epochs": load_config(config_name, settings).epochs})
        resume = True
    else:
        config, resume = load_config(config_name, settings), False
    train(config, run_dir, resume=resume, verbose=0, on_evaluation=lambda row: tune.report(dict(row)))


def sweep(config_name: str, run_root: str | Path, seeds: list[int], grid: dict[str, list[Any]] | None = None,
          overrides: list[str] | None = None, cpus_per_run: int = 1, address: str | None = None) -> list[dict]:
    """Train every combination of ``seeds`` and ``grid`` with Ray Tune; return each trial's last evaluation.

    :param config_name: a bundled config or a YAML file.
    :param run_root: the folder that receives one run folder per trial.
    :param seeds: the seeds to train.
    :param grid: config keys and the values to try (every combination is a trial).
    :param overrides: ``key=value`` overrides common to all trials.
    :param cpus_per_run: CPUs Ray reserves per trial (also the trial's torch threads).
    :param address: a Ray cluster to join (``"auto"``); None starts Ray on this machine.
    """
    if isinstance(cpus_per_run, bool) or not isinstance(cpus_per_run, int) or cpus_per_run < 1:
        raise ConfigError(f"--cpus-per-run (CPUs and torch threads of each run) must be an integer >= 1, "
                          f"got {cpus_per_run!r}")
    import ray
    from ray import tune

    grid = dict(grid or {})
    overrides = [*(overrides or []), f"torch_threads={cpus_per_run}"]
    # Every trial's config is checked here, so that a typo fails before any trial starts.
    for values in [dict(zip(grid, combo)) for combo in _combinations(grid)]:
        for seed in seeds:
            load_config(config_name, [*overrides, *(f"{k}={v}" for k, v in {**values, "seed": seed}.items())])
    run_root = Path(run_root).resolve()
    run_root.mkdir(parents=True, exist_ok=True)
    ray.init(address=address, num_cpus=None if address else os.cpu_count(), include_dashboard=False,
             log_to_driver=False, ignore_reinit_error=True)
    try:
        trainable = tune.with_resources(
            tune.with_parameters(_trial, config_name=config_name, overrides=overrides, run_root=str(run_root)),
            {"cpu": cpus_per_run})
        space = {"seed": tune.grid_search(list(seeds)), **{k: tune.grid_search(v) for k, v in grid.items()}}
        tuner = tune.Tuner(trainable, param_space=space,
                           run_config=tune.RunConfig(name="sweep", storage_path=str(run_root / "ray"), verbose=0))
        results = tuner.fit()
        errors = [str(r.error) for r in results if r.error]
        if errors:
            raise RuntimeError(f"{len(errors)} trial(s) failed; the first: {errors[0]}")
        return [{**r.config, **{k: v for k, v in (r.metrics or {}).items() if k in ("epoch", "policy_coverage")}}
                for r in results]
    finally:
        ray.shutdown()


def _combinations(grid: dict[str, list[Any]]) -> list[tuple]:
    import itertools

    return list(itertools.product(*grid.values())) if grid else [()]
