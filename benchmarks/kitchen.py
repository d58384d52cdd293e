"""Kitchen on this CPU: ms per 64 x 64 frame, env steps/s, and the task count of random actions and untrained skills.

- **Render** (``render_time.time_renders``, interleaved blocks): ``package`` is gymnasium-robotics' own
  ``FrankaKitchen-v1`` renderer at 64 x 64 with the LEXA camera (the model's 2560 x 1920 8x-multisampled offscreen
  buffer, shadows); ``metra_gym`` is what ``metra/Kitchen-v0`` renders per frame (buffer of the frame's size, no
  shadows, reflections or multisampling).
- **Steps/s** of ``metra/Kitchen-v0`` with ``obs_type="state"`` (each control: LEXA's mocap, the default; the
  inverse-kinematics end-effector control of earlier releases; joint velocities) and ``"pixels"`` (mocap, one frame
  per step), beside the package's ``FrankaKitchen-v1`` step.
- **Baselines of the task metric** (the number of the six tasks that any of 48 rollouts of 50 steps achieves, LEXA's
  criteria, as the training evaluation counts it), under the default control (``CONTROL``): uniform random actions, drawn with seeds 90000-90047
  (held out: used nowhere else), and the deterministic skills of an untrained ``kitchen_state`` network (2 rollouts
  of each of the 24 skills; network seed 90000). The state run's count is to beat both.

Appends a dated measurement to ``benchmarks/results/kitchen/summary.json``.

    MUJOCO_GL=egl python benchmarks/kitchen.py [--frames 40] [--package-frames 6]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from functools import partial
from pathlib import Path

import gymnasium as gym
import numpy as np
from measurements import append_measurement
from render_time import _cpu, time_renders

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.envs import kitchen
from metra_gym.registration import KITCHEN_EPISODE_STEPS, TASK_SUCCESS_KEY
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_ROLLOUTS

RESULTS = Path(__file__).resolve().parent / "results" / "kitchen" / "summary.json"
CONTROL = "mocap"  # the default of metra/Kitchen-v0 (LEXA's); the baselines are measured under it
BASELINE_SEED = 90_000  # random actions, the untrained network and resets: seeds used by no test or run


def _renderers() -> dict:
    """name -> (render one frame, advance the physics) for the package's renderer and metra_gym's."""
    kitchen_env = kitchen.import_kitchen()
    package = kitchen_env.KitchenEnv(render_mode="rgb_array", width=kitchen.FRAME_SIZE, height=kitchen.FRAME_SIZE,
                                     default_camera_config=kitchen.LEXA_CAMERA)
    package.reset(seed=0)
    ours = kitchen.MetraKitchenEnv(obs_type="pixels")
    ours.reset(seed=0)
    rng = np.random.default_rng(0)
    return {"package": (package.render, lambda: package.step(rng.uniform(-1, 1, 9))),
            "metra_gym": (ours._frame, lambda: ours.step(rng.uniform(-1, 1, 7).astype(np.float32)))}


def steps_per_second(make, action_dim: int, steps: int) -> float:
    env = make()
    env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-1, 1, (steps, action_dim)).astype(np.float32)
    env.step(actions[0])
    start = time.perf_counter()
    for action in actions:
        env.step(action)
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def time_steps(steps: int, pixel_steps: int) -> dict[str, float]:
    kitchen_env = kitchen.import_kitchen()
    return {
        "package_FrankaKitchen_v1": steps_per_second(lambda: kitchen_env.KitchenEnv(), 9, steps),
        **{f"state_{control}": steps_per_second(partial(kitchen.MetraKitchenEnv, obs_type="state", control=control),
                                                9 if control == "joint_velocity" else 7, steps)
           for control in kitchen.CONTROLS},
        "pixels_mocap": steps_per_second(lambda: kitchen.MetraKitchenEnv(obs_type="pixels"), 7, pixel_steps),
    }


def random_action_tasks(episodes: int = HELD_OUT_ROLLOUTS) -> dict:
    """Tasks achieved by uniform random end-effector actions: any episode, and per episode."""
    env = gym.make("metra/Kitchen-v0", obs_type="state", control=CONTROL)
    achieved = dict.fromkeys(kitchen.TASKS, False)
    per_episode = []
    for i in range(episodes):
        rng = np.random.default_rng(BASELINE_SEED + i)
        env.reset(seed=BASELINE_SEED + i)
        episode: set[str] = set()
        for _ in range(KITCHEN_EPISODE_STEPS):
            *_, info = env.step(rng.uniform(-1, 1, 7).astype(np.float32))
            episode |= {name for name, done in info[TASK_SUCCESS_KEY].items() if done}
        per_episode.append(len(episode))
        for name in episode:
            achieved[name] = True
    env.close()
    return {"tasks_achieved": sum(achieved.values()), "tasks": achieved,
            "mean_tasks_per_episode": float(np.mean(per_episode)), "episodes": episodes,
            "seeds": f"{BASELINE_SEED}-{BASELINE_SEED + episodes - 1}"}


def untrained_skill_tasks(episodes: int = HELD_OUT_ROLLOUTS) -> dict:
    """Tasks achieved by the deterministic skills of an untrained ``kitchen_state`` network (the evaluation's)."""
    from pretrain.config import load_config
    from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint
    from pretrain.export import export_untrained

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = export_untrained(load_config("kitchen_state", [f"seed={BASELINE_SEED}"]), Path(tmp) / "untrained")
        result = evaluate_checkpoint(str(checkpoint), Path(tmp) / "eval", n_skills=episodes, seed=BASELINE_SEED)
    return {"tasks_achieved": result["tasks_achieved"], "tasks": result["tasks"], "episodes": episodes,
            "network_and_reset_seed": BASELINE_SEED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40, help="timed frames of metra_gym's renderer")
    parser.add_argument("--package-frames", type=int, default=6, help="timed frames of the package's (~seconds each)")
    parser.add_argument("--steps", type=int, default=300, help="timed steps of each state env")
    parser.add_argument("--pixel-steps", type=int, default=40, help="timed steps of the pixel env")
    args = parser.parse_args()
    kitchen.configure_mujoco_gl()
    load_before = list(os.getloadavg())
    renderers = _renderers()
    render = time_renders({"metra_gym": renderers["metra_gym"]}, args.frames, 2)
    render.update(time_renders({"package": renderers["package"]}, args.package_frames, 1))
    steps = time_steps(args.steps, args.pixel_steps)
    random_actions = random_action_tasks()
    untrained = untrained_skill_tasks()
    measurement = {"cpu": _cpu(), "mujoco_gl": os.environ.get("MUJOCO_GL"), "control": CONTROL,
                   "load_average_before": load_before,
                   "load_average_after": list(os.getloadavg()), "frame_ms": render, "steps_per_s": steps,
                   "random_actions": random_actions, "untrained_skills": untrained,
                   "command": "MUJOCO_GL=egl python benchmarks/kitchen.py"}
    for name, row in render.items():
        print(f"render {name:10s} {row['median_ms']:8.1f} ms per 64x64 frame (p10 {row['p10_ms']:.1f}, "
              f"p90 {row['p90_ms']:.1f}, {row['frames']} frames)")
    for name, rate in steps.items():
        print(f"steps/s {name:26s} {rate:7.1f}")
    print(f"tasks achieved by {HELD_OUT_ROLLOUTS} x 50 steps: random actions {random_actions['tasks_achieved']} "
          f"({random_actions['mean_tasks_per_episode']:.2f} per episode), untrained skills "
          f"{untrained['tasks_achieved']}")
    append_measurement(RESULTS, "Kitchen (gymnasium-robotics FrankaKitchen-v1): ms per 64x64 frame, env steps/s, "
                                "tasks achieved (of 6) by 48 held-out rollouts of random actions and of untrained "
                                "skills", measurement)


if __name__ == "__main__":
    main()
