"""The summary of a sweep over seeds: per env and method, the policy coverage curve (mean, sample standard
deviation, min and max over seeds at each evaluation), the coverage at the end, and one figure with a band per
method, written as ``summary.json``, ``figure.png`` and ``table.md``; the total coverage (bins of every training
trajectory so far, the paper's measure for the pure exploration methods) likewise, as ``total_curve`` and
``total_coverage.png``.

Read from the run folders (``eval/coverage.json``), so it can be written at any time, also while the sweep
runs; a finished run whose folder is gone or behind (run states do not outlive every machine) can be given as its
kept evaluation rows (``landed``). Hours are idle-machine estimates (epochs x the sweep file's ``epoch_seconds``)
where the file gives them, else the runs' own wall clock (which counts the time other programs took from the machine).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pretrain.sweep.trials import Trial

METRIC = ("policy coverage: 48 deterministic skills x one episode, 1 x 1 m x-y bins (HalfCheetah: x), the training "
          "evaluation of each run (eval/coverage.json)")
# A group's curves over seeds: its key in the summary, the evaluation rows' key it is made of, the figure's axis.
CURVES = {"curve": ("policy_coverage", "policy coverage (bins)"),
          "total_curve": ("total_coverage", "total coverage: bins of all training trajectories")}


def _history(run_dir: Path) -> list[dict[str, Any]]:
    from pretrain.run.run_folder import read_history
    from pretrain.run.run_state import ResumeError

    try:
        return read_history(run_dir)
    except ResumeError:  # a damaged file: the run counts as not started
        return []


def spread(values: list[float]) -> dict[str, float]:
    """Over seeds: how many, the mean, the sample standard deviation (ddof 1), the lowest and the highest."""
    array = np.asarray(values, dtype=float)
    return {"n": len(values), "mean": round(float(array.mean()), 1),
            "std": round(float(array.std(ddof=1)), 1) if len(values) > 1 else 0.0,
            "min": float(array.min()), "max": float(array.max())}


def _run_dir(name: str, run_roots: list[Path]) -> Path:
    """A trial's folder: of the run roots that hold it, the one whose evaluations reach the furthest epoch (the
    first of equals; a stale partial copy in another root must not hide a finished run), else the first root's."""
    held = [root / name for root in run_roots if (root / name).is_dir()]
    if len(held) < 2:
        return held[0] if held else run_roots[0] / name
    reach = [max((row["epoch"] for row in _history(folder)), default=-1) for folder in held]
    return held[reach.index(max(reach))]


def _group(env: str, method: str, trials: list[Trial], run_roots: list[Path], seconds: float | None,
           landed: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    runs, histories = [], []
    for trial in trials:
        run_dir = _run_dir(trial.name, run_roots)
        rows, kept = _history(run_dir), landed.get(trial.name)
        source = "run folder"
        # Kept rows win over a folder that has not got as far (the same trial started afresh on another machine).
        if kept and (not rows or rows[-1]["epoch"] < kept[-1]["epoch"]):
            rows, source = kept, "landed"
        histories.append({row["epoch"]: row for row in rows})
        target = trial.config(1).epochs
        last = rows[-1] if rows else {}
        runs.append({"seed": trial.seed, "run_dir": str(run_dir), "source": source,
                     "target_epochs": target, "finished": bool(last) and last["epoch"] >= target,
                     "last": {k: last[k] for k in ("epoch", "env_steps", "wall_clock_s", "policy_coverage")
                              if k in last}})

    def hours(epoch: int, rows: list[dict]) -> float:
        if seconds:
            return round(epoch * seconds / 3600, 3)
        return round(float(np.mean([row["wall_clock_s"] for row in rows])) / 3600, 3)

    curves: dict[str, list[dict[str, Any]]] = {name: [] for name in CURVES}
    for epoch in sorted(set().union(*histories)):
        rows = [history[epoch] for history in histories if epoch in history]
        for name, (key, _) in CURVES.items():
            values = [row[key] for row in rows if row.get(key) is not None]  # total coverage: not in older rows
            if values:
                curves[name].append({"epoch": epoch, "env_steps": int(np.mean([row["env_steps"] for row in rows])),
                                     "hours": hours(epoch, rows), **spread(values)})
    # The end that every seed has reached, so that the mean is over all of them.
    common = [set(history) for history in histories]
    shared = sorted(set.intersection(*common)) if common and all(common) else []
    final = None
    if shared:
        rows = [history[shared[-1]] for history in histories]
        final = {"epoch": shared[-1], "env_steps": int(np.mean([row["env_steps"] for row in rows])),
                 "hours": hours(shared[-1], rows), "values": [row["policy_coverage"] for row in rows],
                 **spread([row["policy_coverage"] for row in rows])}
        totals = [row.get("total_coverage") for row in rows]
        if all(total is not None for total in totals):  # runs that log it (older rows do not)
            final["total"] = {"values": totals, **spread(totals)}
    return {"env": env, "method": method, "seeds": [trial.seed for trial in trials],
            "finished_seeds": sum(run["finished"] for run in runs), "epoch_seconds": seconds, "runs": runs,
            **curves, "final": final}


def summarize(trials: list[Trial], run_root: str | Path | Sequence[str | Path],
              epoch_seconds: dict[tuple[str, str], float] | None = None,
              landed: Mapping[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The summary over seeds of the trials' run folders under ``run_root``.

    :param run_root: a sweep's run root, or several (two sweeps of one sweep file side by side, each in its own
        root, since a root takes one sweep at a time): a trial's folder is read from the root where it got furthest.
    :param landed: trial name -> the evaluation rows kept from its run, read where its run folder holds fewer.
    """
    run_roots = [Path(run_root)] if isinstance(run_root, (str, Path)) else [Path(root) for root in run_root]
    groups: dict[tuple[str, str], list[Trial]] = {}
    for trial in trials:
        groups.setdefault((trial.env, trial.method), []).append(trial)
    seconds = epoch_seconds or {}
    idle = [key in seconds for key in groups]
    return {"metric": METRIC, "run_root": str(run_roots[0]) if len(run_roots) == 1 else [str(r) for r in run_roots],
            "hours": ("idle estimate: epochs x epoch_seconds of the sweep file" if all(idle) else
                      "the runs' wall clock (mean over seeds)" if not any(idle) else
                      "idle estimate where the group's epoch_seconds is given, else the runs' wall clock"),
            "spread": "over seeds: sample standard deviation (ddof 1), min and max; figure bands: min to max",
            "groups": [_group(env, method, members, run_roots, seconds.get((env, method)), landed or {})
                       for (env, method), members in groups.items()]}


def _spread_cell(entry: dict[str, Any] | None) -> str:
    """``mean ± std (per seed)``, or a dash."""
    return f"{entry['mean']:.1f} ± {entry['std']:.1f} ({', '.join(str(v) for v in entry['values'])})" if entry else "-"


def table(summary: dict[str, Any]) -> str:
    """A markdown table: one row per env and method."""
    held = any("held_out" in group for group in summary["groups"])
    total = any((group["final"] or {}).get("total") for group in summary["groups"])
    header = ("| env | method | seeds finished | last epoch every seed reached: epoch, env steps, hours | policy coverage "
              "there: mean ± std (per seed) |" + (" total coverage there: mean ± std (per seed) |" if total else "")
              + (" held out at each finished run's end: mean ± std (per seed) |" if held else ""))
    lines = [header, "|---" * (5 + total + held) + "|"]
    for group in summary["groups"]:
        final = group["final"]
        where = (f"{final['epoch']}, {final['env_steps'] / 1e6:.2f} M, {final['hours']:.2f} h" if final else "-")
        cover = _spread_cell(final)
        line = (f"| {group['env']} | {group['method']} | {group['finished_seeds']} / {len(group['seeds'])} | {where} | "
                f"{cover} |")
        if total:
            line += f" {_spread_cell(final.get('total') if final else None)} |"
        if held:
            line += f" {_spread_cell(group.get('held_out'))} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], path: Path, curve_key: str = "curve", ylabel: str = CURVES["curve"][1],
         held_out_ends: bool | None = None) -> None:
    """Coverage against env steps and against hours, one row per env, a mean line and a min-max band per method
    (a dot with the standard deviation: held out at the end, where measured).

    :param curve_key: which curve of each group (a key of :data:`CURVES`, or one a caller added to the groups with
        the same fields: ``epoch``, ``env_steps``, ``hours``, ``mean``, ``min``, ``max``).
    :param ylabel: what that curve measures.
    :param held_out_ends: draw each group's held-out policy coverage at its runs' ends (``held_out``, added by
        ``benchmarks/comparison.py``) as that dot; None: on the policy coverage curves only (``"curve"``), not on a
        total coverage curve, which measures something else.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(group["env"] for group in summary["groups"] if group.get(curve_key))) or list(
        dict.fromkeys(group["env"] for group in summary["groups"]))  # nothing evaluated yet: empty panels
    methods = list(dict.fromkeys(group["method"] for group in summary["groups"]))
    colors = {method: plt.get_cmap("tab10")(index % 10) for index, method in enumerate(methods)}
    fig, axes = plt.subplots(len(envs), 2, figsize=(11, 4 * len(envs)), squeeze=False)
    for row, env in enumerate(envs):
        by_steps, by_hours = axes[row]
        for group in (g for g in summary["groups"] if g["env"] == env and g.get(curve_key)):
            curve = group[curve_key]
            mean = [point["mean"] for point in curve]
            low, high = [point["min"] for point in curve], [point["max"] for point in curve]
            # The training curve is of the group's runs; another curve (held out, carried groups) says its own seeds.
            label = (f"{group['method']} ({group['finished_seeds']} of {len(group['seeds'])} seeds finished)"
                     if curve_key == "curve" else
                     f"{group['method']} ({max(point.get('n', 0) for point in curve)} of {len(group['seeds'])} seeds)")
            final = group["final"]
            ends = curve_key == "curve" if held_out_ends is None else held_out_ends
            held = group.get("held_out") if ends else None
            for ax, x, key, scale in ((by_steps, [p["env_steps"] / 1e6 for p in curve], "env_steps", 1e6),
                                      (by_hours, [p["hours"] for p in curve], "hours", 1.0)):
                ax.plot(x, mean, color=colors[group["method"]], lw=1.8, label=label)
                ax.fill_between(x, low, high, color=colors[group["method"]], alpha=0.2, lw=0)
                if held and (key in held or final):  # at the held-out runs' own ends where given
                    ax.errorbar(held.get(key, final and final[key]) / scale, held["mean"], yerr=held["std"], fmt="o",
                                capsize=3, color=colors[group["method"]])
        by_steps.set(xlabel="env steps (millions)", ylabel=ylabel, title=f"{env}: per env step")
        by_hours.set(xlabel="hours (" + ("idle estimate" if summary["hours"].startswith("idle") else "wall clock")
                     + ")", ylabel=ylabel, title=f"{env}: per hour")
        for ax in (by_steps, by_hours):
            ax.set_xlim(left=0)
            ax.grid(alpha=0.3)
        by_hours.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_summary(summary: dict[str, Any], out: str | Path) -> Path:
    """``summary.json``, ``figure.png`` and ``table.md`` in ``out``, and ``total_coverage.png`` where the runs log
    total coverage."""
    from metra_gym.atomic_files import write_text_atomic

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {**summary, "table": table(summary)}
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1) + "\n")  # the only copy of carried groups
    write_text_atomic(out / "table.md", summary["table"])
    plot(summary, out / "figure.png")
    if any(group.get("total_curve") for group in summary["groups"]):
        plot(summary, out / "total_coverage.png", "total_curve", CURVES["total_curve"][1])
    return out
