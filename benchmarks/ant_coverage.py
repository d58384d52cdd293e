"""Ant policy coverage against env steps and wall-clock hours, beside the official METRA curve.

Trains (or continues) the run when ``--train`` is given, then writes ``<out>.json`` and ``<out>.png`` from the
run's evaluation history (48 deterministic skills, 1 x 1 m bins, every ``eval_every`` epochs).

    python benchmarks/ant_coverage.py --run-dir runs/ant-s0 --train --epochs 2000   # hours on 2 CPU cores
    python benchmarks/ant_coverage.py --run-dir runs/ant-s0                         # just report a run
    python benchmarks/ant_coverage.py --run-dir runs/ant-s0 runs/ant-s1 runs/ant-w1024  # seeds and widths

Runs of the first run's width are compared as seeds (``seed_comparison``); runs of another width are compared
with the first run at every common epoch (``width_comparison``).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np
import yaml

# Official code, state Ant, 2-D skills, seed 0, one A100 node (shared/metra-reference.md section 5).
OFFICIAL = [  # (epoch, env steps, hours, policy coverage)
    (0, 0, 0.0, 4), (1000, 1_600_000, 0.63, 107), (2000, 3_200_000, 1.23, 596), (3000, 4_800_000, 1.83, 1232),
    (5000, 8_000_000, 3.03, 1751), (6000, 9_600_000, 3.63, 2189), (20000, 32_000_000, 12.0, 2444),
    (40000, 64_000_000, 23.9, 2761),
]


def official_at(env_steps: float) -> float:
    steps = [row[1] for row in OFFICIAL]
    return float(np.interp(env_steps, steps, [row[3] for row in OFFICIAL]))


def report(run_dirs: list[Path], out: Path, machine: str) -> dict:
    runs = {}
    for run_dir in run_dirs:
        history = json.loads((run_dir / "eval" / "coverage.json").read_text())
        config = (run_dir / "config.yaml").read_text()
        runs[run_dir.name] = {
            "config": config,
            "rows": [{**row, "hours": round(row["wall_clock_s"] / 3600, 3),
                      "official_at_same_env_steps": round(official_at(row["env_steps"]), 1)} for row in history],
        }
    result = {"machine": machine, "metric": "policy coverage: 48 deterministic skills x 200 steps, 1 x 1 m x-y bins",
              "official": [dict(zip(("epoch", "env_steps", "hours_a100", "policy_coverage"), row)) for row in OFFICIAL],
              "runs": runs}
    # Runs of the first run's width differ by seed; runs of another width are a width comparison.
    first_width = _width(next(iter(runs.values())))
    same_width = {name: run for name, run in runs.items() if _width(run) == first_width}
    if len(same_width) > 1:
        result["seed_comparison"] = compare_seeds(same_width)
    other_width = [name for name in runs if name not in same_width]
    if other_width:
        result["width_comparison"] = compare_widths(runs, other_width)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    plot(result, out.with_suffix(".png"))
    return result


def _width(run: dict) -> int:
    return int(yaml.safe_load(run["config"])["net_width"])


def compare_widths(runs: dict, others: list[str]) -> dict:
    """Each run of another network width against the first run at every common evaluation epoch (same env
    steps): coverage of both and the hours each took to get there."""
    first = next(iter(runs))
    base = {r["epoch"]: r for r in runs[first]["rows"]}
    out = {}
    for name in others:
        rows = [r for r in runs[name]["rows"] if r["epoch"] in base]
        out[name] = {"against": first, "widths": [_width(runs[first]), _width(runs[name])],
                     "rows": [{"epoch": r["epoch"], "env_steps": r["env_steps"],
                               "coverage": [base[r["epoch"]]["policy_coverage"], r["policy_coverage"]],
                               "hours": [base[r["epoch"]]["hours"], r["hours"]]} for r in rows]}
    return out


def compare_seeds(runs: dict, window: int = 5) -> dict:
    """Each later run against the first at their last common evaluation epoch: the raw coverage, and the mean
    over the last ``window`` common evaluations (one evaluation is noisy: +-15 % between neighbours)."""
    names = list(runs)
    by_epoch = {name: {r["epoch"]: r["policy_coverage"] for r in runs[name]["rows"]} for name in names}
    out = {}
    for name in names[1:]:
        common = sorted(set(by_epoch[names[0]]) & set(by_epoch[name]))
        last = common[-window:]
        first_mean = float(np.mean([by_epoch[names[0]][e] for e in last]))
        this_mean = float(np.mean([by_epoch[name][e] for e in last]))
        first, this = by_epoch[names[0]][common[-1]], by_epoch[name][common[-1]]
        out[name] = {"against": names[0], "epoch": common[-1], "coverage": [first, this],
                     "relative_difference": round((this - first) / first, 3),
                     "window_epochs": [last[0], last[-1]], "window_mean": [first_mean, this_mean],
                     "window_relative_difference": round((this_mean - first_mean) / first_mean, 3)}
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    official = result["official"]
    for ax, x_key, official_key, label in ((left, "env_steps", "env_steps", "env steps (M)"),
                                           (right, "hours", "hours_a100", "wall-clock hours")):
        scale = 1e6 if x_key == "env_steps" else 1.0
        ax.plot([r[official_key] / scale for r in official if r["epoch"] <= 6000],
                [r["policy_coverage"] for r in official if r["epoch"] <= 6000], "k--o", ms=3,
                label="official METRA (A100)")
        for name, run in result["runs"].items():
            rows = run["rows"]
            ax.plot([r[x_key] / scale for r in rows], [r["policy_coverage"] for r in rows], label=f"metra-gym {name} (width {_width(run)})")
        ax.set_xlabel(label)
        ax.set_ylabel("policy coverage (1 m bins)")
        ax.grid(alpha=0.3)
        ax.legend()
    left.set_title("Ant coverage per env step")
    right.set_title(f"Ant coverage per hour ({result['machine']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, nargs="+", default=[Path("runs/ant-s0")])
    parser.add_argument("--train", action="store_true", help="train (or resume) the first run before reporting")
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--machine", default=f"2-core {platform.machine()} CPU, no GPU")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ant_coverage"))
    args = parser.parse_args()
    if args.train:
        from pretrain.cli import main as cli

        run = str(args.run_dir[0])
        resume = (args.run_dir[0] / "run_state").exists()
        cli(["train", "--no-progress", "--set", f"epochs={args.epochs}", "--set", "eval_every=50"]
            + (["--resume", run] if resume else ["--config", "ant", "--run-dir", run]))
    result = report(args.run_dir, args.out, args.machine)
    for name, run in result["runs"].items():
        print(f"{name}:  epoch  env_steps  hours  coverage  official@same-steps")
        for row in run["rows"][:: max(1, len(run["rows"]) // 20)] + run["rows"][-1:]:
            print(f"  {row['epoch']:6d} {row['env_steps']:10d} {row['hours']:6.2f} {row['policy_coverage']:9d} "
                  f"{row['official_at_same_env_steps']:9.0f}")
    for name, c in result.get("seed_comparison", {}).items():
        print(f"{name} vs {c['against']} at epoch {c['epoch']}: {c['coverage'][1]} vs {c['coverage'][0]} bins "
              f"({c['relative_difference']:+.0%}); mean of epochs {c['window_epochs'][0]}-{c['window_epochs'][1]}: "
              f"{c['window_mean'][1]:.0f} vs {c['window_mean'][0]:.0f} ({c['window_relative_difference']:+.0%})")
    for name, c in result.get("width_comparison", {}).items():
        last = c["rows"][-1]
        print(f"{name} (width {c['widths'][1]}) vs {c['against']} (width {c['widths'][0]}) at epoch {last['epoch']}: "
              f"{last['coverage'][1]} vs {last['coverage'][0]} bins, {last['hours'][1]:.2f} h vs {last['hours'][0]:.2f} h")


if __name__ == "__main__":
    main()
