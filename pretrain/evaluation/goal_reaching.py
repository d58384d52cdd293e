"""Zero-shot goal reaching: z = ``SkillPolicy.goal_skill(s, g)`` every step: (phi(g) - phi(s)) / ||.|| (or the one-hot
argmax) for METRA and LSD, the skill q(z | g) finds likeliest for DIAYN (the METRA paper's comparison).

Goals are sampled as in the paper (Ant: x-y uniform in [-50, 50]^2; HalfCheetah: x uniform in [-100, 100]);
the goal state is the initial observation with its position replaced by the goal. The metric is the final
distance between the agent's position and the goal, over ``n_goals`` goals (mean and 95 % interval). Goals are drawn
over the whole range, also where no skill of one episode gets (HalfCheetah's skills cover tens of metres, its goals lie
up to 100 m away), so the result also reports the goals *within the skills' reach*: inside the box spanned by the
final positions of the held-out evaluation skills (those of ``metra-pretrain evaluate --seed SEED``).

Environments with tasks whose goal states they can show (Kitchen: ``goal_observation(task)``) are evaluated on those
instead, as in the paper: one goal per task, z computed once from the first step and then fixed, and the metric is
the number of goals whose task the final state achieves.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import EPISODE_STEPS, TASK_SUCCESS_KEY, ZERO_SHOT_GOAL_RANGES
from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.evaluation.evaluate_checkpoint import (
    HELD_OUT_ROLLOUTS,
    check_out_dir,
    episode_steps,
    rollout_observations,
)
from pretrain.project_paths import checkpoint_reference
from pretrain.run.coverage import SkillRollouts


def sample_goals(env_id: str, n_goals: int, n_coordinates: int, seed: int) -> np.ndarray:
    if env_id not in ZERO_SHOT_GOAL_RANGES:
        raise ValueError(f"no goal distribution for {env_id!r}; zero-shot goals are defined for {sorted(ZERO_SHOT_GOAL_RANGES)}")
    scale = ZERO_SHOT_GOAL_RANGES[env_id]
    return np.random.default_rng(seed).uniform(-scale, scale, (n_goals, n_coordinates))


def standing_still(env_id: str, n_goals: int = 50, seed: int = 0, env_kwargs: dict[str, Any] | None = None) -> float:
    """The mean final distance to :func:`reach_goals`' goals of a policy that never moves: from each seeded reset's
    position (``seed + i``, as :func:`reach_goals` resets) to its goal. The floor a zero-shot number is read against
    (skills that do not move score it).

    :param env_kwargs: the skills' environment keywords (their config's ``env_kwargs``), as their rollouts make it.
    """
    import gymnasium as gym

    env = gym.make(env_id, **(env_kwargs or {}))
    try:
        starts = np.stack([np.asarray(env.reset(seed=seed + i)[1]["coordinates"], dtype=np.float64)
                           for i in range(n_goals)])
    finally:
        env.close()
    goals = sample_goals(env_id, n_goals, starts.shape[1], seed)
    return float(np.linalg.norm(starts - goals, axis=1).mean())


def reach_goals(policy: SkillPolicy, n_goals: int = 50, steps: int = EPISODE_STEPS, seed: int = 0) -> dict[str, Any]:
    """Final distances to ``n_goals`` goals, the goals, and the paths."""
    if policy.pixels is not None:  # the goal state moves the position in the observation, which images have not
        raise ValueError(f"{policy.source} holds skills trained on pixels; zero-shot goal reaching here builds goal "
                         "states by writing the goal position into a state observation, so it needs state skills")
    rollouts = SkillRollouts(lambda: policy.make_env(steps), n_goals, steps)
    starts = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(rollouts.envs)])
    n_coordinates = len(rollouts.envs[0].reset(seed=seed)[1]["coordinates"])
    goals = sample_goals(policy.env_id, n_goals, n_coordinates, seed)
    goal_obs = starts.copy()
    goal_obs[:, :n_coordinates] = goals  # the position leads both observations (x-y for Ant, x for HalfCheetah)

    def act(obs: np.ndarray, goal_states: np.ndarray) -> np.ndarray:
        return policy.act(obs, policy.goal_skill(obs, goal_states))

    paths = rollouts.run(act, goal_obs, seed=seed)  # the same seeds: the same starts as goal_obs was built from
    rollouts.close()
    distances = np.linalg.norm(paths[:, -1] - goals, axis=1)
    return {**distance_summary(distances), "distances": distances.round(3).tolist(), "goals": goals, "paths": paths}


def distance_summary(distances: np.ndarray) -> dict[str, Any]:
    """Mean, 95 % interval (1.96 standard errors) and median of final distances; None for fewer than two."""
    if len(distances) < 2:
        return {"mean": None, "ci95": None, "median": None}
    half_width = 1.96 * distances.std(ddof=1) / np.sqrt(len(distances))
    return {"mean": float(distances.mean()), "ci95": [float(distances.mean() - half_width),
                                                      float(distances.mean() + half_width)],
            "median": float(np.median(distances))}


def skills_reach(policy: SkillPolicy, seed: int, n_skills: int = HELD_OUT_ROLLOUTS) -> np.ndarray:
    """The box ``(2, n_coordinates)`` (low, high) spanned by the final positions of the held-out evaluation's skills:
    ``n_skills`` deterministic skills drawn with ``seed`` from the policy's prior, resets seeded ``seed + i``, one
    episode of the length they were trained with (as ``metra-pretrain evaluate --seed SEED`` rolls them out)."""
    skills = evaluation_skills(n_skills, policy.skill_dim, policy.discrete, seed=seed, prior=policy.skill_prior)
    final = rollout_observations(policy, skills, episode_steps(policy), seed=seed)[1][:, -1]
    return np.stack([final.min(axis=0), final.max(axis=0)])


def within_reach(goals: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Which goals lie inside the box ``reach`` (low, high) on every coordinate."""
    return np.all((goals >= reach[0]) & (goals <= reach[1]), axis=1)


def has_task_goals(policy: SkillPolicy) -> bool:
    """Whether the policy's environment shows goal states of its tasks (``goal_observation``; Kitchen)."""
    env = policy.make_env()
    try:
        return callable(getattr(env.unwrapped, "goal_observation", None))
    finally:
        env.close()


def reach_task_goals(policy: SkillPolicy, steps: int, seed: int = 0) -> dict[str, Any]:
    """One goal per task (its goal state's observation), the skill fixed from the first step; which goals' tasks the
    final state achieves, and which any step achieved."""
    probe = policy.make_env(steps)
    tasks = list(probe.reset(seed=seed)[1][TASK_SUCCESS_KEY])
    goal_obs = np.stack([probe.unwrapped.goal_observation(task) for task in tasks])
    probe.close()
    rollouts = SkillRollouts(lambda: policy.make_env(steps), len(tasks), steps)
    fixed: dict[str, np.ndarray] = {}

    def act(obs: np.ndarray, goal_states: np.ndarray) -> np.ndarray:
        if "z" not in fixed:  # the first step's skill, kept for the whole episode
            fixed["z"] = policy.goal_skill(obs, goal_states)
        return policy.act(obs, fixed["z"])

    rollouts.run(act, goal_obs, seed=seed)
    flags = rollouts.task_flags  # (goals, steps + 1, tasks); goal i is task i
    rollouts.close()
    final = {task: bool(flags[i, -1, i]) for i, task in enumerate(tasks)}
    any_step = {task: bool(flags[i, :, i].any()) for i, task in enumerate(tasks)}
    skills = [int(np.argmax(z)) if policy.discrete else np.round(z, 4).tolist() for z in fixed["z"]]
    return {"reached": sum(final.values()), "tasks": final, "reached_any_step": sum(any_step.values()),
            "tasks_any_step": any_step, "skills": skills}


def checkpoint_with_goal_skill(snapshot: str | Path, run_dir: str | Path, out_dir: str | Path) -> str:
    """A skill checkpoint of the snapshot's networks that defines :meth:`SkillPolicy.goal_skill`: the snapshot itself,
    or, for a DIAYN snapshot written before checkpoints carried its q(z | s) (format 5), the run state of the same
    epoch exported into ``out_dir``.

    :raises CheckpointError: the snapshot has no goal skill and the run state is not at the snapshot's epoch (or the
        skills are of a method without one: DADS, CIC).
    """
    from pretrain.export import export_run

    policy = SkillPolicy.from_pretrained(str(snapshot))
    try:
        policy.require_goal_skill()
        return str(snapshot)
    except CheckpointError:
        if policy.algorithm != "diayn":
            raise
    epochs = policy.config["provenance"].get("epochs")
    exported = export_run(run_dir, out_dir, force=True)
    if SkillPolicy.from_pretrained(str(exported)).config["provenance"]["epochs"] != epochs:
        raise CheckpointError(f"{snapshot} holds no q(z | s) (exported before format 5) and the run state of {run_dir} "
                              f"is not at its epoch {epochs}; evaluate a snapshot written by this version")
    return str(exported)


def check_same_shape(policy: SkillPolicy, baseline: SkillPolicy) -> None:
    """Raise ValueError unless ``baseline`` can stand for ``policy`` untrained: the same env and the same sizes."""
    for name in ("env_id", "obs_dim", "action_dim", "skill_dim", "discrete"):
        mine, theirs = getattr(policy, name), getattr(baseline, name)
        if mine != theirs:
            raise ValueError(f"the baseline {baseline.source} has {name} {theirs!r}, but {policy.source} has "
                             f"{mine!r}; give an untrained checkpoint of the same config (metra-pretrain export "
                             "--untrained --config ...), or leave --baseline out")


def goal_eval(checkpoint: str, out_dir: str | Path, n_goals: int = 50, seed: int = 0,
              baseline: bool = True, baseline_checkpoint: str | None = None) -> dict[str, Any]:
    """Zero-shot goal reaching of a checkpoint, beside an untrained one of the same shape: ``baseline_checkpoint``
    (as ``metra-pretrain export --untrained`` writes it), or one initialised for this call with the same seed."""
    from pretrain.config import build_config, without_other_algorithms
    from pretrain.export import export_untrained

    if n_goals < 2:
        raise ValueError(f"the number of goals must be >= 2 (a 95 % interval needs two), got {n_goals}")
    out_dir = check_out_dir(out_dir)
    policy = SkillPolicy.from_pretrained(checkpoint)
    policy.require_goal_skill()
    baseline_policy = None
    if baseline and baseline_checkpoint is not None:  # before any rollout: a baseline of another shape is refused
        baseline_policy = SkillPolicy.from_pretrained(baseline_checkpoint)
        check_same_shape(policy, baseline_policy)
    task_goals = has_task_goals(policy)
    if task_goals:  # Kitchen: the tasks' goal states; n_goals does not apply
        steps = episode_steps(policy)

        def reach(p: SkillPolicy) -> dict[str, Any]:
            return reach_task_goals(p, steps, seed=seed)

        keys: tuple[str, ...] = ("reached", "tasks", "reached_any_step", "tasks_any_step", "skills")
        trained = reach(policy)
        result: dict[str, Any] = {"checkpoint": checkpoint_reference(checkpoint), "env_id": policy.env_id, "seed": seed,
                                  "goals": "the tasks' goal states, skill fixed from the first step",
                                  "trained": {k: trained[k] for k in keys}}
    else:
        def reach(p: SkillPolicy) -> dict[str, Any]:
            return reach_goals(p, n_goals, seed=seed)

        keys = ("mean", "ci95", "median", "distances")
        trained = reach(policy)
        box = skills_reach(policy, seed)
        inside = within_reach(trained["goals"], box)
        result = {"checkpoint": checkpoint_reference(checkpoint), "env_id": policy.env_id, "n_goals": n_goals,
                  "seed": seed, "goal_range": ZERO_SHOT_GOAL_RANGES[policy.env_id],
                  "goals": trained["goals"].round(3).tolist(),
                  "trained": {k: trained[k] for k in keys},
                  "skills_reach": {"low": box[0].round(3).tolist(), "high": box[1].round(3).tolist(),
                                   "skills": HELD_OUT_ROLLOUTS, "steps": episode_steps(policy)},
                  "within_reach": {"n_goals": int(inside.sum()),
                                   "trained": distance_summary(np.asarray(trained["distances"])[inside])}}
    if baseline:
        with tempfile.TemporaryDirectory() as tmp:
            if baseline_checkpoint is None:
                # The provenance lists every key; other algorithms' at the defaults of the release that wrote it.
                config = build_config(without_other_algorithms({**policy.config["provenance"]["config"], "seed": seed}))
                baseline_checkpoint = str(export_untrained(config, Path(tmp) / "untrained"))
                result["baseline_checkpoint"] = f"untrained, seed {seed}"
                baseline_policy = SkillPolicy.from_pretrained(baseline_checkpoint)
            else:
                result["baseline_checkpoint"] = str(baseline_checkpoint)
            untrained = reach(baseline_policy)
        result["untrained"] = {k: untrained[k] for k in keys}
        if not task_goals:  # the same goals (same seed), within the trained skills' reach
            result["within_reach"]["untrained"] = distance_summary(np.asarray(untrained["distances"])[inside])
    out_dir.mkdir(parents=True, exist_ok=True)  # only now: a failed evaluation leaves no empty folder
    (out_dir / "goal_reaching.json").write_text(json.dumps(result, indent=1))
    if task_goals:
        return result
    plot_goal_paths(trained["paths"], trained["goals"], out_dir / "goal_paths.png",
                    title=f"{policy.env_id}: zero-shot goals, final distance {trained['mean']:.1f}")
    return result


def plot_goal_paths(paths: np.ndarray, goals: np.ndarray, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = plt.get_cmap("tab20")(np.arange(len(goals)) % 20)
    fig, ax = plt.subplots(figsize=(5, 5))
    for i, (trajectory, goal) in enumerate(zip(paths, goals)):
        if trajectory.shape[1] >= 2:
            ax.plot(trajectory[:, 0], trajectory[:, 1], color=colors[i], lw=1)
            ax.plot(goal[0], goal[1], marker="*", color=colors[i], ms=8)
            ax.set(xlabel="x (m)", ylabel="y (m)")
        else:
            ax.plot(np.arange(len(trajectory)), trajectory[:, 0], color=colors[i], lw=1)
            ax.axhline(goal[0], color=colors[i], lw=0.5, ls=":")
            ax.set(xlabel="step", ylabel="x (m)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
