"""Seconds per epoch of training variants, side by side with plain SB3 SAC on the same machine.

One epoch = ``n_envs`` episodes x ``episode_steps`` env steps (Ant: 8 x 200) + ``gradient_steps`` gradient steps.
Each variant is a list of config overrides of ``--config`` (``,``-separated; ``default`` = none); ``sac`` is the
reference every result is stated with: SB3's SAC with the same networks and optimiser, the environment reward,
50 gradient steps per epoch, 2 torch threads. Variants are timed in alternation, ``--rounds`` times, each round
``--epochs`` consecutive epochs after one untimed epoch (so that an overlapped collector is in its steady state);
the median per-epoch time is reported.

    python benchmarks/epoch_time.py --variants sac default gradient_steps=100 \\
        gradient_steps=100,collector=overlapped,torch_threads=1 --out benchmarks/results/epoch_time/summary.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch as th
from measurements import append_measurement
from stable_baselines3 import SAC

from pretrain.algorithms.common.policies import SkillSACPolicy
from pretrain.config import load_config
from pretrain.run.collector import attach_collector
from pretrain.run.envs import env_factory, training_env
from pretrain.run.model import algorithm_class, build_model

REFERENCE = "sac"


def build(config_name: str, variant: str, tmp: Path):
    """A model ready to train (its buffer past ``learning_starts``), and the threads it runs with."""
    overrides = [] if variant in ("default", REFERENCE) else variant.split(",")
    config = load_config(config_name, [*overrides, "buffer_size=100000", "eval_every=1000000"])
    config.learning_starts = config.steps_per_epoch  # training from the second epoch on
    venv = training_env(config, env_factory(config))
    if variant == REFERENCE:
        config.torch_threads = 2
        model = SAC(SkillSACPolicy, venv, learning_rate=1e-4, buffer_size=100_000,
                    learning_starts=config.learning_starts, batch_size=256, train_freq=(config.episode_steps, "step"),
                    gradient_steps=50, ent_coef="auto_0.01", target_entropy=-float(venv.action_space.shape[0]) / 2,
                    policy_kwargs=algorithm_class(config).config_kwargs(config)["policy_kwargs"], seed=0,
                    device="cpu")
    else:
        model = build_model(config, venv, tmp)
        attach_collector(model, config)
    th.set_num_threads(config.torch_threads)
    model.learn(2 * config.steps_per_epoch)  # warm-up: fills learning_starts and trains once
    return model, config


def time_epochs(model, config, epochs: int, clock=time.perf_counter) -> float:
    th.set_num_threads(config.torch_threads)
    model.learn(config.steps_per_epoch, reset_num_timesteps=False)  # untimed: refills an overlapped pipeline
    start = clock()
    model.learn(epochs * config.steps_per_epoch, reset_num_timesteps=False)
    return (clock() - start) / epochs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="ant")
    parser.add_argument("--variants", nargs="+", default=[REFERENCE, "default"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per round")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--clock", choices=["wall", "process"], default="wall",
                        help="process: this process's CPU seconds (the learner's side only, an overlapped collector's "
                             "worker excluded), which other programs on a busy machine disturb far less than the wall "
                             "clock")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/epoch_time/summary.json"))
    args = parser.parse_args()
    clock = time.process_time if args.clock == "process" else time.perf_counter
    if REFERENCE not in args.variants:
        args.variants.insert(0, REFERENCE)
    with tempfile.TemporaryDirectory() as tmp:
        models = {variant: build(args.config, variant, Path(tmp)) for variant in args.variants}
        times: dict[str, list[float]] = {variant: [] for variant in args.variants}
        for _ in range(args.rounds):
            for variant, (model, config) in models.items():
                times[variant].append(time_epochs(model, config, args.epochs, clock))
        for model, _ in models.values():
            if getattr(model, "collector", None) is not None:
                model.collector.close()
    reference = float(np.median(times[REFERENCE]))
    rows = {variant: {"seconds_per_epoch": round(float(np.median(t)), 3), "rounds": [round(x, 3) for x in t],
                      "over_sac": round(float(np.median(t)) / reference, 3)} for variant, t in times.items()}
    for variant, row in rows.items():
        print(f"{variant:60s} {row['seconds_per_epoch']:.3f} s/epoch  ({row['over_sac']:.2f} x sac)")
    append_measurement(args.out, "seconds per epoch, median of rounds; 'sac' = plain SB3 SAC reference",
                       {"config": args.config, "note": args.note, "clock": args.clock, "variants": rows})


if __name__ == "__main__":
    main()
