"""Land the progress of long runs that span sessions: each run's evaluation curve and config, and the held-out
coverage of its newest skill snapshot (added to those of earlier landings), in ``benchmarks/results/campaigns/`` (the run folders themselves, with their
run states, stay on the training machine; ``metra-pretrain train --resume RUN`` continues them).

    MUJOCO_GL=egl python benchmarks/campaign_progress.py --runs quad-state-s0=/work/runs/quad-state-s0 \\
        --epoch-seconds quad-state-s0=2.0

With ``--every-snapshot`` every snapshot not yet evaluated is evaluated held out (a finished screen's whole curve);
``--figure PATH`` draws the held-out curves of the runs given, side by side, with each run's rule pick marked.

Held out: the snapshot's skills are drawn with seed 1000 and its resets seeded 1000 + i, neither used in training
nor to pick the snapshot. The pick (``rule_pick`` in ``summary.json``) is the rule fixed before the campaigns: the
latest snapshot whose training evaluation (``eval/coverage.csv``) achieved the most tasks (Kitchen) or the most
policy coverage (the others). Hours are idle estimates (epochs x ``--epoch-seconds``), when given.

    MUJOCO_GL=egl python benchmarks/campaign_progress.py --every-snapshot \
        --runs kitchen_lr1e-4-s0=/work/runs/kitchen_lr1e-4-s0 kitchen_lr1e-4-s1=/work/runs/kitchen_lr1e-4-s1 \
        --figure benchmarks/results/campaigns/kitchen_held_out.png
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import tempfile
from pathlib import Path

from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED, evaluate_checkpoint
from pretrain.project_paths import snapshot_name

OUT = Path("benchmarks/results/campaigns")


RULE = "the latest snapshot whose training evaluation achieved the most {metric} (fixed before the campaigns)"
HELD_OUT_KEYS = ("policy_coverage", "tasks_achieved", "tasks")


def _metric(rows: list[dict]) -> str:
    """What the rule and the figure count: tasks for a run that records them (Kitchen), else policy coverage."""
    return "tasks_achieved" if rows and "tasks_achieved" in rows[0] else "policy_coverage"


def rule_pick(rows: list[dict], snapshots: list[str]) -> dict | None:
    """The rule's snapshot among ``snapshots`` (folder names ``epoch_NNNNNN``), from the training evaluations."""
    metric = _metric(rows)
    by_epoch = {snapshot_name(int(row["epoch"])): int(row[metric]) for row in rows}
    scored = [(by_epoch[name], name) for name in snapshots if name in by_epoch]
    if not scored:
        return None
    value, name = max(scored)  # the most, then the latest
    said = {"tasks_achieved": "tasks", "policy_coverage": "policy coverage"}[metric]
    return {"rule": RULE.format(metric=said), "snapshot": name, f"training_{metric}": value}


def land(name: str, run_dir: Path, out: Path, epoch_seconds: float | None, every_snapshot: bool = False) -> dict:
    """Copy a run's curve and config into ``out / name``, evaluate its newest snapshot held out (with
    ``every_snapshot``, also each one not evaluated before) and apply the rule."""
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_dir / "eval" / "coverage.csv", target / "curve.csv")
    shutil.copyfile(run_dir / "config.yaml", target / "config.yaml")
    with open(target / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    earlier = json.loads((target / "summary.json").read_text()) if (target / "summary.json").is_file() else {}
    summary = {**earlier, "run": name, "last_evaluation": rows[-1] if rows else None, "epochs_evaluated": len(rows)}
    if epoch_seconds is not None and rows:
        summary["idle_hours_estimate"] = round(int(rows[-1]["epoch"]) * epoch_seconds / 3600, 2)
        summary["epoch_seconds_assumed"] = epoch_seconds
    history = {h["snapshot"]: h for h in earlier.get("held_out_history")
               or ([earlier["held_out"]] if "held_out" in earlier else [])}
    snapshots = sorted(path.name for path in (run_dir / "snapshots").glob("epoch_*"))
    wanted = [s for s in snapshots[:-1] if s not in history] if every_snapshot else []
    for snapshot in [*wanted, *snapshots[-1:]]:
        newest = snapshot == snapshots[-1]  # its figures are kept in held_out/
        with tempfile.TemporaryDirectory() as scratch:
            result = evaluate_checkpoint(str(run_dir / "snapshots" / snapshot),
                                         target / "held_out" if newest else Path(scratch), seed=HELD_OUT_SEED)
        history[snapshot] = {"snapshot": snapshot, "seed": HELD_OUT_SEED,
                             **{k: result[k] for k in HELD_OUT_KEYS if k in result}}
        if newest:
            summary["held_out"] = history[snapshot]
    summary["held_out_history"] = [history[k] for k in sorted(history)]  # every landing's, oldest first
    pick = rule_pick(rows, snapshots)
    if pick is not None:
        summary["rule_pick"] = {**pick, "held_out": history.get(pick["snapshot"])}
    (target / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _label(summary: dict, out: Path) -> str:
    """A run's name, with its learning rate (what the screens of one config vary most often)."""
    import yaml

    config = yaml.safe_load((out / summary["run"] / "config.yaml").read_text()) or {}
    return f"{summary['run']} (lr {config['learning_rate']:g})" if "learning_rate" in config else summary["run"]


def draw(summaries: list[dict], path: Path, out: Path = OUT) -> None:
    """The held-out curves of the runs landed together (in ``out``), the rule's pick of each circled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    metric = "tasks_achieved" if any("tasks_achieved" in h for s in summaries for h in s["held_out_history"]) \
        else "policy_coverage"
    for summary in summaries:
        points = [(int(h["snapshot"].split("_")[1]), h[metric]) for h in summary["held_out_history"]]
        line, = ax.plot(*zip(*points), marker=".", label=_label(summary, out))
        pick = (summary.get("rule_pick") or {}).get("held_out")
        if pick is not None:
            ax.plot(int(pick["snapshot"].split("_")[1]), pick[metric], "o", ms=11, mfc="none", color=line.get_color())
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"held-out {metric.replace('_', ' ')}")
    ax.set_title("every snapshot held out (skills seed 1000); circled: the rule's pick", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True, help="NAME=RUN_DIR")
    parser.add_argument("--epoch-seconds", nargs="*", default=[], help="NAME=SECONDS (idle seconds per epoch)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--every-snapshot", action="store_true", help="evaluate every snapshot not evaluated before")
    parser.add_argument("--figure", type=Path, help="draw the runs' held-out curves side by side into this PNG")
    args = parser.parse_args()
    seconds = {k: float(v) for k, v in (item.split("=", 1) for item in args.epoch_seconds)}
    summaries = []
    for item in args.runs:
        name, run_dir = item.split("=", 1)
        summaries.append(land(name, Path(run_dir), args.out, seconds.get(name), args.every_snapshot))
        print(json.dumps({k: summaries[-1].get(k) for k in ("run", "held_out", "rule_pick")}, indent=1))
    if args.figure:
        draw(summaries, args.figure, args.out)
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
