"""The training curves of several runs side by side, read from their TensorBoard files: what says, before more hours
are spent, whether phi sees the motion (intrinsic reward, lambda, ``sq_phi_step``, phi's sensitivity to each
observation group) and how SAC fares (alpha, losses).

    python benchmarks/training_curves.py --runs default=runs/humanoid_screens/humanoid_state-default-seed=0 \\
        dmc=runs/humanoid_screens/humanoid_state-dmc-seed=0 --out benchmarks/results/humanoid_screens

Writes ``curves.png`` (one panel per tag, env steps on x, one line per run, every logged point), ``curves.csv`` (run,
tag, env step, value: at most ``--csv-points`` evenly spaced points per run and tag, the last included) and ``last.json`` (per run and tag: the mean of the last ``--last`` points, with the env
step reached). ``--tags`` chooses the tags (default: METRA's diagnostics, plus every ``phi/sensitivity_*`` the runs
logged, and the three coverages).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

DEFAULT_TAGS = ["skill/intrinsic_reward", "metra/lambda", "metra/sq_phi_step", "metra/constraint_violation",
                "train/ent_coef", "train/critic_loss", "eval/policy_coverage", "eval/queue_coverage",
                "eval/total_coverage"]
SENSITIVITY = "phi/sensitivity_"


def read_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of every TensorBoard file under ``run_dir/tb`` (a resumed run may have several), by tag, sorted by
    step; a step logged twice (a run resumed before its last log) keeps the later value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted((run_dir / "tb").rglob("events.out.tfevents.*"), key=lambda path: path.stat().st_mtime)
    if not files:
        raise SystemExit(f"{run_dir} has no TensorBoard files under tb/: give a run folder of metra-pretrain train")
    by_tag: dict[str, dict[int, float]] = {}
    for file in files:
        accumulator = EventAccumulator(str(file), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            by_tag.setdefault(tag, {}).update({event.step: event.value for event in accumulator.Scalars(tag)})
    return {tag: sorted(points.items()) for tag, points in by_tag.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", required=True, metavar="NAME=RUN_DIR")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tags", nargs="+", help="TensorBoard tags (default: METRA's diagnostics)")
    parser.add_argument("--last", type=int, default=10, help="points averaged for last.json")
    parser.add_argument("--csv-points", type=int, default=300, help="points per run and tag kept in curves.csv")
    args = parser.parse_args()
    runs = {}
    for item in args.runs:
        name, sep, folder = item.partition("=")
        if not sep or not name:
            parser.error(f"--runs takes NAME=RUN_DIR, got {item!r}")
        runs[name] = read_scalars(Path(folder))
    logged = sorted({tag for scalars in runs.values() for tag in scalars})
    tags = args.tags or [*DEFAULT_TAGS, *(tag for tag in logged if tag.startswith(SENSITIVITY))]
    missing = [tag for tag in tags if tag not in logged]
    if args.tags and missing:
        parser.error(f"no run logged {missing}; the runs logged: {logged}")
    tags = [tag for tag in tags if tag in logged]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    args.out.mkdir(parents=True, exist_ok=True)
    columns = 4
    rows = -(-len(tags) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 2.8 * rows), squeeze=False)
    last: dict[str, dict[str, dict[str, float]]] = {}
    with (args.out / "curves.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["run", "tag", "env_step", "value"])
        for axis, tag in zip(axes.flat, tags):
            for name, scalars in runs.items():
                points = scalars.get(tag, [])
                stride = -(-len(points) // args.csv_points) if points else 1
                kept = points[::stride] + ([points[-1]] if points and (len(points) - 1) % stride else [])
                writer.writerows([name, tag, step, f"{value:.6g}"] for step, value in kept)
                if points:
                    axis.plot([step / 1e6 for step, _ in points], [value for _, value in points], label=name)
                    tail = [value for _, value in points[-args.last:]]
                    last.setdefault(name, {})[tag] = {"env_steps": points[-1][0],
                                                      "mean_of_last": round(sum(tail) / len(tail), 6)}
            axis.set_title(tag, fontsize=9)
            axis.set_xlabel("env steps (M)", fontsize=8)
        for axis in list(axes.flat)[len(tags):]:
            axis.axis("off")
    axes.flat[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.out / "curves.png", dpi=80)
    (args.out / "last.json").write_text(json.dumps(last, indent=1) + "\n")
    print(f"wrote {args.out}/curves.png, curves.csv, last.json ({len(tags)} tags, {len(runs)} runs)")


if __name__ == "__main__":
    main()
