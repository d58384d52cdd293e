"""Seconds per epoch of METRA vs plain SB3 SAC with the same networks, side by side, with a profile.

One epoch = 8 episodes x 200 env steps on Ant + 50 gradient steps (batch 256). Both algorithms run on the
same skill-conditioned Ant environment; plain SAC uses the environment reward, METRA relabels with phi.
Each (algorithm, width) is measured in alternation, ``--rounds`` times, after one warm-up epoch, and the
profile splits an epoch into env stepping, policy inference, replay-buffer writes, other collection overhead
and gradient steps.

    python benchmarks/epoch_time.py --widths 256 1024 --threads 2 --out benchmarks/results/epoch_time.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch as th
from stable_baselines3 import SAC

from pretrain.algorithms.metra.policies import METRAPolicy
from pretrain.run.config import load_config
from pretrain.run.trainer import build_model, env_factory, policy_kwargs, training_env


def timed(fn, bucket: dict[str, float], key: str):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            bucket[key] += time.perf_counter() - start

    return wrapper


def make(algo: str, width: int, tmp: Path):
    config = load_config("ant", [f"net_width={width}", "learning_starts=1600", "buffer_size=100000"])
    venv = training_env(config, env_factory(config))
    if algo == "metra":
        model = build_model(config, venv, tmp)
    else:
        model = SAC(METRAPolicy, venv, learning_rate=1e-4, buffer_size=100_000, learning_starts=1600, batch_size=256,
                    train_freq=(200, "step"), gradient_steps=50, ent_coef="auto_0.01", target_entropy=-4.0,
                    policy_kwargs=policy_kwargs(config), seed=0, device="cpu")  # same networks and optimiser
    times: dict[str, float] = defaultdict(float)
    model.env.step_wait = timed(model.env.step_wait, times, "env_step")
    model._sample_action = timed(model._sample_action, times, "inference")
    model.replay_buffer.add = timed(model.replay_buffer.add, times, "buffer_add")
    model.collect_rollouts = timed(model.collect_rollouts, times, "collect")
    model.train = timed(model.train, times, "train")
    model.learn(1600 * 2)  # warm-up: fills learning_starts and runs one training epoch
    return model, times


def epoch(model, times) -> dict[str, float]:
    times.clear()
    start = time.perf_counter()
    model.learn(1600, reset_num_timesteps=False)
    total = time.perf_counter() - start
    row = dict(times)
    row["collect_other"] = row["collect"] - row["env_step"] - row["inference"] - row["buffer_add"]
    row["total"] = total
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--out", default="benchmarks/results/epoch_time.json")
    args = parser.parse_args()
    th.set_num_threads(args.threads)
    tmp = Path("runs/.bench")
    results = {"machine": f"{platform.machine()}, {th.get_num_threads()} torch threads, "
                          f"{len(__import__('os').sched_getaffinity(0))} cores", "note": args.note, "widths": {}}
    for width in args.widths:
        models = {algo: make(algo, width, tmp) for algo in ("sac", "metra")}
        rows: dict[str, list[dict[str, float]]] = {"sac": [], "metra": []}
        for _ in range(args.rounds):
            for algo, (model, times) in models.items():
                rows[algo].append(epoch(model, times))
        summary = {}
        for algo, algo_rows in rows.items():
            keys = ["total", "env_step", "inference", "buffer_add", "collect_other", "train"]
            summary[algo] = {k: round(float(np.median([r[k] for r in algo_rows])), 3) for k in keys}
        summary["metra_over_sac"] = round(summary["metra"]["total"] / summary["sac"]["total"], 3)
        results["widths"][str(width)] = summary
        print(f"width {width}: " + json.dumps(summary), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
