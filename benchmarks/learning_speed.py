"""Learning per CPU-hour: Ant policy coverage of training variants against env steps and against hours.

Reads the evaluation history of each run folder (``eval/coverage.json``: the training evaluation, 48 fixed skills)
and its config, and writes one summary with every curve, a figure (coverage vs env steps with the official
curve, coverage vs hours) and a markdown table. Hours are the run's own wall-clock, or, with ``--epoch-seconds
LABEL=SECONDS``, an idle-machine estimate (epochs x the variant's idle seconds per epoch measured side by side
by ``benchmarks/epoch_time.py``) for runs that shared the machine with others.

Seeds: labels that differ only in a ``-sN`` ending (``default-s0``, ``default-s1``) are one configuration; with two or
more seeds the figure draws their mean with a band from the lowest to the highest seed, and the table adds one row
per configuration with the held-out mean and every seed's value.

Held out (``--held-out-hours``): for runs that kept skill snapshots (``snapshot_every``), the snapshot at or just
before each given hour is evaluated with skills and reset seeds not used during training (``--held-out-seed``):
those are the numbers to report; the training evaluation reuses one fixed set and picking its best point is
optimistic.

Kept copies: each run's evaluation history, config and held-out points are copied to ``OUT/curves/`` (run folders
stay on the training machine and may not outlive it). A run whose folder is gone, or has not yet reached the last
evaluation of its kept copy, is read from the kept copy, held-out points included.

    python benchmarks/learning_speed.py --runs baseline=runs/ant-s0 utd2=runs/ant-utd2 \\
        --held-out-hours 1 2 3 --out benchmarks/results/learning_speed
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import yaml

from metra_gym.atomic_files import write_text_atomic
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED
from pretrain.project_paths import project_path

# Official code, state Ant, 2-D skills, seed 0, one A100 node (shared/metra-reference.md section 5).
OFFICIAL = [  # (epoch, env steps, hours, policy coverage)
    (0, 0, 0.0, 4), (1000, 1_600_000, 0.63, 107), (2000, 3_200_000, 1.23, 596), (3000, 4_800_000, 1.83, 1232),
    (5000, 8_000_000, 3.03, 1751), (6000, 9_600_000, 3.63, 2189), (20000, 32_000_000, 12.0, 2444),
    (40000, 64_000_000, 23.9, 2761),
]
# The paper's settings at our width: the table names each run's differences to them.
PAPER = {"net_width": 256, "learning_rate": 1e-4, "gradient_steps": 50, "batch_size": 256, "collector": "sequential",
         "backbone": "sac", "init": "torch", "random_warmup": True, "critic_width": None, "phi_width": None}


def official_at(env_steps: float) -> float:
    return float(np.interp(env_steps, [r[1] for r in OFFICIAL], [r[3] for r in OFFICIAL]))


def read_history(folder: Path) -> tuple[list[dict], dict]:
    """The evaluation rows and config of a run folder, or of a kept copy (``LABEL.csv`` with ``LABEL.yaml``
    beside it: the run's ``eval/coverage.csv`` and ``config.yaml``; a missing yaml means the paper's settings)."""
    if folder.suffix != ".csv":
        return (json.loads((folder / "eval" / "coverage.json").read_text()),
                yaml.safe_load((folder / "config.yaml").read_text()))
    with open(folder) as f:
        history = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    history = [{**row, "epoch": int(row["epoch"]), "env_steps": int(row["env_steps"]),
                "policy_coverage": int(row["policy_coverage"])} for row in history]
    config_path = folder.with_suffix(".yaml")
    return history, (yaml.safe_load(config_path.read_text()) if config_path.is_file() else {})


def kept_copy(label: str, out: Path) -> Path:
    """Where a run's history is kept in the repository: ``out/curves/LABEL.csv`` (with ``LABEL.yaml``, its config,
    and ``LABEL.held_out.json``, its held-out points, beside it)."""
    return out / "curves" / f"{label}.csv"


def last_epoch(folder: Path) -> int:
    """The last evaluated epoch of a run folder or kept copy; -1 where there is none (or no readable history)."""
    try:
        history = read_history(folder)[0]
    except (OSError, ValueError):
        return -1
    return history[-1]["epoch"] if history else -1


def source_of(label: str, folder: Path, out: Path) -> Path:
    """The run folder, or its kept copy where the folder is gone or has not yet reached the kept copy's last
    evaluation (a run started again from epoch 0 after its machine was replaced): a shorter curve never hides a
    longer one."""
    kept = kept_copy(label, out)
    if folder.suffix == ".csv" or not kept.is_file():
        return folder
    reached, kept_reached = last_epoch(folder), last_epoch(kept)
    if reached < 0:
        print(f"  {label}: no run history at {folder}; reading its kept copy {project_path(kept)}")
        return kept
    if reached < kept_reached:
        print(f"  {label}: {folder} is at epoch {reached}, behind its kept copy (epoch {kept_reached}); reading the "
              "kept copy")
        return kept
    return folder


def kept_points(label: str, kept: Path, out: Path) -> list[dict]:
    """The held-out points kept for a run: ``LABEL.held_out.json`` beside its kept copy, else (copies kept before
    those files existed) the earlier ``out/summary.json``."""
    path = kept.with_suffix(".held_out.json")
    earlier = out / "summary.json"
    if path.is_file():
        return json.loads(path.read_text())
    if earlier.is_file():
        return json.loads(earlier.read_text())["runs"].get(label, {}).get("held_out", [])
    return []


def fitting(label: str, points: list[dict], hours_of_epoch, last: int) -> list[dict]:
    """The kept points that belong to this curve. A point does not (and is left out of the summary, saying so, but
    stays kept) where its snapshot lies past the last evaluation, or sits at other hours than this run's hours put
    it: measured under another ``--epoch-seconds``."""
    fit = [p for p in points if p["epoch"] <= last and abs(hours_of_epoch(p["epoch"]) - p["snapshot_hours"]) < 2e-3]
    for point in points:
        if point not in fit:
            print(f"  {label}: kept held-out point at {point['hours']} h (epoch {point['epoch']}) does not fit this "
                  "run's epochs or hours; left out (measure it again with --held-out-hours)")
    return fit


def merge_points(kept: list[dict], measured: list[dict]) -> list[dict]:
    """Kept points with the newly measured ones in place of any at the same hour and held-out seed, by hour."""
    new = {(p["hours"], p["seed"]) for p in measured}
    return sorted([p for p in kept if (p["hours"], p["seed"]) not in new] + measured, key=lambda p: p["hours"])


def keep_history(label: str, history: list[dict], folder: Path, points: list[dict], out: Path) -> None:
    """Keep a run's evaluation history (the rows read, as csv), config and held-out points in ``out/curves/``: run
    folders stay on the training machine (and may not outlive it), the curves and dots stay re-plottable from the
    repository."""
    kept = kept_copy(label, out)
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=list(history[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(history)
    write_text_atomic(kept, table.getvalue())
    write_text_atomic(kept.with_suffix(".yaml"), (folder / "config.yaml").read_text())
    write_text_atomic(kept.with_suffix(".held_out.json"), json.dumps(points, indent=1))


def load_run(label: str, folder: Path, epoch_seconds: float | None) -> dict:
    """A run's curve, hours (wall clock, or idle estimate) and its differences to the paper's settings."""
    history, config = read_history(folder)
    changed = {k: config.get(k, v) for k, v in PAPER.items() if config.get(k, v) != v}
    rows = []
    for row in history:
        hours = row["epoch"] * epoch_seconds / 3600 if epoch_seconds else row["wall_clock_s"] / 3600
        rows.append({"epoch": row["epoch"], "env_steps": row["env_steps"], "hours": round(hours, 3),
                     "policy_coverage": row["policy_coverage"],
                     "official_at_same_env_steps": round(official_at(row["env_steps"]), 1)})
    return {"folder": project_path(folder), "seed": config.get("seed"), "changed_from_default": changed,
            "hours_from": f"epochs x {epoch_seconds} s (idle estimate)" if epoch_seconds else "run's wall clock",
            "rows": rows}


def evaluate_snapshot(snapshot: Path, seed: int) -> dict:
    """Policy coverage of one snapshot on held-out skills and reset seeds (48 skills from ``seed``)."""
    from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        result = evaluate_checkpoint(str(snapshot), tmp, seed=seed)  # HELD_OUT_ROLLOUTS skills
    return {"epoch": int(snapshot.name.split("_")[1]), "env_steps": result["provenance"]["env_steps"],
            "held_out_policy_coverage": result["policy_coverage"], "seed": seed}


def held_out(folder: Path, hours: list[float], seed: int, hours_of_epoch) -> list[dict]:
    """Coverage of the snapshots at (or just before) the given hours, on held-out skills and reset seeds."""
    snapshots = sorted((folder / "snapshots").glob("epoch_*"))
    points = []
    for hour in hours:
        before = [s for s in snapshots if hours_of_epoch(int(s.name.split("_")[1])) <= hour + 1e-9]
        if not before or hours_of_epoch(int(snapshots[-1].name.split("_")[1])) < hour:
            continue  # the run stopped before this hour: no point rather than an earlier one under its label
        point = evaluate_snapshot(before[-1], seed)
        points.append({"hours": hour, "snapshot_hours": round(hours_of_epoch(point["epoch"]), 3), **point})
        print(f"  {folder.name}: {hour} h -> epoch {point['epoch']}: {point['held_out_policy_coverage']} bins held "
              "out", flush=True)
    return points


def seed_groups(labels) -> dict[str, list[str]]:
    """Labels grouped by configuration: ``NAME-sN`` endings are seeds of ``NAME``; any other label stands alone."""
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(re.sub(r"-s\d+$", "", label), []).append(label)
    return groups


def band(runs: list[dict], axis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, lowest and highest coverage of several seeds' curves on a common ``axis`` (``hours`` or ``env_steps``)
    grid, up to where the shortest seed stops (beyond it a band would hide that a seed is missing)."""
    end = min(run["rows"][-1][axis] for run in runs)
    grid = np.linspace(0.0, end, 200)
    curves = np.array([np.interp(grid, [r[axis] for r in run["rows"]], [r["policy_coverage"] for r in run["rows"]])
                       for run in runs])
    return grid, curves.mean(axis=0), curves.min(axis=0), curves.max(axis=0)


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_steps, by_hours) = plt.subplots(1, 2, figsize=(12, 4.5))
    by_steps.plot([r[1] / 1e6 for r in OFFICIAL[:6]], [r[3] for r in OFFICIAL[:6]], "--", color="gray", lw=2,
                  label="official (width 1024, A100)")
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, 20))
    for index, (name, labels) in enumerate(seed_groups(summary["runs"]).items()):
        runs = [summary["runs"][label] for label in labels]
        chosen = name.startswith("default")  # the shipped configuration stands out
        color = "black" if chosen else colors[(2 * index) % 20 + (2 * index) // 20]
        width = 2 if chosen else 0.8
        if len(runs) == 1:
            rows = runs[0]["rows"]
            coverage = [r["policy_coverage"] for r in rows]
            by_steps.plot([r["env_steps"] / 1e6 for r in rows], coverage, lw=width, color=color, label=name)
            by_hours.plot([r["hours"] for r in rows], coverage, lw=width, color=color, label=name)
        else:
            label = f"{name} ({len(runs)} seeds: mean, band lowest-highest; thin: each seed)"
            for ax, axis, scale in ((by_steps, "env_steps", 1e6), (by_hours, "hours", 1.0)):
                grid, mean, low, high = band(runs, axis)
                ax.plot(grid / scale, mean, lw=width, color=color, label=label)
                ax.fill_between(grid / scale, low, high, color=color, alpha=0.2, lw=0)
                for run in runs:  # past the shortest seed the band ends; each seed's own curve goes on
                    ax.plot([r[axis] / scale for r in run["rows"]], [r["policy_coverage"] for r in run["rows"]],
                            lw=0.5, alpha=0.5, color=color)
        for run in runs:
            for point in run.get("held_out", []):
                by_hours.plot(point["hours"], point["held_out_policy_coverage"], "o", color=color)
    by_steps.set(xlabel="env steps (millions)", ylabel="policy coverage (1 m bins)", xlim=(0, None),
                 title="per env step (training evaluation; dashed: official, A100)")
    by_hours.set(xlabel="hours of a 2-core CPU", ylabel="policy coverage (1 m bins)", xlim=(0, None),
                 title="per hour (dots: held-out evaluation, one per seed)")
    for ax in (by_steps, by_hours):
        ax.grid(alpha=0.3)
    # The lower right of the hours panel is empty. Two columns only for many entries (the screens): two columns of a
    # few long seed-group labels grow the legend past the panel, and tight_layout then squeezes both panels apart.
    entries = len(by_hours.get_legend_handles_labels()[1])
    by_hours.legend(fontsize=7, loc="lower right", ncol=2 if entries > 4 else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def first_hours(rows: list[dict], bins: int) -> str:
    """Idle hours of the first training evaluation at or above ``bins``."""
    hit = next((r for r in rows if r["policy_coverage"] >= bins), None)
    return f"{hit['hours']:.2f}" if hit else "-"


def held_out_cell(point: dict | None) -> str:
    """``mean (s0 value, s1 value)`` of one configuration at one hour, naming the seeds measured; ``-`` if none."""
    if point is None:
        return "-"
    seeds = ", ".join(f"{run.rsplit('-', 1)[1]} {value}" for run, value in zip(point["runs"], point["per_seed"]))
    return f"{point['mean']:.0f} ({seeds})"


def table(summary: dict) -> str:
    lines = ["| run | differs from the paper's settings (width 256) | coverage at 0.8 / 1.6 / 3.2 / 4.8 M steps | "
             "hours to 596 / 1,232 / 2,000 bins | last evaluation: epoch, hours, coverage | held out at 1 / 2 / 3 h |",
             "|---|---|---|---|---|---|"]
    for label, run in summary["runs"].items():
        at = []
        for steps in (0.8e6, 1.6e6, 3.2e6, 4.8e6):
            rows = [r for r in run["rows"] if r["env_steps"] <= steps]
            at.append(str(rows[-1]["policy_coverage"]) if rows and rows[-1]["env_steps"] >= steps * 0.97 else "-")
        held = {p["hours"]: p["held_out_policy_coverage"] for p in run.get("held_out", [])}
        changed = ", ".join(f"{k}={v}" for k, v in run["changed_from_default"].items()) or "-"
        hours = " / ".join(first_hours(run["rows"], b) for b in (596, 1232, 2000))
        last = run["rows"][-1]
        lines.append(f"| {label} | {changed} | {' / '.join(at)} | {hours} | "
                     f"{last['epoch']}, {last['hours']:.2f} h, {last['policy_coverage']} | "
                     f"{' / '.join(str(held.get(h, '-')) for h in (1.0, 2.0, 3.0))} |")
    lines.append("| official (A100, width 1024) | - | 56 / 107 / 596 / 1232 | (A100: 1.23 / 1.83 / 3.6 h) | "
                 "6000, 3.63 h (A100), 2189 | - |")
    if summary["groups"]:
        lines += ["", "| configuration | seeds | held out at 1 h | at 2 h | at 3 h |", "|---|---|---|---|---|"]
        for name, group in summary["groups"].items():
            cells = [held_out_cell(group["held_out"].get(h)) for h in ("1.0", "2.0", "3.0")]
            lines.append(f"| {name} | {', '.join(group['runs'])} | {' | '.join(cells)} |")
    return "\n".join(lines)


def group_summary(runs: dict) -> dict:
    """Per configuration with two or more seeds: held-out coverage at each hour, mean and per seed, over the
    seeds that reached that hour (named beside their values)."""
    groups = {}
    for name, labels in seed_groups(runs).items():
        if len(labels) < 2:
            continue
        held: dict[str, dict] = {}
        for hour in sorted({p["hours"] for label in labels for p in runs[label].get("held_out", [])}):
            values = {label: p["held_out_policy_coverage"] for label in labels
                      for p in runs[label].get("held_out", []) if p["hours"] == hour}
            held[str(float(hour))] = {"mean": round(float(np.mean(list(values.values()))), 1),
                                      "per_seed": list(values.values()), "runs": list(values)}
        groups[name] = {"runs": labels, "held_out": held}
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True, metavar="LABEL=RUN_DIR",
                        help="run folders, or kept copies of gone runs (out/curves/LABEL.csv)")
    parser.add_argument("--epoch-seconds", nargs="*", default=[], metavar="LABEL=SECONDS",
                        help="idle seconds per epoch of a run's variant, to estimate idle hours")
    parser.add_argument("--held-out-hours", type=float, nargs="*", default=[])
    parser.add_argument("--held-out-seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--machine", default="")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/learning_speed"))
    args = parser.parse_args()
    seconds = {k: float(v) for k, v in (item.split("=", 1) for item in args.epoch_seconds)}
    summary = {"metric": "policy coverage: 48 deterministic skills x 200 steps, 1 x 1 m x-y bins",
               "machine": args.machine, "official": [dict(zip(("epoch", "env_steps", "hours_a100", "policy_coverage"),
                                                              r)) for r in OFFICIAL], "runs": {}}
    for item in args.runs:
        label, given = item.split("=", 1)
        folder = source_of(label, Path(given), args.out)
        run = load_run(label, folder, seconds.get(label))
        epochs = [r["epoch"] for r in run["rows"]]
        hours = [r["hours"] for r in run["rows"]]

        def hours_of_epoch(epoch: int, epochs=epochs, hours=hours) -> float:
            return float(np.interp(epoch, epochs, hours))

        stored = kept_points(label, folder if folder.suffix == ".csv" else kept_copy(label, args.out), args.out)
        points = fitting(label, stored, hours_of_epoch, epochs[-1])
        unfit = [p for p in stored if p not in points]
        if folder.suffix != ".csv":
            if args.held_out_hours and (folder / "snapshots").is_dir():
                points = merge_points(points, held_out(folder, args.held_out_hours, args.held_out_seed, hours_of_epoch))
            keep_history(label, read_history(folder)[0], folder, points + unfit, args.out)
        run["held_out"] = points
        summary["runs"][label] = run
    summary["groups"] = group_summary(summary["runs"])
    summary["table"] = table(summary)
    write_text_atomic(args.out / "summary.json", json.dumps(summary, indent=1))
    plot(summary, args.out / "figure.png")
    print(summary["table"])
    print(f"wrote {args.out / 'summary.json'} and figure.png")


if __name__ == "__main__":
    main()
