"""Verdicts of the downstream campaign over seeds, and its table and figure.

Per task and protocol, the trained controller's final return (mean over ``final_episodes`` evaluation episodes,
one value per seed) against

- random skills, untrained skills, flat SAC (the same protocol's where run, else any) and the same controller
  before training: **unpaired** (95 % t-intervals over seeds; separated when the controller's lower end is above
  the other's upper end) and **paired** (the per-seed differences, on the same evaluation episodes: separated when
  the 95 % t-interval of the difference is above 0);
- the better reference controller (the highest mean of zero-shot, zero-shot every step and look-ahead), and the
  better zero-shot one (of the two): the ratio of the means, and the paired difference;
- for every other protocol of the same task, the default protocol's (the paper's) trained controller, unpaired and
  paired by seed: whether a variant (metra-gym 0.3's settings, an ablation) does better than the paper's protocol.

Targets (issue 41): above random and untrained skills with separated intervals, and within 20 % of the better
reference controller (mean at least 0.8 of its mean).

Run files of metra-gym 0.3's benchmark (agents ``hierarchical``, ``flat`` and ``random`` without a protocol; their
last point is the final evaluation, their first the untrained controller) are read as protocol ``v0.3``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from pretrain.downstream.protocol import DEFAULT_PROTOCOL
from pretrain.downstream.reference import BEST_OF, ZERO_SHOT

TARGET_RATIO = 0.8
COMPARED = ("random", "untrained", "flat", "untrained_controller")
REFERENCE_STYLE = {"random": ("tab:green", "random skills"), "untrained": ("tab:brown", "untrained skills"),
                   "zero_shot": ("tab:purple", "zero-shot goal_skill, every skill step"),
                   "zero_shot_every_step": ("tab:pink", "zero-shot goal_skill, every low-level step"),
                   "lookahead": ("tab:red", "look-ahead over 16 skills"),
                   "lookahead_two": ("tab:olive", "look-ahead over two skill steps (16 x 16)"),
                   "lookahead_foresight": ("tab:gray", "look-ahead seeing the task's next draws")}


def interval(values: list[float]) -> dict[str, Any]:
    """Mean and 95 % Student t-interval of the mean (``low == high == mean`` for one value)."""
    from scipy.stats import t

    x = np.asarray(values, dtype=np.float64)
    half = float(t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0
    return {"mean": float(x.mean()), "low": float(x.mean() - half), "high": float(x.mean() + half),
            "values": [round(float(v), 4) for v in x], "seeds": len(x)}


def _label(row: dict[str, Any]) -> str:
    """``controller/paper``, ``flat/v0.3``, ``lookahead``... (0.3's files: hierarchical -> controller/v0.3)."""
    agent = {"hierarchical": "controller"}.get(row["agent"], row["agent"])
    if agent in ("controller", "flat"):
        return f"{agent}/{row.get('protocol') or 'v0.3'}"
    return agent


def final_value(row: dict[str, Any]) -> float:
    return float(row["final"]["mean"]) if "final" in row else float(row["points"][-1][1])


def untrained_value(row: dict[str, Any]) -> float:
    return float(row["untrained_controller"]["mean"]) if "untrained_controller" in row else float(row["points"][0][1])


def gather(folders: list[Path]) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """Every finished run file in ``folders``: task -> label -> seed -> row (a later folder wins a duplicate)."""
    results: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json")):
            try:
                row = json.loads(path.read_text())
            except json.JSONDecodeError:
                continue
            if not isinstance(row, dict) or "task" not in row or not row.get("finished", True):
                continue
            results.setdefault(row["task"], {}).setdefault(_label(row), {})[int(row["seed"])] = row
    return results


def _compare(trained: dict[int, float], other: dict[int, float]) -> dict[str, Any]:
    """Unpaired and paired comparison of the trained controller with another agent."""
    mine, theirs = interval(list(trained.values())), interval(list(other.values()))
    # One seed has no interval (its "interval" is the point itself): nothing is separated on one seed of either side.
    entry: dict[str, Any] = {"other": theirs, "separated": min(mine["seeds"], theirs["seeds"]) > 1
                             and mine["low"] > theirs["high"]}
    common = sorted(set(trained) & set(other))
    if common:
        difference = interval([trained[s] - other[s] for s in common])
        entry.update(paired_difference=difference, paired_separated=len(common) > 1 and difference["low"] > 0)
    return entry


def _better_reference(trained: dict[int, float], values: dict[str, dict[int, float]],
                      names: tuple[str, ...]) -> dict[str, Any] | None:
    """The trained controller against the reference of ``names`` with the highest mean: the comparison and the ratio
    of the means; None where none of them ran."""
    means = {name: float(np.mean(list(values[name].values()))) for name in names if name in values}
    if not means:
        return None
    best = max(means, key=means.__getitem__)
    ratio = float(np.mean(list(trained.values()))) / means[best] if means[best] else None
    return {"name": best, **_compare(trained, values[best]), "ratio": ratio}


def verdicts(results: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> dict[str, Any]:
    """Per task and protocol of a trained controller: the comparisons and targets of the module docstring."""
    out: dict[str, Any] = {}
    for task_name, agents in sorted(results.items()):
        values = {label: {seed: final_value(row) for seed, row in runs.items()} for label, runs in agents.items()}
        for label in [label for label in agents if label.startswith("controller/")]:
            protocol_name = label.split("/", 1)[1]
            trained = values[label]
            flat = values.get(f"flat/{protocol_name}") or next(
                (v for k, v in values.items() if k.startswith("flat/")), None)
            others = {"random": values.get("random"), "untrained": values.get("untrained"), "flat": flat,
                      "untrained_controller": {s: untrained_value(r) for s, r in agents[label].items()}}
            entry: dict[str, Any] = {
                "trained": interval(list(trained.values())),
                "steps": sorted({int(r.get("final", {}).get("steps", r["points"][-1][0])) for r in agents[label].values()}),
                "against": {name: _compare(trained, other) for name, other in others.items() if other}}
            for key, names in (("best_reference", BEST_OF), ("zero_shot_reference", ZERO_SHOT)):
                reference = _better_reference(trained, values, names)
                if reference:
                    entry[key] = reference
            if "best_reference" in entry:
                ratio = entry["best_reference"]["ratio"]
                entry["best_reference"]["within_20_percent"] = ratio is not None and ratio >= TARGET_RATIO
            against = entry["against"]
            entry["targets"] = {
                "above_random_skills": against.get("random", {}).get("separated"),
                "above_untrained_skills": against.get("untrained", {}).get("separated"),
                "within_20_percent_of_the_better_reference": entry.get("best_reference", {}).get("within_20_percent")}
            default = values.get(f"controller/{DEFAULT_PROTOCOL}")
            if protocol_name != DEFAULT_PROTOCOL and default:
                entry["against_default"] = _compare(trained, default)
            out.setdefault(task_name, {})[protocol_name] = entry
    return out


def _cell(entry: dict[str, Any] | None) -> str:
    """``mean (low-high)``; one seed has no interval, and its point is not printed as one (``mean (1 seed)``)."""
    if not entry:
        return "-"
    if entry.get("seeds", 2) < 2:
        return f"{entry['mean']:.2f} (1 seed)"
    return f"{entry['mean']:.2f} ({entry['low']:.2f}-{entry['high']:.2f})"


def _versus(entry: dict[str, Any], name: str) -> str:
    """``other (interval); paired difference (interval)`` with marks for separated intervals."""
    compared = entry["against"].get(name)
    if not compared:
        return "-"
    text = _cell(compared["other"]) + (" **sep**" if compared["separated"] else "")
    if "paired_difference" in compared:
        text += f"; paired {_cell(compared['paired_difference'])}" + (" **>0**" if compared["paired_separated"] else "")
    return text


def _reference_cells(reference: dict[str, Any] | None) -> str:
    """``name (interval); paired (interval) | ratio`` of a better reference, or two dashes."""
    if not reference:
        return "- | -"
    ratio = f"{reference['ratio']:.2f}" if reference["ratio"] is not None else "-"
    return f"{reference['name']} {_cell(reference['other'])}; paired {_cell(reference.get('paired_difference'))} | {ratio}"


def table(verdict: dict[str, Any], references: dict[str, dict[str, Any]]) -> str:
    """Markdown tables: one row per task and protocol; each variant protocol against the default one; the reference
    controllers. **sep**: the trained controller's interval is above this one; **>0** (**<0**): the paired
    difference's interval is above (below) 0. A target without the runs to judge it is "not run"."""
    lines = ["| task | protocol | seeds | trained controller | untrained controller | random skills | untrained skills "
             "| flat SAC | better reference | trained / better reference | better zero-shot reference | trained / it "
             "| targets met |", "|---" * 13 + "|"]
    for task_name, protocols in verdict.items():
        for protocol_name, entry in protocols.items():
            reference_cells = " | ".join(_reference_cells(entry.get(key)) for key in ("best_reference",
                                                                                        "zero_shot_reference"))
            met = [k for k, v in entry["targets"].items() if v]
            unknown = [k for k, v in entry["targets"].items() if v is None]
            lines.append(f"| {task_name} | {protocol_name} | {entry['trained']['seeds']} | {_cell(entry['trained'])} "
                         f"at {', '.join(dict.fromkeys(f'{s / 1e6:.2f} M' for s in entry['steps']))} | "
                         f"{_versus(entry, 'untrained_controller')} | {_versus(entry, 'random')} | "
                         f"{_versus(entry, 'untrained')} | {_versus(entry, 'flat')} | {reference_cells} | "
                         f"{len(met)} of 3{': ' + ', '.join(met) if met else ''}"
                         f"{'; not run: ' + ', '.join(unknown) if unknown else ''} |")
    variants = [(task_name, protocol_name, entry["against_default"]) for task_name, protocols in verdict.items()
                for protocol_name, entry in protocols.items() if "against_default" in entry]
    if variants:
        lines += ["", f"| task | protocol | its trained controller | {DEFAULT_PROTOCOL}'s | difference, paired by seed |",
                  "|---" * 5 + "|"]
        for task_name, protocol_name, compared in variants:
            mine = _cell(verdict[task_name][protocol_name]["trained"]) + (" **sep**" if compared["separated"] else "")
            paired = compared.get("paired_difference")
            below = paired is not None and paired["seeds"] > 1 and paired["high"] < 0  # one seed: no interval
            sign = " **>0**" if compared.get("paired_separated") else " **<0**" if below else ""
            paired_cell = (f"{_cell(paired)} over {paired['seeds']} seed{'s' * (paired['seeds'] > 1)}{sign}" if paired
                           else "-")
            lines.append(f"| {task_name} | {protocol_name} | {mine} | {_cell(compared['other'])} | {paired_cell} |")
    lines += ["", "| task | " + " | ".join(REFERENCE_STYLE) + " |", "|---" * (len(REFERENCE_STYLE) + 1) + "|"]
    for task_name, entries in sorted(references.items()):
        lines.append(f"| {task_name} | " + " | ".join(_cell(entries.get(name)) for name in REFERENCE_STYLE) + " |")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, dict[str, dict[int, dict[str, Any]]]], path: Path) -> None:
    """One panel per task: the learned agents' curves (mean and 95 % band over seeds) and the reference controllers
    (mean line and 95 % band)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted(results)
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5 * max(1, len(tasks)), 4.2), squeeze=False)
    learned = sorted({label for agents in results.values() for label in agents if "/" in label})
    colors = {label: plt.get_cmap("tab10")(i % 10) for i, label in enumerate(learned)}
    for ax, task_name in zip(axes[0], tasks):
        agents = results[task_name]
        for label in sorted(k for k in agents if "/" in k):
            runs = list(agents[label].values())
            color = colors[label]
            grid = np.unique(np.concatenate([np.array(r["points"])[:, 0] for r in runs]))
            grid = grid[grid <= min(np.array(r["points"])[-1, 0] for r in runs)]
            ys = np.stack([np.interp(grid, *np.array(r["points"], dtype=float).T) for r in runs])
            bands = [interval(list(column)) for column in ys.T]
            ax.plot(grid / 1e6, ys.mean(0), color=color, label=f"{label} ({len(runs)} seeds)")
            ax.fill_between(grid / 1e6, [b["low"] for b in bands], [b["high"] for b in bands], color=color, alpha=0.2)
        for name, (color, text) in REFERENCE_STYLE.items():
            if name in agents:
                ref = interval([final_value(r) for r in agents[name].values()])
                ax.axhline(ref["mean"], color=color, ls="--", lw=1.2, label=f"{text} ({ref['seeds']} seeds)")
                ax.axhspan(ref["low"], ref["high"], color=color, alpha=0.1)
        ax.set(title=task_name, xlabel="low-level env steps (millions)", ylabel="return (mean, 95 % interval)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_summary(folders: list[Path], out: Path) -> dict[str, Any]:
    """``downstream.json`` (verdicts, reference intervals, the runs' curves), ``table.md`` and ``figure.png`` in
    ``out`` from the run files in ``folders``."""
    results = gather(folders)
    if not results:
        raise FileNotFoundError(f"no finished downstream run files in {', '.join(map(str, folders))}")
    verdict = verdicts(results)
    references = {task_name: {name: interval([final_value(r) for r in agents[name].values()])
                              for name in REFERENCE_STYLE if name in agents} for task_name, agents in results.items()}
    summary = {"verdicts": verdict, "references": references, "table": table(verdict, references),
               "runs": {task_name: {label: {str(seed): {k: row[k] for k in ("points", "final", "untrained_controller",
                                                                                "seconds", "skills_sha256") if k in row}
                                            for seed, row in runs.items()} for label, runs in agents.items()}
                        for task_name, agents in results.items()}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "downstream.json").write_text(json.dumps(summary, indent=1))
    (out / "table.md").write_text(summary["table"])
    plot(results, out / "figure.png")
    return summary
