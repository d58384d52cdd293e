"""Downstream tasks: hierarchical control over our bundled skills vs its untrained self vs flat SAC, at equal
low-level env steps.

Each (task, agent, seed) run trains for ``--steps`` low-level steps and is evaluated every ``--eval-every``
low-level steps on 10 deterministic episodes of a separate evaluation env; the first evaluation (before any
update: the untrained controller) and the last use ``--final-episodes`` episodes. A run writes its curve to
``<out>/curves/<task>-<agent>-s<seed>.json`` after every evaluation, so a killed or time-limited run keeps what it
measured; ``--time-limit`` stops a run (after an evaluation) once it has trained that many seconds. At the end
the runs found in ``<out>/curves`` are gathered into ``<out>/downstream.json`` and ``<out>/downstream.png``: per task,
the mean and 95% t-interval over seeds of the untrained controller (each hierarchical run's step-0 evaluation), of
the trained controller at its last step, and of both agents at the steps every run of the task reached.

    python benchmarks/downstream.py --steps 100000 --seeds 0 1 2 --jobs 2    # hours on 2 CPU cores
    python benchmarks/downstream.py --plot-only                              # re-gather existing runs

The committed results: flat SAC at 30,000 steps; hierarchical at 50,000 (Ant) and 102,400 (HalfCheetah):

    python benchmarks/downstream.py --agents flat --steps 30000 --eval-every 5000
    python benchmarks/downstream.py --tasks ant_multigoals --agents hierarchical --steps 50000
    python benchmarks/downstream.py --tasks cheetah_hurdle cheetah_goal --agents hierarchical --steps 102400
    python benchmarks/downstream.py --agents random
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

# "random": a controller that draws a uniform random skill each high-level step (nothing trained; one evaluation).
AGENTS = ("hierarchical", "flat", "random")
# Two-sided 95% Student t quantiles by degrees of freedom (3 seeds: 2 degrees, +-4.30 standard errors).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def interval(values: list[float]) -> dict:
    """Mean and 95% t-interval of the mean over seeds (``low == high == mean`` for a single seed)."""
    x = np.asarray(values, dtype=np.float64)
    half = T95.get(len(x) - 1, 1.96) * x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0
    return {"mean": float(x.mean()), "low": float(x.mean() - half), "high": float(x.mean() + half),
            "values": [float(v) for v in x], "seeds": len(x)}


def skills_digest(task_name: str) -> str:
    """First 12 hex digits of the sha256 of the bundled skill weights a task's skill env loads."""
    import gymnasium as gym

    from metra_gym.skill_checkpoint.hub import resolve_checkpoint
    from pretrain.downstream import task

    folder = resolve_checkpoint(gym.spec(task(task_name).skill_id).kwargs["checkpoint"])
    return hashlib.sha256((Path(folder) / "model.safetensors").read_bytes()).hexdigest()[:12]


def curve_state(path: Path) -> str:
    """``"finished"``, ``"running"`` (its writer, a process of this machine, is alive) or ``"killed"``. Curves
    written before the ``finished`` flag count as finished."""
    row = json.loads(path.read_text())
    if row.get("finished", True):
        return "finished"
    writer = row.get("writer", {})
    if writer.get("host") != platform.node():
        return "running"  # another machine's process: it cannot be checked from here
    try:
        os.kill(writer["pid"], 0)
    except ProcessLookupError:
        return "killed"
    except PermissionError:
        pass  # alive, another user's
    return "running"


def run(task_name: str, agent_kind: str, seed: int, steps: int, eval_every: int, time_limit: float,
        out: Path, flat_device: str = "cpu", skip_existing: bool = False, final_episodes: int = 50) -> dict | None:
    """Train one agent, evaluating as it goes; returns (and keeps writing) its curve. With ``skip_existing``, a
    run whose curve is finished, or is being written by a live process of this machine, is left alone; the
    partial curve of a killed run is started again (runs do not resume)."""
    path = out / "curves" / f"{task_name}-{agent_kind}-s{seed}.json"
    if skip_existing and path.exists():
        state = curve_state(path)
        if state != "killed":
            print(f"{task_name} {agent_kind} seed {seed}: {path} is {state}, skipped", flush=True)
            return None
        print(f"{task_name} {agent_kind} seed {seed}: {path} was left by a killed run, started again", flush=True)
    import gymnasium as gym
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    from metra_gym.registration import SKILL_STEPS
    from pretrain.downstream import controller_env, flat_agent, hierarchical_agent, task

    torch.set_num_threads(1)  # one run per core
    if agent_kind == "random":
        return random_skills(task_name, seed, final_episodes, path)
    hierarchical = agent_kind == "hierarchical"
    scale = SKILL_STEPS if hierarchical else 1
    agent = hierarchical_agent(task_name, seed) if hierarchical else flat_agent(task_name, seed, device=flat_device)
    spec = task(task_name)
    eval_env = Monitor(controller_env(task_name) if hierarchical else gym.make(spec.low_level_id))
    eval_env.reset(seed=10_000 + seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {"task": task_name, "agent": agent_kind, "algorithm": type(agent).__name__, "seed": seed,
           "steps": steps, "points": [], "episodes": [], "seconds": 0.0, "stopped_by_time_limit": False,
           "device": "cpu" if hierarchical else flat_device, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
           "writer": {"host": platform.node(), "pid": os.getpid()}, "finished": False}
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

        def _evaluate(self, episodes: int = 10) -> None:
            returns, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=episodes, deterministic=True,
                                         return_episode_rewards=True)
            step = self.model.num_timesteps * scale
            if row["points"] and row["points"][-1][0] == step:  # the last evaluation again, on more episodes
                row["points"].pop(), row["episodes"].pop()
            row["points"].append((step, float(np.mean(returns))))
            row["episodes"].append(episodes)
            write(row)

        def _on_training_start(self) -> None:
            self._evaluate(final_episodes)  # the untrained controller

        def _on_step(self) -> bool:
            if (self.model.num_timesteps * scale) % eval_every == 0:
                self._evaluate()
                if time_limit and time.time() - start > time_limit:
                    row["stopped_by_time_limit"] = True
                    return False
            return True

    curve = Curve()
    agent.learn(steps // scale, callback=curve)
    curve._evaluate(final_episodes)
    row["finished"] = True
    write(row)
    print(f"{task_name} {agent_kind} seed {seed}: return {row['points'][-1][1]:.2f} after "
          f"{row['points'][-1][0]} steps ({row['seconds']} s)", flush=True)
    return row


def _at(points: list, steps: int) -> float:
    """A curve's return at the last evaluation at or before ``steps``."""
    return [y for x, y in points if x <= steps][-1]


def random_skills(task_name: str, seed: int, episodes: int, path: Path) -> dict:
    """Evaluate the random-skill controller (a uniform skill each high-level step) on ``episodes`` episodes."""
    from pretrain.downstream import controller_env

    env = controller_env(task_name)
    env.reset(seed=10_000 + seed)
    env.action_space.seed(seed)
    returns = []
    for _ in range(episodes):
        env.reset()
        done, total = False, 0.0
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    row = {"task": task_name, "agent": "random", "algorithm": "uniform random skills", "seed": seed, "steps": 0,
           "points": [(0, float(np.mean(returns)))], "episodes": [episodes], "skills_sha256": skills_digest(task_name)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row, indent=1))
    print(f"{task_name} random skills seed {seed}: return {row['points'][0][1]:.2f}", flush=True)
    return row


def gather(out: Path) -> dict:
    """Collect every run file under ``out/curves`` into one results dict, with per-task summaries: each agent at
    the steps every run of the task reached (``common_steps``) and at its own last steps, and the untrained
    controller (the hierarchical runs' step-0 evaluations), also paired by seed (trained minus untrained)."""
    results: dict = {"tasks": {}}
    for path in sorted((out / "curves").glob("*.json")):
        row = json.loads(path.read_text())
        if not row.get("finished", True):
            print(f"{path}: {curve_state(path)}, not finished; left out of the summary", flush=True)
            continue
        results["tasks"].setdefault(row["task"], {}).setdefault(row["agent"], {})[str(row["seed"])] = row
    for name, agents in results["tasks"].items():
        # Compare the trained agents at the low-level steps that every run of the task reached.
        common = min(r["points"][-1][0] for kind, runs in agents.items() if kind != "random" for r in runs.values())
        summary: dict = {"common_steps": common}
        if "random" in agents:
            summary["random_skills"] = interval([r["points"][0][1] for r in agents["random"].values()])
            agents["random"] = {"runs": agents.pop("random")}
        for kind, runs in agents.items():
            if kind == "random":
                continue
            last = min(r["points"][-1][0] for r in runs.values())
            summary[kind] = {"at_common_steps": interval([_at(r["points"], common) for r in runs.values()]),
                             "last_steps": last,
                             "at_last_steps": interval([_at(r["points"], last) for r in runs.values()])}
            agents[kind] = {"runs": runs}
        if "hierarchical" in agents:
            untrained = summary["untrained"] = interval([r["points"][0][1]
                                                         for r in agents["hierarchical"]["runs"].values()])
            trained = summary["hierarchical"]["at_last_steps"]
            summary["learned"] = trained["low"] > untrained["high"]  # non-overlapping 95% intervals
            # Paired by seed: each run's controller after training minus the same controller before any update.
            # The untrained score varies most between seeds (which skill a fresh network happens to favour), and
            # pairing removes that from the comparison; a paired interval above 0 says training helped.
            last = summary["hierarchical"]["last_steps"]
            gain = summary["gain_over_untrained_paired"] = interval(
                [_at(r["points"], last) - r["points"][0][1] for r in agents["hierarchical"]["runs"].values()])
            summary["learned_paired"] = gain["low"] > 0
            if "random_skills" in summary:
                summary["beats_random_skills"] = trained["low"] > summary["random_skills"]["high"]
            if "flat" in agents:
                summary["beats_flat"] = (summary["hierarchical"]["at_common_steps"]["low"]
                                         > summary["flat"]["at_common_steps"]["high"])
        results["tasks"][name] = {"summary": summary, **agents}
    return results


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted(results["tasks"])
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.5 * len(tasks), 3.8), squeeze=False)
    for ax, task_name in zip(axes[0], tasks):
        entry = results["tasks"][task_name]
        for kind, color in (("hierarchical", "tab:blue"), ("flat", "tab:gray")):
            if kind not in entry:
                continue
            runs = entry[kind]["runs"].values()
            grid = np.unique(np.concatenate([np.array(r["points"])[:, 0] for r in runs]))
            grid = grid[grid <= entry["summary"][kind]["last_steps"]]
            ys = np.stack([np.interp(grid, *np.array(r["points"]).T) for r in runs])
            bands = [interval(list(column)) for column in ys.T]
            ax.plot(grid / 1e3, ys.mean(0), color=color, label=f"{kind} ({len(ys)} seeds)")
            ax.fill_between(grid / 1e3, [b["low"] for b in bands], [b["high"] for b in bands], color=color,
                            alpha=0.2)
        for key, color, label in (("untrained", "tab:orange", "untrained controller (step 0)"),
                                  ("random_skills", "tab:green", "random skills")):
            if key in entry["summary"]:
                u = entry["summary"][key]
                ax.axhline(u["mean"], color=color, ls="--", label=label)
                ax.axhspan(u["low"], u["high"], color=color, alpha=0.12)
        ax.set(title=task_name, xlabel="low-level env steps (k)", ylabel="return (mean, 95% interval)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
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
    parser.add_argument("--final-episodes", type=int, default=50,
                        help="evaluation episodes before training (the untrained controller) and at the end")
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
                 args.skip_existing, args.final_episodes)
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
    def show(i: dict) -> str:
        return f"{i['mean']:6.2f} [{i['low']:6.2f}, {i['high']:6.2f}]"

    for name, entry in sorted(results["tasks"].items()):
        summary = entry["summary"]
        if "untrained" in summary:
            print(f"{name:15s} untrained controller     {show(summary['untrained'])}")
        if "random_skills" in summary:
            print(f"{name:15s} random skills            {show(summary['random_skills'])}")
        for kind in ("hierarchical", "flat"):
            if kind in summary:
                print(f"{name:15s} {kind:12s} at {summary['common_steps']:6d} {show(summary[kind]['at_common_steps'])}"
                      f"; at {summary[kind]['last_steps']:6d} {show(summary[kind]['at_last_steps'])}")
        if "gain_over_untrained_paired" in summary:
            print(f"{name:15s} trained - untrained, paired by seed {show(summary['gain_over_untrained_paired'])}")
        print(f"{name:15s} learned: {summary.get('learned')} (paired: {summary.get('learned_paired')}), beats random skills: "
              f"{summary.get('beats_random_skills')}, beats flat: {summary.get('beats_flat')}")
    print(f"wrote {args.out / 'downstream.json'} and .png")


if __name__ == "__main__":
    main()
