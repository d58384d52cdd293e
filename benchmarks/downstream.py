"""Downstream tasks: hierarchical control over our bundled skills vs flat SAC, at equal low-level env steps.

Each (task, agent, seed) run trains for ``--steps`` low-level steps and is evaluated every ``--eval-every``
low-level steps on 10 deterministic episodes of a separate evaluation env. A run writes its curve to
``<out>/curves/<task>-<agent>-s<seed>.json`` after every evaluation, so a killed or time-limited run keeps what it
measured; ``--time-limit`` stops a run (after an evaluation) once it has trained that many seconds. At the end
the runs found in ``<out>/curves`` are gathered into ``<out>/downstream.json`` and ``<out>/downstream.png``.

    python benchmarks/downstream.py --steps 100000 --seeds 0 1 2 --jobs 2    # hours on 2 CPU cores
    python benchmarks/downstream.py --plot-only                              # re-gather existing runs
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import os
import platform
import time
from pathlib import Path

import numpy as np

AGENTS = ("hierarchical", "flat")


def skills_digest(task_name: str) -> str:
    """First 12 hex digits of the sha256 of the bundled skill weights a task's skill env loads."""
    import gymnasium as gym

    from metra_gym.skill_checkpoint.hub import resolve_checkpoint
    from pretrain.downstream import task

    folder = resolve_checkpoint(gym.spec(task(task_name).skill_id).kwargs["checkpoint"])
    return hashlib.sha256((Path(folder) / "model.safetensors").read_bytes()).hexdigest()[:12]


def run(task_name: str, agent_kind: str, seed: int, steps: int, eval_every: int, time_limit: float,
        out: Path, flat_device: str = "cpu", skip_existing: bool = False) -> dict | None:
    """Train one agent, evaluating as it goes; returns (and keeps writing) its curve. With ``skip_existing``, a
    run whose file exists (finished, or started by another invocation) is left alone."""
    path = out / "curves" / f"{task_name}-{agent_kind}-s{seed}.json"
    if skip_existing and path.exists():
        print(f"{task_name} {agent_kind} seed {seed}: {path} exists, skipped", flush=True)
        return None
    import gymnasium as gym
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    from metra_gym.registration import SKILL_STEPS
    from pretrain.downstream import flat_agent, hierarchical_agent, task

    torch.set_num_threads(1)  # one run per core
    hierarchical = agent_kind == "hierarchical"
    scale = SKILL_STEPS if hierarchical else 1
    agent = hierarchical_agent(task_name, seed) if hierarchical else flat_agent(task_name, seed, device=flat_device)
    spec = task(task_name)
    eval_env = Monitor(gym.make(spec.skill_id if hierarchical else spec.low_level_id))
    eval_env.reset(seed=10_000 + seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {"task": task_name, "agent": agent_kind, "algorithm": type(agent).__name__, "seed": seed,
           "steps": steps, "points": [], "seconds": 0.0, "stopped_by_time_limit": False,
           "device": "cpu" if hierarchical else flat_device, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    if hierarchical:
        row["skills_sha256"] = skills_digest(task_name)
    start = time.time()

    def write(row: dict) -> None:  # atomically: a killed run leaves its last complete curve
        row["seconds"] = round(time.time() - start, 1)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(row, indent=1))
        tmp.replace(path)

    class Curve(BaseCallback):
        """Evaluate every ``eval_every`` low-level steps; stop once the time limit has passed."""

        def _evaluate(self) -> None:
            returns, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=10, deterministic=True,
                                         return_episode_rewards=True)
            row["points"].append((self.model.num_timesteps * scale, float(np.mean(returns))))
            write(row)

        def _on_training_start(self) -> None:
            self._evaluate()

        def _on_step(self) -> bool:
            if (self.model.num_timesteps * scale) % eval_every == 0:
                self._evaluate()
                if time_limit and time.time() - start > time_limit:
                    row["stopped_by_time_limit"] = True
                    return False
            return True

    curve = Curve()
    agent.learn(steps // scale, callback=curve)
    if row["points"][-1][0] != agent.num_timesteps * scale:  # the budget is not a multiple of eval_every
        curve._evaluate()
    write(row)
    print(f"{task_name} {agent_kind} seed {seed}: return {row['points'][-1][1]:.2f} after "
          f"{row['points'][-1][0]} steps ({row['seconds']} s)", flush=True)
    return row


def gather(out: Path) -> dict:
    """Collect every run file under ``out/curves`` into one results dict."""
    results: dict = {"tasks": {}}
    for path in sorted((out / "curves").glob("*.json")):
        row = json.loads(path.read_text())
        results["tasks"].setdefault(row["task"], {}).setdefault(row["agent"], {})[str(row["seed"])] = row
    for agents in results["tasks"].values():
        # Compare both agents at the low-level steps that every run of the task reached.
        common = min(r["points"][-1][0] for runs in agents.values() for r in runs.values())
        for kind, runs in agents.items():
            at_common = [[y for x, y in r["points"] if x <= common][-1] for r in runs.values()]
            last = min(r["points"][-1][0] for r in runs.values())
            at_last = [[y for x, y in r["points"] if x <= last][-1] for r in runs.values()]
            agents[kind] = {"runs": runs, "common_steps": common, "return_at_common_steps": at_common,
                            "mean_at_common_steps": float(np.mean(at_common)), "last_steps": last,
                            "return_at_last_steps": at_last, "mean_at_last_steps": float(np.mean(at_last))}
    return results


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted(results["tasks"])
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.8), squeeze=False)
    for ax, task_name in zip(axes[0], tasks):
        for kind, color in (("hierarchical", "tab:blue"), ("flat", "tab:gray")):
            if kind not in results["tasks"][task_name]:
                continue
            runs = results["tasks"][task_name][kind]["runs"].values()
            grid = np.unique(np.concatenate([np.array(r["points"])[:, 0] for r in runs]))
            grid = grid[grid <= results["tasks"][task_name][kind]["last_steps"]]
            ys = np.stack([np.interp(grid, *np.array(r["points"]).T) for r in runs])
            ax.plot(grid / 1e3, ys.mean(0), color=color, label=f"{kind} ({len(ys)} seeds)")
            ax.fill_between(grid / 1e3, ys.min(0), ys.max(0), color=color, alpha=0.2)
        ax.set(title=task_name, xlabel="low-level env steps (k)", ylabel="return (10 episodes)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    from metra_gym.registration import SKILL_STEPS
    from pretrain.downstream import TASKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument("--agents", nargs="+", choices=AGENTS, default=list(AGENTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100_000, help="low-level env steps per run")
    parser.add_argument("--eval-every", type=int, default=10_000, help=f"low-level steps; a multiple of {SKILL_STEPS}")
    parser.add_argument("--time-limit", type=float, default=0.0, help="seconds per run (0: none)")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel, one core each")
    parser.add_argument("--flat-device", default="cpu", help="torch device of the flat SAC baseline")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/downstream"))
    parser.add_argument("--plot-only", action="store_true", help="only gather existing runs and plot")
    parser.add_argument("--skip-existing", action="store_true",
                        help="leave runs alone whose file exists (lets several invocations share one list)")
    args = parser.parse_args()
    if args.eval_every % SKILL_STEPS:
        parser.error(f"--eval-every must be a multiple of the {SKILL_STEPS} low-level steps of a skill, "
                     f"got {args.eval_every}")

    if not args.plot_only:
        jobs = [(t, a, s, args.steps, args.eval_every, args.time_limit, args.out, args.flat_device,
                 args.skip_existing)
                for t, s, a in itertools.product(args.tasks, args.seeds, args.agents)]
        if args.jobs > 1:
            with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
                pool.starmap(run, jobs, chunksize=1)
        else:
            for job in jobs:
                run(*job)
    results = gather(args.out)
    if not results["tasks"]:
        raise SystemExit(f"no runs found under {args.out / 'curves'}; run without --plot-only first")
    (args.out / "downstream.json").write_text(json.dumps(results, indent=1))
    plot(results, args.out / "downstream.png")
    for name, agents in sorted(results["tasks"].items()):
        for kind, summary in agents.items():
            print(f"{name:15s} {kind:12s} return {summary['mean_at_common_steps']:7.2f} at {summary['common_steps']} "
                  f"steps (seeds: {', '.join(f'{v:.2f}' for v in summary['return_at_common_steps'])}); "
                  f"{summary['mean_at_last_steps']:7.2f} at {summary['last_steps']}")
    print(f"wrote {args.out / 'downstream.json'} and .png")


if __name__ == "__main__":
    main()
