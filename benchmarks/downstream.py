"""Downstream tasks: hierarchical control over our bundled skills vs flat SAC, at equal low-level env steps.

For each task and seed, trains both agents for ``--steps`` low-level steps, evaluating every ``--eval-every``
low-level steps on 10 deterministic episodes, and writes the return curves (JSON) and a plot.

    python benchmarks/downstream.py --steps 200000 --seeds 0 1 2     # hours on 2 CPU cores
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy

from pretrain.downstream import SKILL_STEPS, TASKS, flat_agent, hierarchical_agent


class Curve(BaseCallback):
    """Evaluate every ``every`` agent steps (= low-level steps / scale)."""

    def __init__(self, every: int, scale: int) -> None:
        super().__init__()
        self.every, self.scale = every, scale
        self.points: list[tuple[int, float]] = []

    def _evaluate(self) -> None:
        returns, _ = evaluate_policy(self.model, self.model.get_env(), n_eval_episodes=10, deterministic=True,
                                     return_episode_rewards=True)
        self.points.append((self.num_timesteps * self.scale, float(np.mean(returns))))

    def _on_training_start(self) -> None:
        self._evaluate()

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every == 0:
            self._evaluate()
        return True


def run(task: str, hierarchical: bool, seed: int, steps: int, eval_every: int) -> dict:
    scale = SKILL_STEPS if hierarchical else 1
    agent = hierarchical_agent(task, seed) if hierarchical else flat_agent(task, seed)
    curve = Curve(max(1, eval_every // scale), scale)
    start = time.time()
    agent.learn(steps // scale, callback=curve)
    return {"points": curve.points, "seconds": round(time.time() - start, 1), "agent": type(agent).__name__}


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(results["tasks"])
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for kind, color in (("hierarchical", "tab:blue"), ("flat", "tab:gray")):
            curves = [np.array(r["points"]) for r in results["tasks"][task][kind].values()]
            n = min(len(c) for c in curves)
            x = curves[0][:n, 0] / 1e3
            ys = np.stack([c[:n, 1] for c in curves])
            ax.plot(x, ys.mean(0), color=color, label=f"{kind} ({len(curves)} seeds)")
            ax.fill_between(x, ys.min(0), ys.max(0), color=color, alpha=0.2)
        ax.set(title=task, xlabel="low-level env steps (k)", ylabel="return")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=sorted(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200_000, help="low-level env steps per run")
    parser.add_argument("--eval-every", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/downstream"))
    args = parser.parse_args()
    results = {"steps": args.steps, "seeds": args.seeds, "skills": "bundled checkpoints", "tasks": {}}
    for task in args.tasks:
        results["tasks"][task] = {"hierarchical": {}, "flat": {}}
        for seed in args.seeds:
            for kind in ("hierarchical", "flat"):
                row = run(task, kind == "hierarchical", seed, args.steps, args.eval_every)
                results["tasks"][task][kind][str(seed)] = row
                print(f"{task} {kind} seed {seed}: final return {row['points'][-1][1]:.2f} ({row['seconds']} s)",
                      flush=True)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    plot(results, args.out.with_suffix(".png"))
    print(f"wrote {args.out}.json and .png")


if __name__ == "__main__":
    main()
