"""Land the progress of long runs that span sessions: each run's evaluation curve and config, and the held-out
coverage of its newest skill snapshot (added to those of earlier landings), in ``benchmarks/results/campaigns/`` (the run folders themselves, with their
run states, stay on the training machine; ``metra-pretrain train --resume RUN`` continues them).

    MUJOCO_GL=egl python benchmarks/campaign_progress.py --runs quad-state-s0=/work/runs/quad-state-s0 \\
        --epoch-seconds quad-state-s0=2.0

Held out: the snapshot's skills are drawn with seed 1000 and its resets seeded 1000 + i, neither used in training
nor to pick the snapshot. Hours are idle estimates (epochs x ``--epoch-seconds``), when given.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path

from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED, evaluate_checkpoint

OUT = Path("benchmarks/results/campaigns")


def land(name: str, run_dir: Path, out: Path, epoch_seconds: float | None) -> dict:
    """Copy a run's curve and config into ``out / name`` and evaluate its newest snapshot held out."""
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_dir / "eval" / "coverage.csv", target / "curve.csv")
    shutil.copyfile(run_dir / "config.yaml", target / "config.yaml")
    with open(target / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    summary = {"run": name, "last_evaluation": rows[-1] if rows else None, "epochs_evaluated": len(rows)}
    if epoch_seconds is not None and rows:
        summary["idle_hours_estimate"] = round(int(rows[-1]["epoch"]) * epoch_seconds / 3600, 2)
        summary["epoch_seconds_assumed"] = epoch_seconds
    earlier = json.loads((target / "summary.json").read_text()) if (target / "summary.json").is_file() else {}
    history = earlier.get("held_out_history") or ([earlier["held_out"]] if "held_out" in earlier else [])
    snapshots = sorted((run_dir / "snapshots").glob("epoch_*"))
    if snapshots:
        result = evaluate_checkpoint(str(snapshots[-1]), target / "held_out", seed=HELD_OUT_SEED)
        summary["held_out"] = {"snapshot": snapshots[-1].name, "seed": HELD_OUT_SEED,
                               **{k: result[k] for k in ("policy_coverage", "tasks_achieved", "tasks") if k in result}}
        history = [h for h in history if h["snapshot"] != snapshots[-1].name] + [summary["held_out"]]
    summary["held_out_history"] = sorted(history, key=lambda h: h["snapshot"])  # every landing's, oldest first
    (target / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True, help="NAME=RUN_DIR")
    parser.add_argument("--epoch-seconds", nargs="*", default=[], help="NAME=SECONDS (idle seconds per epoch)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    seconds = {k: float(v) for k, v in (item.split("=", 1) for item in args.epoch_seconds)}
    for item in args.runs:
        name, run_dir = item.split("=", 1)
        print(json.dumps(land(name, Path(run_dir), args.out, seconds.get(name)), indent=1))


if __name__ == "__main__":
    main()
