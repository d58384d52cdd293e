"""Can the state Kitchen's control reach and move the task objects at all? A hand-written controller's answer.

Two measurements on ``metra/Kitchen-v0``'s state environment (end-effector control, reset seed 0):

- **End-effector speed**: metres per step of the ``end_effector`` site under a full-scale command along each axis (5
  steps from the initial pose). The command asks for ``EE_SPEED`` m/s (0.08 m a step); the arm's joint speeds bound
  what it gets.
- **Scripted tasks**: a proportional controller (gain 10, clipped to the action range, gripper open) drives the end
  effector through three waypoints per task, placed relative to the task's handle site: in front of it, at it, and
  along the opening direction, ``LEG_STEPS`` steps per waypoint. Reported: the largest changes of the object joints,
  the LEXA task flags achieved, and the first step at which any flag held. Episodes in METRA are 50 steps; the
  controller takes 75 (three legs of 25), so this says whether contact and the flags work, not whether a 50-step
  skill can achieve the task.
- **What skills move** (``--checkpoints``): for each state-Kitchen checkpoint (a run's snapshot or an export), its
  24 skills twice each (48 rollouts of one episode, resets seeded 1000 + i, as ``metra-pretrain evaluate --seed
  1000``), and uniformly random actions from the same resets: the end effector's path length, its reach (the largest
  distance from where it started) and the largest change of any object joint (qpos 9-29) from the episode's start,
  median (and maximum) over the rollouts.

    MUJOCO_GL=egl python benchmarks/kitchen_reach.py [--checkpoints RUN/snapshots/epoch_001100 ...]
    # appends to benchmarks/results/kitchen/reach.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np
from measurements import append_measurement

from metra_gym.envs.kitchen import EE_SPEED, FRAME_SKIP, ROBOT_DOFS, MetraKitchenEnv
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED, episode_steps, rollout_observations
from pretrain.project_paths import checkpoint_reference

RESULTS = Path(__file__).resolve().parent / "results" / "kitchen" / "reach.json"
ROLLOUTS = 48
# MetraKitchenEnv.state(): end-effector x-y-z, robot qpos (ROBOT_DOFS), robot qvel (ROBOT_DOFS), object qpos, ...
OBJECT_QPOS = slice(3 + 2 * ROBOT_DOFS, 3 + ROBOT_DOFS + 30)  # of the kitchen's 30 qpos (the env checks), after the robot's
LEG_STEPS = 25
GAIN = 10.0
# task: (handle site, waypoint offsets from it in metres: in front, at the handle, along the opening direction)
SCRIPTS = {
    "Slide Cabinet": ("slide_site", [(-0.12, -0.1, 0.0), (-0.12, 0.0, 0.0), (0.25, 0.0, 0.0)]),
    "Microwave": ("microhandle_site", [(0.0, -0.1, 0.0), (0.0, 0.0, 0.0), (-0.1, -0.3, 0.0)]),
    "Light Switch": ("light_site", [(0.12, -0.1, 0.0), (0.12, 0.0, 0.0), (-0.15, 0.0, 0.0)]),
    "Kettle": ("kettle_site", [(0.0, 0.0, 0.2), (0.0, 0.0, 0.0), (0.0, 0.3, 0.3)]),
}


def end_effector_speed(env: MetraKitchenEnv, steps: int = 5) -> dict[str, float]:
    """Metres per step of the end effector under a full-scale command along +x, +y, +z and -z."""
    speeds = {}
    for name, direction in {"+x": (1, 0, 0), "+y": (0, 1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}.items():
        env.reset(seed=0)
        start = env.end_effector()
        action = np.zeros(7, np.float32)
        action[:3] = direction
        for _ in range(steps):
            env.step(action)
        speeds[name] = round(float(np.linalg.norm(env.end_effector() - start)) / steps, 4)
    return speeds


def scripted_task(env: MetraKitchenEnv, site: str, offsets: list[tuple[float, float, float]]) -> dict:
    """Drive the end effector through ``offsets`` from ``site``; what the objects and the task flags did."""
    env.reset(seed=0)
    start_qpos = env.data.qpos.copy()
    handle = env.data.site_xpos[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_SITE, site)].copy()
    first_success, achieved, step = None, set(), 0
    for offset in offsets:
        for _ in range(LEG_STEPS):
            action = np.zeros(7, np.float32)
            action[:3] = np.clip(GAIN * (handle + offset - env.end_effector()), -1, 1)
            action[6] = 1.0
            _, _, _, _, info = env.step(action)
            step += 1
            now = {task for task, done in info["task_success"].items() if done}
            if now and first_success is None:
                first_success = step
            achieved |= now
    change = env.data.qpos[ROBOT_DOFS:] - start_qpos[ROBOT_DOFS:]
    largest = np.argsort(-np.abs(change))[:3]
    return {"steps": step, "tasks_achieved": sorted(achieved), "first_success_step": first_success,
            "largest_object_qpos_changes": {int(i + ROBOT_DOFS): round(float(change[i]), 3) for i in largest}}


def motion(policy: SkillPolicy, act, skills: np.ndarray) -> dict[str, float]:
    """End-effector path length and the largest object-joint change of one-episode rollouts of ``act`` in the
    policy's environment (resets 1000 + i)."""
    obs, _ = rollout_observations(policy, skills, episode_steps(policy), seed=HELD_OUT_SEED, act=act)
    path = np.linalg.norm(np.diff(obs[:, :, :3], axis=1), axis=-1).sum(axis=1)
    reach = np.linalg.norm(obs[:, :, :3] - obs[:, :1, :3], axis=-1).max(axis=1)
    objects = np.abs(obs[:, :, OBJECT_QPOS] - obs[:, :1, OBJECT_QPOS]).max(axis=(1, 2))
    return {"end_effector_path_m_median": round(float(np.median(path)), 3),
            "end_effector_reach_m_median": round(float(np.median(reach)), 3),
            "object_change_median": round(float(np.median(objects)), 4),
            "object_change_max": round(float(objects.max()), 4)}


def skills_motion(checkpoints: list[str]) -> dict[str, dict[str, float]]:
    """:func:`motion` of each checkpoint's skills (24 one-hots twice), and of random actions from the same resets."""
    results = {}
    for checkpoint in checkpoints:
        policy = SkillPolicy.from_pretrained(checkpoint)
        if policy.env_id != "metra/Kitchen-v0" or policy.pixels is not None:
            raise ValueError(f"{checkpoint} was trained on {policy.env_id} (pixels: {policy.pixels is not None}); "
                             "--checkpoints takes state Kitchen checkpoints (config kitchen_state)")
        skills = evaluation_skills(ROLLOUTS, policy.skill_dim, policy.discrete, seed=HELD_OUT_SEED,
                                   prior=policy.skill_prior)
        results[checkpoint_reference(checkpoint)] = motion(policy, policy.act, skills)
    if checkpoints:
        rng = np.random.default_rng(HELD_OUT_SEED)
        low, high = policy.action_low, policy.action_high
        results["random actions"] = motion(policy, lambda obs, z: rng.uniform(low, high, (len(obs), *low.shape)),
                                           np.zeros((ROLLOUTS, 1)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", nargs="*", default=[], help="state Kitchen checkpoints or run snapshots")
    args = parser.parse_args()
    moved = skills_motion(args.checkpoints)  # first: a wrong checkpoint fails before the rest runs
    for name, result in moved.items():
        print(f"{name}: {result}")
    env = MetraKitchenEnv(obs_type="state")
    speeds = end_effector_speed(env)
    commanded = EE_SPEED * FRAME_SKIP * float(env.model.opt.timestep)
    print(f"end effector, m per step at full command (asked: {commanded:.2f}): {speeds}")
    scripts = {task: scripted_task(env, site, offsets) for task, (site, offsets) in SCRIPTS.items()}
    for task, result in scripts.items():
        print(f"{task}: achieved {result['tasks_achieved'] or 'none'} (first at step {result['first_success_step']}), "
              f"object qpos changes {result['largest_object_qpos_changes']}")
    env.close()
    append_measurement(RESULTS, __doc__.split("\n\n")[0], {
        "end_effector_m_per_step": speeds, "commanded_m_per_step": commanded,
        "leg_steps": LEG_STEPS, "gain": GAIN, "scripted": scripts,
        **({"skills_and_random_actions": moved} if moved else {})})


if __name__ == "__main__":
    main()
