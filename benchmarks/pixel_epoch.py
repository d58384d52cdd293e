"""Seconds per pixel METRA epoch on this machine, beside the same epoch on state observations.

An epoch of the ``quadruped`` config is 8 episodes of 200 policy steps (rendered 64 x 64, 3 frames stacked) and
200 gradient steps of the paper's networks (a CNN in the actor, the critics and phi). Its collection is timed in
full; the gradient steps are timed over ``--steps`` of them and scaled to 200 (a full CPU epoch takes tens of
minutes). The same is measured for ``quadruped_state`` at the same gradient steps per epoch.

    python benchmarks/pixel_epoch.py --steps 3 --out benchmarks/results/pixel_epoch/summary.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch as th
from measurements import append_measurement

from pretrain.run.config import load_config
from pretrain.run.trainer import build_model, env_factory, resolve_device, training_env


def measure(config_name: str, overrides: list[str], steps: int) -> dict[str, float]:
    config = load_config(config_name, [*overrides, "buffer_size=20000", "gradient_steps=200"])
    config.learning_starts = config.steps_per_epoch
    device = resolve_device(config)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(config, training_env(config, env_factory(config)), Path(tmp))
        th.set_num_threads(config.torch_threads)
        start = time.perf_counter()
        model.gradient_steps = 0  # collection only
        model.learn(config.steps_per_epoch)
        collect = time.perf_counter() - start
        model.train(gradient_steps=1, batch_size=config.batch_size)  # warm-up
        if device.startswith("cuda"):
            th.cuda.synchronize()
        start = time.perf_counter()
        model.train(gradient_steps=steps, batch_size=config.batch_size)
        if device.startswith("cuda"):
            th.cuda.synchronize()
        step = (time.perf_counter() - start) / steps
    return {"collect_s": round(collect, 2), "gradient_step_s": round(step, 4),
            "epoch_s": round(collect + config.gradient_steps * step, 1), "device": device,
            "gradient_steps_per_epoch": config.gradient_steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="gradient steps timed (scaled to the epoch's 200)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="e.g. device=cuda")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/pixel_epoch/summary.json"))
    args = parser.parse_args()
    rows = {name: measure(name, args.set, args.steps) for name in ("quadruped", "quadruped_state")}
    for name, row in rows.items():
        print(f"{name:16s} collect {row['collect_s']:7.2f} s + 200 x {row['gradient_step_s']:.4f} s = "
              f"{row['epoch_s']:8.1f} s per epoch ({row['device']})", flush=True)
    append_measurement(args.out, "pixel METRA epoch (8 x 200 policy steps + 200 gradient steps) vs state",
                       {"torch_threads": th.get_num_threads(), "note": args.note, "configs": rows})


if __name__ == "__main__":
    main()
