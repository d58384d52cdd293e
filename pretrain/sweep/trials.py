"""The trials of a sweep: one run folder each, built from command-line options (seeds x a grid) or a sweep file,
and checked together before any of them starts.

A trial is a config name and its ``key=value`` overrides. :func:`plan` builds every trial's config, refuses
duplicates and an option of one algorithm given to another, and finds what each trial's run folder holds:
nothing yet (``new``), a run to continue (``resume``), or a run that has reached its ``epochs`` (``finished``,
not run again). A run folder whose saved config differs from the trial's in a key a resumed run may not change is
refused, so that a restarted sweep never continues a run under settings it was not trained with.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pretrain.config import ALGORITHM_KEYS, ConfigError, PretrainConfig, load_config

# What the sweep sets itself in every trial: the torch threads follow --cpus-per-run, and seeds are their own list.
SWEEP_KEYS = {"torch_threads": "--cpus-per-run sets it for every run of a sweep",
              "seed": "give seeds with --seeds (or `seeds:` in a sweep file), not as a setting"}
NEW, RESUME, FINISHED = "new", "resume", "finished"
# Keys a run fills in at its start when its config leaves them None, and saves in its config.yaml: the fitted
# normaliser's statistics (pretrain/run/envs.py). A trial that leaves them None asks for the run's own, not for others.
FILLED_BY_THE_RUN = frozenset({"normalizer_stats"})
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.=,+-]")


@dataclass(frozen=True)
class Trial:
    """One run of a sweep.

    :param name: its run folder under the sweep's run root, e.g. ``ant-lsd-seed=0`` or ``gradient_steps=100-seed=1``.
    :param config_name: a bundled config or a YAML file.
    :param overrides: ``key=value`` overrides, in the order they apply (later ones win).
    :param env: the environment label the summary groups by (a sweep file's env, or the config's name).
    :param method: the label the summary averages over seeds (a sweep file's method, or the grid values).
    :param seed: the run's seed.
    """

    name: str
    config_name: str
    overrides: tuple[str, ...]
    env: str
    method: str
    seed: int

    def config(self, cpus_per_run: int) -> PretrainConfig:
        """The trial's config. The run's processes fit the CPUs the sweep reserves for it: its torch threads are
        those CPUs, less one per worker process of an overlapped collector (which collects on its own core)."""
        try:
            config = load_config(self.config_name, [*self.overrides, f"seed={self.seed}"])
            workers = config.collector_workers if config.collector == "overlapped" else 0
            return load_config(self.config_name, [*self.overrides, f"seed={self.seed}",
                                                  f"torch_threads={max(1, cpus_per_run - workers)}"])
        except ConfigError as error:
            raise ConfigError(f"trial {self.name}: {error}") from None


@dataclass
class PlannedTrial:
    """A trial with its config and what its run folder holds (``new``, ``resume`` or ``finished``)."""

    trial: Trial
    config: PretrainConfig
    run_dir: Path
    state: str
    epoch: int = 0  # the epoch of its saved run state


def folder_name(text: str) -> str:
    """``text`` as one folder name: path separators and other odd characters become ``_``."""
    return _SAFE_NAME.sub("_", text)


def setting(key: str, value: Any) -> str:
    """``key=value`` with the value written as YAML, so that the config reads back exactly this value (a list, a
    mapping, a string that looks like a number)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
    return f"{key}={text.removesuffix('...').strip()}"


def _name_part(value: Any) -> str:
    """A grid value in a folder name: scalars as they print (``100``, ``1e-4``, ``lsd``), lists and mappings as
    compact YAML (``[8,8]``, which :func:`folder_name` makes ``_8,8_``)."""
    if isinstance(value, (list, dict)):
        return setting("", value)[1:].replace(" ", "")
    return str(value)


def trial_name(params: dict[str, Any]) -> str:
    """The run folder name of a trial of a grid: its settings, sorted, e.g. ``gradient_steps=100-seed=1`` or
    ``encoder_channels=_8,8_-seed=0``."""
    return folder_name("-".join(f"{k}={_name_part(v)}" for k, v in sorted(params.items())))


def refuse_sweep_keys(keys: list[str], where: str) -> None:
    """Refuse a key the sweep sets itself (``seed``, ``torch_threads``) given as a setting."""
    for key in keys:
        if key in SWEEP_KEYS:
            raise ConfigError(f"{where} sets {key}: {SWEEP_KEYS[key]}")


def refuse_duplicates(values: list[Any], what: str) -> None:
    """One clear line for a value listed twice (two trials that would train the same run)."""
    seen: set[str] = set()
    for value in values:
        if repr(value) in seen:
            raise ConfigError(f"{what} lists {value!r} twice; each value is one run, so give it once")
        seen.add(repr(value))


def parse_grid(items: list[str]) -> dict[str, list[Any]]:
    """``["gradient_steps=50,100", "encoder_channels=[8,8],[16,16]"]`` -> {key: [values]}.

    The values after ``=`` are read as the items of one YAML flow sequence (the text inside ``[...]``), so a value
    may itself be a list (``[8,8]``) or a mapping (``{obs_type: state}``), and a comma inside brackets or quotes
    does not split it. A key given twice, a value listed twice and the keys the sweep sets itself are refused (each
    would make trials that replace or duplicate others)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--grid {item!r} must look like key=v1,v2")
        key, text = (part.strip() for part in item.split("=", 1))
        refuse_sweep_keys([key], f"--grid {item}")
        if key in grid:
            raise ConfigError(f"--grid {key} is given twice; put all its values in one --grid {key}=V1,V2,...")
        try:
            values = yaml.safe_load(f"[{text}]")
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise ConfigError(f"--grid {item!r}: the values are not a comma-separated YAML list ({problem}); write "
                              f"them as {key}=V1,V2, a list value in brackets ({key}=[8,8],[16,16]), a mapping in "
                              "braces, a string with commas in quotes") from None
        if not values:
            raise ConfigError(f"--grid {item!r} gives no value; give {key}=V1,V2,...")
        refuse_duplicates(values, f"--grid {key}")
        grid[key] = values
    return grid


def grid_trials(config_name: str, seeds: list[int], grid: dict[str, list[Any]] | None = None,
                overrides: list[str] | None = None) -> list[Trial]:
    """Every combination of ``seeds`` and ``grid`` (a trial each), with ``overrides`` common to all."""
    grid = dict(grid or {})
    overrides = list(overrides or [])
    set_keys = [item.split("=", 1)[0].strip() for item in overrides]
    refuse_sweep_keys(set_keys, "--set")
    refuse_sweep_keys(list(grid), "--grid")
    both = sorted(set(set_keys) & set(grid))
    if both:
        raise ConfigError(f"{', '.join(both)} is given by both --set and --grid; keep one")
    if not seeds:
        raise ConfigError("--seeds needs at least one seed")
    refuse_duplicates(list(seeds), "--seeds")
    env = Path(config_name).stem
    trials = []
    for combo in itertools.product(*grid.values()):
        params = dict(zip(grid, combo))
        method = trial_name(params) if params else "default"
        for seed in seeds:
            trials.append(Trial(trial_name({**params, "seed": seed}), config_name,
                                (*overrides, *(setting(k, v) for k, v in params.items())), env, method, int(seed)))
    return trials


def foreign_options(algo: str, keys: list[str]) -> list[tuple[str, str]]:
    """The keys (with their algorithm) among ``keys`` that are options of another algorithm than ``algo``."""
    return [(key, owner) for key in keys for owner, owned in ALGORITHM_KEYS.items() if key in owned and owner != algo]


def _saved_state(run_dir: Path) -> tuple[str, int]:
    """(``new`` | ``resume``, epoch) of a run folder, from its newest complete run state (nothing is moved)."""
    from pretrain.run.run_state import ResumeError, run_state_dir

    if not (run_dir / "run_state").is_dir():
        return NEW, 0
    try:
        folder = run_state_dir(run_dir, recover=False)
    except ResumeError:  # killed during its very first save: nothing to continue
        return NEW, 0
    return RESUME, int(json.loads((folder / "state.json").read_text())["epoch"])


def clear_first_saves(planned: list[PlannedTrial]) -> None:
    """Remove what a save killed before any run state was complete left in a new trial's ``run_state/``, so that
    the trial starts afresh (anything else found there is left for the trial to report)."""
    from pretrain.run.run_state import discard_unsaved_state

    for item in planned:
        if item.state == NEW:
            discard_unsaved_state(item.run_dir)


def _check_saved_config(planned: PlannedTrial, resumable_keys: frozenset[str]) -> None:
    """Refuse a trial whose run folder was trained with another value of a key a resumed run may not change."""
    from pretrain.run.run_config import read_run_config

    try:
        saved = read_run_config(planned.run_dir).to_dict()
    except ConfigError as error:
        raise ConfigError(f"trial {planned.trial.name}: {error}") from None
    wanted = planned.config.to_dict()
    fixed = {k: (saved[k], v) for k, v in wanted.items() if k not in resumable_keys and saved.get(k) != v
             and not (k in FILLED_BY_THE_RUN and v is None)}
    if fixed:
        changes = ", ".join(f"{k}={old!r} (the sweep now gives {new!r})" for k, (old, new) in sorted(fixed.items()))
        raise ConfigError(f"trial {planned.trial.name}: its run folder {planned.run_dir} was trained with {changes}; "
                          f"a resumed run may change only {', '.join(sorted(resumable_keys))}. Restore the setting, "
                          "use another --run-root, or delete that run folder to start the trial afresh")


def plan(trials: list[Trial], run_root: Path, cpus_per_run: int) -> list[PlannedTrial]:
    """Check every trial before any starts (configs, duplicates, run folders) and find what each has to do.
    Reads only: nothing is written or moved."""
    from pretrain.run.run_config import RESUMABLE_KEYS

    planned, names, configs = [], {}, {}
    for trial in trials:
        config = trial.config(cpus_per_run)
        given = [item.split("=", 1)[0].strip() for item in trial.overrides]
        for key, owner in foreign_options(config.algo, given):
            raise ConfigError(f"trial {trial.name} runs algo {config.algo}, but its settings give {key}, an option of "
                              f"algo {owner}; give it only to {owner} runs")
        if trial.name in names:
            raise ConfigError(f"trials {names[trial.name]} and {trial.name} would share the run folder {trial.name}")
        key = json.dumps(config.to_dict(), sort_keys=True, default=str)
        if key in configs:
            raise ConfigError(f"trials {configs[key]} and {trial.name} are the same run (equal configs); "
                              "remove one of them")
        names[trial.name], configs[key] = trial.name, trial.name
        item = PlannedTrial(trial, config, run_root / trial.name, NEW)
        if (item.run_dir / "config.yaml").is_file() or (item.run_dir / "run_state").is_dir():
            item.state, item.epoch = _saved_state(item.run_dir)
            if item.state == RESUME:
                _check_saved_config(item, RESUMABLE_KEYS)
                if item.epoch >= config.epochs:
                    item.state = FINISHED
        planned.append(item)
    return planned


def check_trials_can_start(planned: list[PlannedTrial], local: bool = True) -> None:
    """What ``train`` checks before it writes anything, for every trial that will run, before Ray starts: the
    config's environment builds (a known id, keywords it takes, continuous actions, the normaliser's size) and,
    when the trials run on this machine (``local``), the device exists here and the replay buffer and networks fit
    its memory. On a cluster the device and memory are the workers', so those two are left to each trial.
    Configs that differ only in their seed are checked once.

    :raises ConfigError: the first trial that could not start, named.
    """
    from pretrain.algorithms.common.device import resolve_device
    from pretrain.algorithms.common.memory import check_memory
    from pretrain.run.envs import env_factory

    checked: set[str] = set()
    for item in planned:
        if item.state == FINISHED:
            continue
        key = json.dumps({**item.config.to_dict(), "seed": None}, sort_keys=True, default=str)
        if key in checked:
            continue
        checked.add(key)
        try:
            device = resolve_device(item.config.device) if local else None
            env = env_factory(item.config)()
            try:
                if device is not None:
                    check_memory(item.config, env.observation_space, env.action_space, device)
            finally:
                env.close()
        except ConfigError as error:
            raise ConfigError(f"trial {item.trial.name}: {error}") from None
