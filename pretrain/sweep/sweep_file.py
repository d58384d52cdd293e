"""A sweep file: the trials of a comparison in one YAML file (``metra-pretrain sweep FILE --run-root DIR``).

::

    seeds: [0, 1]
    envs:                       # label -> bundled config or YAML file (relative to this file); or `config: ant`
      ant: ant
      half_cheetah: half_cheetah
    epochs:                     # the budget: env -> epochs, or env -> {method: epochs}
      ant: 2100
      half_cheetah: {metra: 1050, lsd: 1050}
    epoch_seconds:              # optional, same shape: idle seconds per epoch, for the summary's hours axis
      ant: 1.7
    set: {snapshot_every: 100}  # optional: settings of every trial
    methods:                    # label -> its settings; the label is the algo unless the settings give `algo`
      metra: {}
      lsd: {}
      cic_k16: {algo: cic, cic_knn_k: 16}

Each env x method x seed is a trial, run folder ``ENV-METHOD-seed=N``. Everything is checked when the file is
read: unknown keys, methods and envs, an option of one algorithm given to another, a budget missing for a method.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pretrain.config import ALGORITHMS, ConfigError, builtin_configs
from pretrain.sweep.trials import Trial, folder_name, foreign_options, refuse_duplicates, refuse_sweep_keys, setting

TOP_KEYS = ("seeds", "config", "envs", "epochs", "epoch_seconds", "set", "methods")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+]*$")  # no "-": it separates env, method and seed in folder names


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(f"{key!r} is given twice in one mapping (line {key_node.start_mark.line + 1}); "
                                  "keep one")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


@dataclass
class SweepFile:
    """The trials of a sweep file, and what its summary needs to know."""

    path: Path
    trials: list[Trial]
    epoch_seconds: dict[tuple[str, str], float] = field(default_factory=dict)  # (env, method) -> idle s per epoch


def _fail(path: Path, message: str) -> ConfigError:
    return ConfigError(f"sweep file {path}: {message}")


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"


def _mapping(path: Path, value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, f"{what} must be a mapping, got {value!r}")
    return value


def _per_method(path: Path, table: dict[str, Any], key: str, env: str, methods: list[str], kind: type,
                required: bool) -> dict[str, Any]:
    """``table[env]``, a value for every method or a mapping method -> value, as {method: value}."""
    if env not in table:
        if required:
            raise _fail(path, f"{key} has no entry for env {env!r}; give `{key}: {{{env}: N}}`")
        return {}
    value = table[env]
    values = value if isinstance(value, dict) else {method: value for method in methods}
    for method in values:
        if method not in methods:
            raise _fail(path, f"{key}.{env} names method {method!r}, which `methods` does not list"
                              f"{_suggest(method, methods)}")
    for method in methods:
        if method not in values:
            if required:
                raise _fail(path, f"{key}.{env} has no value for method {method!r}")
            continue
        number = values[method]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or (kind is int and not isinstance(
                number, int)) or number <= 0:
            raise _fail(path, f"{key}.{env}.{method} must be a positive {kind.__name__}, got {number!r}")
    return values


def _config_name(path: Path, name: Any, env: str) -> str:
    if not isinstance(name, str) or not name:
        raise _fail(path, f"env {env!r} must name a bundled config {builtin_configs()} or a YAML file, got {name!r}")
    if name in builtin_configs():
        return name
    file = Path(name) if Path(name).is_absolute() else path.parent / name
    return str(file)  # load_config gives the clear error for a missing or broken file


def read_sweep_file(path: str | Path, overrides: list[str] | None = None, only: list[str] | None = None) -> SweepFile:
    """The trials of a sweep file (see the module docstring), with ``overrides`` applied to every trial last.

    :param path: the YAML file.
    :param overrides: ``key=value`` settings of every trial (the command line's ``--set``).
    :param only: env and method labels to keep (all when None): labels of one kind add up, the two kinds narrow
        down (``["ant", "cic", "dads"]``: CIC and DADS on Ant only).
    """
    path = Path(path)
    refuse_sweep_keys([item.split("=", 1)[0].strip() for item in overrides or []], "--set")
    if not path.is_file():
        raise ConfigError(f"sweep file {path} does not exist" if not path.exists() else
                          f"sweep file {path} is not a file")
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)
    except ConfigError as error:
        raise _fail(path, str(error)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise _fail(path, f"not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise _fail(path, "must be a mapping with seeds, envs (or config), epochs and methods")
    for key in data:
        if key not in TOP_KEYS:
            raise _fail(path, f"unknown key {key!r}{_suggest(str(key), list(TOP_KEYS))}")
    for key in ("seeds", "epochs", "methods"):
        if key not in data:
            raise _fail(path, f"{key} is missing")

    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int and s >= 0 for s in seeds):
        raise _fail(path, f"seeds must be a list of integers >= 0, got {seeds!r}")
    refuse_duplicates(seeds, f"sweep file {path}: seeds")

    if ("config" in data) == ("envs" in data):
        raise _fail(path, "give either `config: NAME` (one env) or `envs: {LABEL: CONFIG, ...}`")
    envs = ({Path(str(data["config"])).stem: data["config"]} if "config" in data
            else _mapping(path, data["envs"], "envs"))
    if not envs:
        raise _fail(path, "envs is empty")

    methods = _mapping(path, data["methods"], "methods")
    if not methods:
        raise _fail(path, "methods is empty")
    common = [setting(k, v) for k, v in _mapping(path, data.get("set"), "set").items()]
    refuse_sweep_keys([item.split("=", 1)[0] for item in common], f"sweep file {path}: set")
    if any(item.startswith("epochs=") for item in common):
        raise _fail(path, "set gives epochs; budgets go in `epochs:` (per env, or per env and method)")
    if any(item.startswith("algo=") for item in common):
        raise _fail(path, "set gives algo; each method names its own (its label, or `algo:` in its settings)")
    for label in [*envs, *methods]:
        if not isinstance(label, str) or not _LABEL.match(label):
            raise _fail(path, f"label {label!r} must be letters, digits, '_', '.' or '+' (it names run folders)")

    settings: dict[str, list[str]] = {}
    for method, entry in methods.items():
        entry = _mapping(path, entry, f"method {method!r}")
        algo = entry.get("algo", method)
        if algo not in ALGORITHMS:
            what = f"its algo {algo!r}" if "algo" in entry else f"method {method!r} (give `algo:` for a variant)"
            raise _fail(path, f"unknown method: {what} is not one of {', '.join(ALGORITHMS)}"
                              f"{_suggest(str(algo), list(ALGORITHMS))}")
        refuse_sweep_keys(list(entry), f"sweep file {path}: method {method!r}")
        if "epochs" in entry:
            raise _fail(path, f"method {method!r} gives epochs; budgets go in `epochs:` (per env and method)")
        for key, owner in foreign_options(algo, list(entry)):
            raise _fail(path, f"method {method!r} runs algo {algo}, but gives {key}, an option of algo {owner}; "
                              f"move it to a {owner} method or remove it")
        for key, owner in foreign_options(algo, [item.split("=", 1)[0] for item in common]):
            raise _fail(path, f"set gives {key}, an option of algo {owner}, to every method, but method {method!r} "
                              f"runs algo {algo}; move it under the {owner} method(s)")
        settings[method] = [f"algo={algo}", *(setting(k, v) for k, v in entry.items() if k != "algo")]

    if only:
        unknown = [name for name in only if name not in envs and name not in methods]
        if unknown:
            raise _fail(path, f"--only {unknown[0]!r} is neither an env nor a method of this file"
                              f"{_suggest(unknown[0], [*envs, *methods])}")
    budgets = _mapping(path, data["epochs"], "epochs")
    seconds = _mapping(path, data.get("epoch_seconds"), "epoch_seconds")
    for table, key in ((budgets, "epochs"), (seconds, "epoch_seconds")):
        for env in table:
            if env not in envs:
                raise _fail(path, f"{key} names env {env!r}, which `envs` does not list"
                                  f"{_suggest(str(env), list(envs))}")

    trials, epoch_seconds = [], {}
    config_names, env_budgets = {}, {}
    only_envs, only_methods = [n for n in only or [] if n in envs], [n for n in only or [] if n in methods]
    for env, config in envs.items():
        config_names[env] = _config_name(path, config, env)
        env_budgets[env] = _per_method(path, budgets, "epochs", env, list(methods), int, required=True)
        for method, value in _per_method(path, seconds, "epoch_seconds", env, list(methods), float,
                                         required=False).items():
            epoch_seconds[(env, method)] = float(value)
    # Seeds outermost: trials run in this order, so a sweep stopped part-way has compared every method on the
    # first seed before it starts the second.
    for seed in seeds:
        for env in envs:
            for method in methods:
                if only_envs and env not in only_envs or only_methods and method not in only_methods:
                    continue
                trials.append(Trial(folder_name(f"{env}-{method}-seed={seed}"), config_names[env],
                                    (*common, *settings[method], f"epochs={env_budgets[env][method]}",
                                     *(overrides or [])), env, method, seed))
    if not trials:
        raise _fail(path, f"--only {' '.join(only or [])} selects no trial")
    return SweepFile(path, trials, epoch_seconds)
