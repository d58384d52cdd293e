"""Can the state Kitchen's control reach and move the task objects? Scripted controllers' answer, per control.

Measurements on ``metra/Kitchen-v0``'s state environment (reset seed 0; the kitchen's reset has no noise):

- **Hand speed**: metres per step of the ``end_effector`` site under a full-scale command along each axis (+-x,
  +-y, +-z; mean over 5 steps from the initial pose), for LEXA's mocap control (``control="mocap"``, the default) and
  the inverse-kinematics control of metra-gym 0.3 (``"end_effector_ik"``). LEXA's model, emulated on MuJoCo 3, moved
  its hand 0.06-0.09 m a step.
- **Scripted tasks** under the mocap control, one 50-step episode each: the first step at which LEXA's flag of the
  task holds, and every task achieved on the way. Slide Cabinet, Light Switch, Kettle and Bottom Burner use a
  waypoint controller (``WAYPOINTS``: a proportional command toward points placed relative to the task's handle
  site, gain ``GAIN``, scaled so that its largest entry is at most 1, the next point once within ``TOLERANCE`` or
  after ``LEG_STEPS`` steps; gripper at 0). Microwave and Hinge Cabinet need their handle pulled toward the robot,
  which the gripper cannot grasp (LEXA's gripper opens one finger while it closes the other) and a waypoint
  controller did not hook; they use open-loop scripts of piecewise-constant actions (``SCRIPTS``), found by
  ``--search TASK`` (random scripts of 2-5 constant segments from ``--seed``; ``SCRIPTS`` holds the found ones
  rounded to two decimals, re-checked here).
- **What skills move** (``--checkpoints``): for each state-Kitchen checkpoint (a run's snapshot or an export), its
  24 skills twice each (48 rollouts of one episode, resets seeded 1000 + i, as ``metra-pretrain evaluate --seed
  1000``), and uniformly random actions from the same resets: the end effector's path length, its reach (the largest
  distance from where it started) and the largest change of any object joint (qpos 9-29) from the episode's start,
  median (and maximum) over the rollouts.

    MUJOCO_GL=egl python benchmarks/kitchen_reach.py [--checkpoints RUN/snapshots/epoch_001100 ...]
    MUJOCO_GL=egl python benchmarks/kitchen_reach.py --search Microwave --seed 1 --episodes 400
    # appends to benchmarks/results/kitchen/reach.json (not --search)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mujoco
import numpy as np
from measurements import append_measurement

from metra_gym.envs.kitchen import TASKS, MetraKitchenEnv
from metra_gym.registration import KITCHEN_EPISODE_STEPS
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.evaluation.evaluate_checkpoint import (
    HELD_OUT_ROLLOUTS,
    HELD_OUT_SEED,
    episode_steps,
    rollout_observations,
)
from pretrain.project_paths import checkpoint_reference

RESULTS = Path(__file__).resolve().parent / "results" / "kitchen" / "reach.json"
ACTION_DIM = 7
# MetraKitchenEnv.state(): end-effector x-y-z, robot qpos (9), robot qvel (9), object qpos (21), ...
OBJECT_QPOS = slice(3 + 9 + 9, 3 + 9 + 9 + 21)
GAIN, TOLERANCE, LEG_STEPS = 20.0, 0.02, 12
# task: (handle site, waypoints as offsets from it in metres)
WAYPOINTS = {
    "Slide Cabinet": ("slide_site", [(-0.12, -0.1, 0.0), (-0.12, 0.0, 0.0), (0.3, 0.0, 0.0)]),
    "Light Switch": ("light_site", [(0.12, -0.1, 0.0), (0.12, 0.0, 0.0), (-0.15, 0.0, 0.0)]),
    "Kettle": ("kettle_site", [(0.0, -0.15, 0.0), (0.0, -0.08, -0.05), (0.0, 0.35, -0.05)]),
    "Bottom Burner": ("knob1_site", [(0.05, -0.1, 0.05), (0.05, 0.0, 0.05), (0.05, 0.0, -0.1)]),
}
# task: [(steps, constant 7-d action), ...], found by --search: Microwave --seed 1 (script 75, 4 segments), Hinge
# Cabinet --seed 2 (script 380, the fastest of the 3 of 400 that open it: its first segment, held for the episode).
SCRIPTS = {
    "Microwave": [(20, (-0.49, 0.76, -0.55, 0.09, 0.93, 0.46, 0.11)), (4, (-0.27, 0.06, -0.99, -0.74, -0.44, -0.91, -0.52)),
                  (4, (-0.16, 0.72, 0.84, -0.96, -0.08, 0.37, 0.5)), (22, (-0.68, -0.99, -0.5, -0.37, -0.63, -0.56, 0.32))],
    "Hinge Cabinet": [(50, (-0.02, 0.79, 0.52, 0.72, 0.63, -0.3, -0.66))],
}


def hand_speed(control: str, steps: int = 5) -> dict[str, float]:
    """Metres per step of the end effector under a full-scale command along each axis, from the reset pose."""
    env = MetraKitchenEnv(obs_type="state", control=control)
    speeds = {}
    for axis, name in enumerate("xyz"):
        for sign in (1.0, -1.0):
            env.reset(seed=0)
            start = env.end_effector()
            action = np.zeros(ACTION_DIM, np.float32)
            action[axis] = sign
            for _ in range(steps):
                env.step(action)
            speeds[f"{'+' if sign > 0 else '-'}{name}"] = round(float(np.linalg.norm(env.end_effector() - start)) / steps, 4)
    env.close()
    return speeds


class Episode:
    """One 50-step episode from the reset pose that records when each task's flag first holds."""

    def __init__(self, env: MetraKitchenEnv) -> None:
        self.env = env
        env.reset(seed=0)
        self.steps = 0
        self.first: dict[str, int] = {}

    @property
    def over(self) -> bool:
        return self.steps >= KITCHEN_EPISODE_STEPS

    def step(self, action: np.ndarray) -> None:
        *_, info = self.env.step(np.asarray(action, np.float32))
        self.steps += 1
        for task, done in info["task_success"].items():
            if done:
                self.first.setdefault(task, self.steps)

    def result(self, task: str) -> dict:
        return {"first_success_step": self.first.get(task), "tasks_achieved": sorted(self.first),
                "steps": self.steps}


def waypoint_episode(env: MetraKitchenEnv, task: str) -> dict:
    """The waypoint controller of ``task`` (``WAYPOINTS``) for one episode."""
    site, offsets = WAYPOINTS[task]
    episode = Episode(env)
    handle = env.data.site_xpos[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_SITE, site)].copy()
    for offset in offsets:
        target = handle + np.asarray(offset)
        for _ in range(LEG_STEPS):
            error = target - env.end_effector()
            if np.linalg.norm(error) < TOLERANCE or episode.over:
                break
            action = np.zeros(ACTION_DIM)
            command = GAIN * error
            action[:3] = command / max(1.0, float(np.abs(command).max()))
            episode.step(action)
    return episode.result(task)


def script_episode(env: MetraKitchenEnv, task: str, script: list[tuple[int, tuple[float, ...]]]) -> dict:
    """An open-loop script of piecewise-constant actions for one episode."""
    episode = Episode(env)
    for steps, action in script:
        for _ in range(steps):
            if not episode.over:
                episode.step(action)
    return episode.result(task)


def search(env: MetraKitchenEnv, task: str, seed: int, episodes: int) -> None:
    """Random scripts of 2-5 constant segments (actions uniform in [-1, 1]^7, rounded to two decimals): print each
    that achieves ``task``."""
    rng = np.random.default_rng(seed)
    found = 0
    for i in range(episodes):
        segments = int(rng.integers(2, 6))
        cuts = np.sort(np.r_[0, rng.choice(np.arange(1, KITCHEN_EPISODE_STEPS), segments - 1, replace=False),
                             KITCHEN_EPISODE_STEPS])
        script = [(int(n), tuple(np.round(rng.uniform(-1, 1, ACTION_DIM), 2))) for n in np.diff(cuts)]
        result = script_episode(env, task, script)
        if result["first_success_step"] is not None:
            found += 1
            print(f"script {i}: {task} at step {result['first_success_step']} ({result['tasks_achieved']}): {script}",
                  flush=True)
    print(f"{found} of {episodes} scripts achieved {task}")


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
        skills = evaluation_skills(HELD_OUT_ROLLOUTS, policy.skill_dim, policy.discrete, seed=HELD_OUT_SEED,
                                   prior=policy.skill_prior)
        results[checkpoint_reference(checkpoint)] = motion(policy, policy.act, skills)
    if checkpoints:
        rng = np.random.default_rng(HELD_OUT_SEED)
        low, high = policy.action_low, policy.action_high
        results["random actions"] = motion(policy, lambda obs, z: rng.uniform(low, high, (len(obs), *low.shape)),
                                           np.zeros((HELD_OUT_ROLLOUTS, 1)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", nargs="*", default=[], help="state Kitchen checkpoints or run snapshots")
    parser.add_argument("--search", choices=TASKS, help="find an open-loop script for this task (nothing is written)")
    parser.add_argument("--seed", type=int, default=0, help="of --search")
    parser.add_argument("--episodes", type=int, default=400, help="scripts --search tries")
    args = parser.parse_args()
    if args.search:
        env = MetraKitchenEnv(obs_type="state")
        search(env, args.search, args.seed, args.episodes)
        env.close()
        return
    moved = skills_motion(args.checkpoints)  # first: a wrong checkpoint fails before the rest runs
    for name, result in moved.items():
        print(f"{name}: {result}")
    speeds = {control: hand_speed(control) for control in ("mocap", "end_effector_ik")}
    for control, speed in speeds.items():
        print(f"{control}: hand m per step at full command {speed}")
    env = MetraKitchenEnv(obs_type="state")
    scripted = {task: waypoint_episode(env, task) for task in WAYPOINTS}
    scripted.update({task: script_episode(env, task, script) for task, script in SCRIPTS.items()})
    env.close()
    for task, result in scripted.items():
        how = "waypoints" if task in WAYPOINTS else "open-loop script"
        print(f"{task} ({how}): first at step {result['first_success_step']}; achieved {result['tasks_achieved']}")
    append_measurement(RESULTS, __doc__.split("\n\n")[0], {
        "hand_m_per_step": speeds, "gain": GAIN, "tolerance_m": TOLERANCE, "leg_steps": LEG_STEPS,
        "scripted_mocap": scripted, **({"skills_and_random_actions": moved} if moved else {})})


if __name__ == "__main__":
    main()
