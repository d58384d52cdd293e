"""Memory and sampling speed of :class:`pretrain.algorithms.common.pixel_replay.FrameStackReplayBuffer` against SB3's buffers, for
pixel METRA's observations: 3 stacked 64 x 64 x 3 uint8 frames (channels-first (9, 64, 64), as SB3 hands them after
VecTransposeImage) and a skill z, 200-step episodes.

- memory for 3e5 transitions, from the array shapes (SB3's buffers are measured at a small size and scaled: their
  arrays are linear in the size; nothing of 22 GB is allocated): FrameStackReplayBuffer (Dict pixels + skill), SB3's
  DictReplayBuffer (the layout SAC uses for a Dict observation), and SB3's ReplayBuffer with
  ``optimize_memory_usage=True`` (plain Box pixels only: DictReplayBuffer does not support it);
- sampling: median ms per batch of 256 (to CPU tensors) of each filled with the same ``--fill`` transitions, the
  variants interleaved so that a busy machine slows them alike, wall-clock and the thread's CPU time (less
  sensitive to other processes on the cores); and the cost of ``add`` per step (wall-clock, first touch of the
  lazily allocated pages included).

    python benchmarks/pixel_replay.py --out benchmarks/results/pixel_replay/summary.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from pretrain.algorithms.common.pixel_replay import FrameStackReplayBuffer

SIZE, STACK, FRAME, SKILL_DIM, ACTION_DIM, EPISODE = 300_000, 3, 64, 4, 12, 200  # Quadruped: 12 actions


def make_spaces():
    pixels = spaces.Box(0, 255, (3 * STACK, FRAME, FRAME), np.uint8)
    dict_space = spaces.Dict({"pixels": pixels, "skill": spaces.Box(-1, 1, (SKILL_DIM,), np.float32)})
    return dict_space, pixels, spaces.Box(-1, 1, (ACTION_DIM,), np.float32)


def memory() -> dict[str, dict[str, float]]:
    dict_space, pixels, action_space = make_spaces()
    ours = FrameStackReplayBuffer.memory_bytes(SIZE, dict_space, action_space)["total"]
    ours_box = FrameStackReplayBuffer.memory_bytes(SIZE, pixels, action_space)["total"]
    probe = 1000  # SB3's arrays are linear in the size: measure 1000 transitions and scale

    def sb3_bytes(buffer) -> int:
        arrays = [buffer.actions, buffer.rewards, buffer.dones, buffer.timeouts]
        for name in ("observations", "next_observations"):
            value = getattr(buffer, name, None)
            arrays += list(value.values()) if isinstance(value, dict) else [] if value is None else [value]
        return sum(a.nbytes for a in arrays) * SIZE // probe

    sb3_dict = sb3_bytes(DictReplayBuffer(probe, dict_space, action_space, device="cpu"))
    sb3_box = sb3_bytes(ReplayBuffer(probe, pixels, action_space, device="cpu"))
    sb3_box_opt = sb3_bytes(ReplayBuffer(probe, pixels, action_space, device="cpu", optimize_memory_usage=True,
                                         handle_timeout_termination=False))
    rows = {"FrameStackReplayBuffer (Dict pixels+skill)": ours, "FrameStackReplayBuffer (Box pixels)": ours_box,
            "SB3 DictReplayBuffer (pixels+skill)": sb3_dict, "SB3 ReplayBuffer (Box pixels)": sb3_box,
            "SB3 ReplayBuffer optimize_memory_usage=True (Box pixels)": sb3_box_opt}
    return {name: {"bytes_per_transition": total / SIZE, "total_GB": total / 1e9, "total_GiB": total / 2 ** 30}
            for name, total in rows.items()}


def transitions(n: int, seed: int = 0):
    """SB3-style (obs, next_obs, action, reward, done, infos) of one frame-stacking environment, 200-step episodes
    (time limits), random frames; the first frame repeated at reset."""
    rng = np.random.default_rng(seed)
    new_frame = lambda: rng.integers(0, 256, (1, 3, FRAME, FRAME), dtype=np.uint8)  # noqa: E731
    stack = np.concatenate([new_frame()] * STACK, axis=1)
    skill, step = rng.uniform(-1, 1, (1, SKILL_DIM)).astype(np.float32), 0
    for _ in range(n):
        step += 1
        next_stack = np.concatenate([stack[:, 3:], new_frame()], axis=1)
        done = step == EPISODE
        yield (stack, skill, next_stack, rng.uniform(-1, 1, (1, ACTION_DIM)).astype(np.float32),
               rng.normal(size=1).astype(np.float32), np.array([done]), [{"TimeLimit.truncated": done}])
        stack = next_stack
        if done:
            stack, step = np.concatenate([new_frame()] * STACK, axis=1), 0
            skill = rng.uniform(-1, 1, (1, SKILL_DIM)).astype(np.float32)


def speed(fill: int, batches: int) -> dict[str, dict[str, float]]:
    dict_space, pixels, action_space = make_spaces()
    buffers = {
        "FrameStackReplayBuffer (Dict pixels+skill)": (FrameStackReplayBuffer(fill, dict_space, action_space,
                                                                              device="cpu"), True),
        "FrameStackReplayBuffer (Box pixels)": (FrameStackReplayBuffer(fill, pixels, action_space, device="cpu"), False),
        "SB3 DictReplayBuffer (pixels+skill)": (DictReplayBuffer(fill, dict_space, action_space, device="cpu"), True),
        "SB3 ReplayBuffer optimize_memory_usage=True (Box pixels)": (
            ReplayBuffer(fill, pixels, action_space, device="cpu", optimize_memory_usage=True,
                         handle_timeout_termination=False), False),
    }
    add_seconds = dict.fromkeys(buffers, 0.0)
    for obs, skill, next_obs, action, reward, done, infos in transitions(fill):
        for name, (buffer, is_dict) in buffers.items():
            args = ({"pixels": obs, "skill": skill}, {"pixels": next_obs, "skill": skill}) if is_dict \
                else (obs, next_obs)
            start = time.perf_counter()
            buffer.add(*args, action, reward, done, infos)
            add_seconds[name] += time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in buffers}
    cpu: dict[str, list[float]] = {name: [] for name in buffers}
    np.random.seed(0)
    for _ in range(3):  # warm-up
        for buffer, _ in buffers.values():
            buffer.sample(256)
    for _ in range(batches):
        for name, (buffer, _) in buffers.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            buffer.sample(256)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.thread_time() - start_cpu)
    return {name: {"sample_ms_median": 1e3 * float(np.median(times[name])),
                   "sample_ms_p90": 1e3 * float(np.percentile(times[name], 90)),
                   "sample_cpu_ms_median": 1e3 * float(np.median(cpu[name])),
                   "add_us_per_step": 1e6 * add_seconds[name] / fill} for name in buffers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fill", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/pixel_replay/summary.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    mem = memory()
    print(f"memory for {SIZE:,} transitions (3 x 64x64x3 uint8 frames, skill {SKILL_DIM}, {ACTION_DIM} actions):")
    print(f"{'buffer':60s} {'B/transition':>13s} {'GB':>7s} {'GiB':>7s}")
    for name, row in mem.items():
        print(f"{name:60s} {row['bytes_per_transition']:13,.0f} {row['total_GB']:7.2f} {row['total_GiB']:7.2f}")
    spd = speed(args.fill, args.batches)
    print(f"\nsampling 256 of {args.fill:,} transitions ({args.batches} batches, 1 torch thread, CPU tensors):")
    print(f"{'buffer':60s} {'median ms':>10s} {'p90 ms':>8s} {'CPU ms':>7s} {'add us/step':>12s}")
    for name, row in spd.items():
        print(f"{name:60s} {row['sample_ms_median']:10.2f} {row['sample_ms_p90']:8.2f} "
              f"{row['sample_cpu_ms_median']:7.2f} {row['add_us_per_step']:12.1f}")
    measurement = {"date": str(date.today()), "machine": f"{platform.machine()}, {platform.processor() or '?'}",
                   "torch_threads": 1, "fill": args.fill, "batch": 256, "batches": args.batches,
                   "memory_3e5": mem, "speed": spd}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"what": "FrameStackReplayBuffer vs SB3 replay buffers for 3 stacked 64x64x3 "
                                            "uint8 frames (pixel METRA)", "measurement": measurement}, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
