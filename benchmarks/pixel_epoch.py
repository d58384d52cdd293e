"""Seconds per pixel METRA epoch on this machine, beside the same epoch on state observations.

An epoch of the ``quadruped`` config is 8 episodes of 200 policy steps (rendered 64 x 64, 3 frames stacked) and
200 gradient steps of the paper's networks (a CNN in the actor, in each Q head and in phi); of ``kitchen``, 8 episodes
of 50 policy steps and 100 gradient steps. Its collection is timed in full; the gradient steps are timed over
``--steps`` of them and scaled to the epoch's (a full CPU epoch takes minutes). The same is measured for the state
configs (``quadruped_state``, ``kitchen_state``) at their pixel config's gradient steps per epoch.

``--critic-encoders per_q shared`` also times the pixel gradient step with SB3's critic, whose two Q heads share one
CNN (what pixel runs had before each head got its own), on the same model sizes, alternating the variants round by
round so that a busy machine slows both alike; ``--rounds`` sets how many. ``--set batch_size=64`` etc. shrink it.
``--profile DIR`` writes PyTorch's operator table of 10 gradient steps per config (where a GPU step's time goes).

    python benchmarks/pixel_epoch.py --steps 3 --out benchmarks/results/pixel_epoch/summary.json
    python benchmarks/pixel_epoch.py --configs kitchen kitchen_state --steps 3
    python benchmarks/pixel_epoch.py --configs quadruped --critic-encoders per_q shared --steps 2 --rounds 3 \\
        --set batch_size=64 --note "critic encoders"
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from measurements import append_measurement

from pretrain.algorithms.common.device import resolve_device
from pretrain.config import load_config
from pretrain.run import model as run_model
from pretrain.run.envs import env_factory, training_env

# Gradient steps per epoch: the pixel config's (the paper's), and the same for its state partner.
GRADIENT_STEPS = {"quadruped": 200, "quadruped_state": 200, "kitchen": 100, "kitchen_state": 100}
CRITIC_ENCODERS = {"per_q": "one CNN per Q head (as the official agent)", "shared": "one CNN for both Q heads (SB3)"}


@contextmanager
def critic_encoders(variant: str) -> Iterator[None]:
    """Build pixel models whose critic has one CNN per Q head (``per_q``, what a run builds) or one for both
    (``shared``, SB3's ``ContinuousCritic``)."""
    original = run_model.pixel_settings

    def settings(config, venv) -> dict[str, Any]:
        result = original(config, venv)
        if result:
            result["policy_kwargs"] = {**result["policy_kwargs"], "features_extractor_per_q": variant == "per_q"}
        return result

    run_model.pixel_settings = settings
    try:
        yield
    finally:
        run_model.pixel_settings = original


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        th.cuda.synchronize()


def collected_model(config_name: str, overrides: list[str], run_dir: Path):
    """A model of the config after one epoch of collection (no gradient step), its config, device and the
    collection's seconds."""
    config = load_config(config_name, [*overrides, "buffer_size=20000", f"gradient_steps={GRADIENT_STEPS[config_name]}"])
    config.learning_starts = config.steps_per_epoch
    device = resolve_device(config.device)
    model = run_model.build_model(config, training_env(config, env_factory(config)), run_dir)
    th.set_num_threads(config.torch_threads)
    start = time.perf_counter()
    model.gradient_steps = 0  # collection only
    model.learn(config.steps_per_epoch)
    return model, config, device, time.perf_counter() - start


def step_seconds(model, config, device: str, steps: int) -> float:
    """Seconds per gradient step over ``steps`` steps (after one warm-up step)."""
    model.train(gradient_steps=1, batch_size=config.batch_size)
    _synchronize(device)
    start = time.perf_counter()
    model.train(gradient_steps=steps, batch_size=config.batch_size)
    _synchronize(device)
    return (time.perf_counter() - start) / steps


def sample_seconds(model, config, device: str, steps: int) -> float:
    """Seconds per minibatch drawn from the replay buffer and moved to the device: the part of a gradient step that
    is not the networks'."""
    model.replay_buffer.sample(config.batch_size)
    _synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        model.replay_buffer.sample(config.batch_size)
    _synchronize(device)
    return (time.perf_counter() - start) / steps


def write_profile(model, config, steps: int, path: Path) -> None:
    """PyTorch's profiler over ``steps`` gradient steps: the operators by their total time, to ``path``."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if th.cuda.is_available() else [])
    with profile(activities=activities) as profiler:
        model.train(gradient_steps=steps, batch_size=config.batch_size)
        _synchronize(str(model.device))
    sort = "cuda_time_total" if th.cuda.is_available() else "cpu_time_total"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{config.env_id} {config.env_kwargs}, {steps} gradient steps, batch {config.batch_size}\n"
                    + profiler.key_averages().table(sort_by=sort, row_limit=40, max_name_column_width=60))


def measure(config_name: str, overrides: list[str], steps: int, variants: tuple[str, ...] = ("per_q",),
            rounds: int = 1, profile_to: Path | None = None) -> dict[str, Any]:
    """Collection seconds, seconds per gradient step (median over rounds) and per minibatch sampled, and the epoch
    they make, per critic variant (state configs: one row; the variants only differ with pixels). ``profile_to``:
    also write PyTorch's profile of 10 gradient steps of the first variant there."""
    with tempfile.TemporaryDirectory() as tmp:
        built = {}
        for variant in variants:
            with critic_encoders(variant):
                built[variant] = collected_model(config_name, overrides, Path(tmp) / variant)
            if not built[variant][0].pixels:
                break
        times: dict[str, list[float]] = {variant: [] for variant in built}
        for _ in range(rounds):
            for variant, (model, config, device, _) in built.items():
                times[variant].append(step_seconds(model, config, device, steps))
        samples = {variant: sample_seconds(model, config, device, steps)
                   for variant, (model, config, device, _) in built.items()}
        if profile_to is not None:
            model, config, *_ = next(iter(built.values()))
            write_profile(model, config, 10, profile_to)
        for model, *_ in built.values():
            model.env.close()  # renderers freed now, not by the interpreter's teardown after EGL's
    rows = {}
    for variant, (model, config, device, collect) in built.items():
        step = float(np.median(times[variant]))
        rows[variant] = {"collect_s": round(collect, 2), "gradient_step_s": round(step, 4),
                         "gradient_step_s_rounds": [round(t, 4) for t in times[variant]],
                         "sample_s": round(samples[variant], 4),
                         "epoch_s": round(collect + config.gradient_steps * step, 1), "device": device,
                         "torch_threads": config.torch_threads,
                         "gradient_steps_per_epoch": config.gradient_steps, "batch_size": config.batch_size,
                         "critic_encoders": CRITIC_ENCODERS[variant] if model.pixels else "-"}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="gradient steps timed (scaled to the epoch's)")
    parser.add_argument("--rounds", type=int, default=1, help="timings per variant (the median is reported)")
    parser.add_argument("--configs", nargs="+", default=["quadruped", "quadruped_state"], choices=list(GRADIENT_STEPS))
    parser.add_argument("--critic-encoders", nargs="+", default=["per_q"], choices=list(CRITIC_ENCODERS))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="e.g. device=cuda")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="write PyTorch's profile of 10 gradient steps of each config to DIR/<config>.txt")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/pixel_epoch/summary.json"))
    args = parser.parse_args()
    rows = {}
    for name in args.configs:
        profile_to = args.profile / f"{name}.txt" if args.profile else None
        for variant, row in measure(name, args.set, args.steps, tuple(args.critic_encoders), args.rounds,
                                    profile_to).items():
            rows[name if variant == "per_q" or row["critic_encoders"] == "-" else f"{name} ({variant})"] = row
    for name, row in rows.items():
        print(f"{name:26s} collect {row['collect_s']:7.2f} s + {row['gradient_steps_per_epoch']} x "
              f"{row['gradient_step_s']:.4f} s (of which sampling {row['sample_s']:.4f} s) = "
              f"{row['epoch_s']:8.1f} s per epoch ({row['device']}, batch {row['batch_size']})", flush=True)
    append_measurement(args.out, "pixel METRA epoch (8 episodes + the paper's gradient steps) vs state",
                       {"torch_threads": th.get_num_threads(), "note": args.note, "overrides": args.set,
                        "configs": rows})


if __name__ == "__main__":
    main()
