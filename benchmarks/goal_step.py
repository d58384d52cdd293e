"""What skipping dm_control's run reward saves a DMC goal task's step (``metra/QuadrupedGoal-v0``,
``metra/HumanoidGoal-v0``): the goal task pays its own reward, so it no longer asks dm_control's task for one at
each control step. Per round, the same seeded random actions two ways: ``skipped`` (the env as it is) and
``computed`` (the task's own ``get_reward`` put back, as before); rounds interleave the two so that a busy machine
slows them alike, and the medians of the process's CPU microseconds per step are reported.

    python benchmarks/goal_step.py --rounds 7 --steps 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENVS = ("metra/QuadrupedGoal-v0", "metra/HumanoidGoal-v0")


def per_step_us(env, actions: np.ndarray) -> float:
    env.reset(seed=0)
    start = time.process_time()
    for action in actions:
        if env.step(action)[2]:  # the goal reached: the episode ends
            env.reset(seed=0)
    return (time.process_time() - start) / len(actions) * 1e6


def main() -> None:
    import gymnasium as gym
    import torch

    import metra_gym  # noqa: F401

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "goal_step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for env_id in ENVS:
        skipped, computed = gym.make(env_id), gym.make(env_id)
        task = computed.unwrapped._task
        del task.get_reward  # the instance's stand-in gone: the task class's own reward again
        actions = np.random.default_rng(0).uniform(-1, 1, (args.steps, *skipped.action_space.shape))
        times: dict[str, list[float]] = {"skipped": [], "computed": []}
        for _ in range(args.rounds):
            times["skipped"].append(per_step_us(skipped, actions))
            times["computed"].append(per_step_us(computed, actions))
        medians = {name: round(float(np.median(values)), 1) for name, values in times.items()}
        rows.append({"env": env_id, "us_per_step": medians, "ratio": round(medians["skipped"] / medians["computed"], 3),
                     "per_round_us": {name: [round(v, 1) for v in values] for name, values in times.items()}})
        print(f"{env_id}: {medians['skipped']} us a step, {medians['computed']} with dm_control's reward "
              f"({rows[-1]['ratio']}x)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(
        {"what": __doc__.split("\n\n")[0], "date": time.strftime("%Y-%m-%d"), "clock": "process", "threads": 1,
         "machine": f"{platform.machine()}, {os.cpu_count()} cores", "rounds": args.rounds, "steps": args.steps,
         "measurements": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
