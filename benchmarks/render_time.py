"""Milliseconds per 64 x 64 frame: dm_control's default scene vs metra_gym's cheap renderer (and state-env speed).

Renderers, per domain (quadruped camera 2, humanoid camera 0), on the CPU through ``MUJOCO_GL`` (egl by default):

- ``default``: dm_control's scene as shimmy renders it (``DmControlCompatibilityV0(render_mode="rgb_array")``,
  i.e. ``physics.render(64, 64, camera_id)``: shadows, reflections, 4x multisampling, a new scene every call);
- ``cheap_scene``: the same call on metra_gym's model (shadows, reflections and multisampling off);
- ``metra_gym``: what ``metra/Quadruped-v0`` and ``metra/Humanoid-v0`` do per frame (cheap scene, one persistent
  camera, a copy of the frame).

Frames are timed one by one, renderers interleaved in blocks so that a busy machine slows them alike; the physics
takes a random step between frames (untimed). Also measured: policy steps/s of the state envs (action repeat 2)
against raw dm_control control steps/s. Prints a table and writes ``benchmarks/results/render_time/summary.json``.

    MUJOCO_GL=egl python benchmarks/render_time.py [--frames 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from metra_gym.envs import dmc

RESULTS = Path(__file__).resolve().parent / "results" / "render_time"
DOMAINS = {"quadruped": dmc.MetraQuadrupedEnv, "humanoid": dmc.MetraHumanoidEnv}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _renderers(domain: str, env_class: type) -> dict[str, tuple[Callable[[], np.ndarray], Callable[[], object]]]:
    """name -> (render one frame, advance the physics) for each renderer of ``domain``."""
    suite, _, compatibility = dmc.import_dm_control()
    default_env = compatibility(suite.load(domain, "run", environment_kwargs={"flat_observation": True}),
                                render_mode="rgb_array",
                                render_kwargs={"width": dmc.FRAME_SIZE, "height": dmc.FRAME_SIZE,
                                               "camera_id": env_class.camera_id})
    default_env.reset(seed=0)
    ours = env_class(obs_type="pixels")
    ours.reset(seed=0)
    rng = np.random.default_rng(0)

    def stepper(env):
        space = env.action_space
        return lambda: env.step(rng.uniform(space.low, space.high).astype(space.dtype))

    frame_size, camera = dmc.FRAME_SIZE, env_class.camera_id
    return {
        "default": (default_env.render, stepper(default_env)),
        "cheap_scene": (lambda: ours.physics.render(frame_size, frame_size, camera_id=camera), stepper(ours)),
        "metra_gym": (ours._frame, stepper(ours)),
    }


def time_renders(renderers: dict[str, tuple[Callable[[], np.ndarray], Callable[[], object]]], frames: int,
                 rounds: int) -> dict[str, dict[str, float]]:
    """Milliseconds per frame of each renderer (name -> (render one frame, advance the physics)), interleaved in
    ``rounds`` blocks; the first frame of each block is not counted."""
    per_block = max(1, frames // rounds)
    times: dict[str, list[float]] = {name: [] for name in renderers}
    for _ in range(rounds):
        for name, (render, advance) in renderers.items():
            for i in range(per_block + 1):
                advance()
                start = time.perf_counter()
                frame = render()
                elapsed = time.perf_counter() - start
                if i:  # the first frame of a block pays for switching OpenGL contexts
                    times[name].append(elapsed)
            assert frame.shape == (dmc.FRAME_SIZE, dmc.FRAME_SIZE, 3) and frame.dtype == np.uint8
    return {name: {"median_ms": 1000 * float(np.median(t)), "p10_ms": 1000 * float(np.percentile(t, 10)),
                   "p90_ms": 1000 * float(np.percentile(t, 90)), "frames": len(t)} for name, t in times.items()}


def time_state_steps(domain: str, env_class: type, steps: int, rounds: int) -> dict[str, float]:
    suite, _, _ = dmc.import_dm_control()
    raw = suite.load(domain, "run", task_kwargs={"time_limit": float("inf")},
                     environment_kwargs={"flat_observation": True})
    raw.reset()
    ours = env_class(obs_type="state")
    ours.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (steps, ours.action_space.shape[0])).astype(np.float32)
    raw_rates, our_rates = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for a in actions:
            raw.step(a)
        raw_rates.append(steps / (time.perf_counter() - start))
        start = time.perf_counter()
        for a in actions:
            ours.step(a)
        our_rates.append(steps / (time.perf_counter() - start))
    return {"dm_control_control_steps_per_s": float(np.median(raw_rates)),
            "metra_gym_policy_steps_per_s": float(np.median(our_rates)),
            "metra_gym_control_steps_per_s": float(np.median(our_rates)) * ours.action_repeat}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300, help="timed frames per renderer and domain")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved blocks per renderer")
    parser.add_argument("--state-steps", type=int, default=1000, help="steps per timed block of the state envs")
    args = parser.parse_args()
    dmc.configure_mujoco_gl()
    summary = {"mujoco_gl": os.environ.get("MUJOCO_GL"), "lp_num_threads": os.environ.get("LP_NUM_THREADS"),
               "cpu": _cpu(), "cores": os.cpu_count(), "load_average_before": list(os.getloadavg()),
               "frame_size": dmc.FRAME_SIZE, "render": {}, "state_env": {}}
    for domain, env_class in DOMAINS.items():
        summary["render"][domain] = time_renders(_renderers(domain, env_class), args.frames, args.rounds)
        summary["state_env"][domain] = time_state_steps(domain, env_class, args.state_steps, 3)
    summary["load_average_after"] = list(os.getloadavg())

    print(f"64x64 frames, MUJOCO_GL={summary['mujoco_gl']}, {summary['cpu']} ({summary['cores']} cores), "
          f"load average {summary['load_average_before'][0]:.1f} -> {summary['load_average_after'][0]:.1f}")
    print(f"{'domain':10s} {'renderer':12s} {'median ms':>10s} {'p10 ms':>8s} {'p90 ms':>8s} {'frames':>7s}")
    for domain, rows in summary["render"].items():
        for name, row in rows.items():
            print(f"{domain:10s} {name:12s} {row['median_ms']:10.2f} {row['p10_ms']:8.2f} {row['p90_ms']:8.2f} "
                  f"{row['frames']:7d}")
    print(f"\n{'domain':10s} {'dm_control control steps/s':>27s} {'metra_gym policy steps/s':>25s} "
          f"{'(control steps/s)':>18s}")
    for domain, row in summary["state_env"].items():
        print(f"{domain:10s} {row['dm_control_control_steps_per_s']:27.0f} {row['metra_gym_policy_steps_per_s']:25.0f} "
              f"{row['metra_gym_control_steps_per_s']:18.0f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\nwrote {RESULTS / 'summary.json'}")


if __name__ == "__main__":
    main()
