"""Evaluate a skill checkpoint (bundled, folder or Hub) with metra_gym alone: policy coverage and figures.

Writes ``coverage.json`` (coverage, the tasks achieved on environments with tasks (Kitchen; with the run's queue and
total task coverage when the checkpoint is a run's snapshot or export), and each skill's final position), ``trajectories.png`` (x-y paths of the
evaluation skills, or x over time for 1-D positions) and, for 2-D skills, ``phi.png`` (the same paths mapped
through phi: the paper's latent-space figure).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import EPISODE_STEPS
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.config import PretrainConfig
from pretrain.project_paths import checkpoint_reference
from pretrain.run.coverage import ActFn, SkillRollouts, coverage, plot_trajectories, skill_colors

# The held-out evaluation: skills drawn and environments reset (seed + i) from this seed, which no training run, test
# or checkpoint selection uses; every held-out number in benchmarks/ and the README is measured with it.
HELD_OUT_SEED = 1000
# and this many rollouts: as many as a training run's evaluation (the config's eval_skills), so the two compare
HELD_OUT_ROLLOUTS: int = PretrainConfig.eval_skills


def rollout_observations(policy: SkillPolicy, skills: np.ndarray, steps: int, seed: int = 0,
                         achieved_tasks: dict[str, bool] | None = None, act: ActFn | None = None,
                         tasks_by_rollout: list[list[str]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Raw observations and positions of deterministic skill rollouts in the policy's environment, resets seeded
    ``seed + i``: (n, steps + 1, obs_dim), (n, steps + 1, c). ``act`` replaces the policy's own (random actions from
    the same resets, for a baseline). On environments with tasks, ``achieved_tasks`` (a dict, when given) is filled
    with whether any rollout achieved each, and ``tasks_by_rollout`` (a list, when given) with each rollout's."""
    rollouts = SkillRollouts(lambda: policy.make_env(steps), len(skills), steps)
    observations: list[np.ndarray] = []
    positions = rollouts.run(act or policy.act, skills, seed=seed, observations=observations)
    if achieved_tasks is not None:
        achieved_tasks.update(rollouts.achieved_tasks() or {})
    if tasks_by_rollout is not None:
        tasks_by_rollout.extend(rollouts.tasks_by_rollout() or [])
    rollouts.close()
    return np.stack(observations, axis=1), positions


def episode_steps(policy: SkillPolicy) -> int:
    """The episode length the skills were trained with (``EPISODE_STEPS`` if the checkpoint does not say)."""
    return int(policy.config.get("provenance", {}).get("config", {}).get("episode_steps", EPISODE_STEPS))


def check_out_dir(out_dir: str | Path, option: str = "--out") -> Path:
    """``out_dir`` as a Path, or a ValueError before any work when it cannot become a folder of results (a file, or
    under a file, or in a folder this user may not write)."""
    out_dir = Path(out_dir)
    existing = next((p for p in (out_dir, *out_dir.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        what = "it is a file" if existing == out_dir else f"{existing} is a file"
        raise ValueError(f"{option} {out_dir} must be a folder for the results, but {what}; give another folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {out_dir}: cannot write in {existing} (permission denied); give another folder")
    return out_dir


def evaluate_checkpoint(checkpoint: str, out_dir: str | Path, n_skills: int = HELD_OUT_ROLLOUTS, steps: int | None = None,
                        seed: int = 0, revision: str | None = None) -> dict[str, Any]:
    """Policy coverage of ``n_skills`` deterministic skills (drawn with ``seed`` from the checkpoint's prior; resets
    seeded ``seed + i``) over
    episodes of ``steps`` (default: the training episode length), with figures, written to ``out_dir``."""
    if n_skills < 1:
        raise ValueError(f"the number of skills must be >= 1, got {n_skills}")
    out_dir = check_out_dir(out_dir)
    policy = SkillPolicy.from_pretrained(checkpoint, revision=revision)
    steps = steps or episode_steps(policy)
    skills = evaluation_skills(n_skills, policy.skill_dim, policy.discrete, seed=seed, prior=policy.skill_prior)
    achieved: dict[str, bool] = {}
    by_rollout: list[list[str]] = []
    obs, positions = rollout_observations(policy, skills, steps, seed=seed, achieved_tasks=achieved,
                                          tasks_by_rollout=by_rollout)
    out_dir.mkdir(parents=True, exist_ok=True)
    bins = coverage(positions)
    result = {
        "checkpoint": checkpoint_reference(checkpoint),
        "env_id": policy.env_id,
        "policy_coverage": bins,
        **({"tasks_achieved": sum(achieved.values()), "tasks": achieved} if achieved else {}),
        # Recorded by training (a run's snapshot or export on an environment with tasks): METRA's queue and total task
        # coverage of the training transitions up to this checkpoint, beside the policy coverage measured here.
        **({"training_tasks": policy.config["provenance"]["training"]}
           if achieved and "training" in policy.config["provenance"] else {}),
        "n_skills": n_skills,
        "steps": steps,
        "seed": seed,
        "provenance": {k: v for k, v in policy.config["provenance"].items() if k != "config"},
        "final_positions": [{"skill": (int(np.argmax(z)) if policy.discrete else z.round(4).tolist()),
                             "final": p[-1].round(3).tolist(), **({"tasks": tasks} if achieved else {})}
                            for z, p, tasks in zip(skills, positions, by_rollout or [None] * len(skills))],
    }
    if achieved:
        plot_skill_tasks(skills, by_rollout, list(achieved), out_dir / "tasks.png",
                         title=f"{policy.env_id}: tasks each skill achieved ({n_skills} rollouts)")
    plot_trajectories(positions, skills, out_dir / "trajectories.png",
                      title=f"{policy.env_id}: {n_skills} skills, coverage {bins} bins")
    if policy.skill_dim == 2 and not policy.discrete and policy.phi_net is not None:  # DIAYN, DADS, CIC: no phi
        # One skill's path at a time: a batch of every frame of every skill would not fit a pixel CNN's memory.
        plot_phi(np.stack([policy.phi(path) for path in obs]), skills, out_dir / "phi.png")
    (out_dir / "coverage.json").write_text(json.dumps(result, indent=1))
    return result


def plot_skill_tasks(skills: np.ndarray, by_rollout: list[list[str]], tasks: list[str], path: Path,
                     title: str) -> None:
    """For environments with tasks (Kitchen): a skills x tasks grid, each cell the fraction of the skill's rollouts
    that achieved the task (discrete skills: one row per one-hot; continuous: one row per rollout)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    one_hot = bool(np.all((skills == 0) | (skills == 1)) and np.allclose(skills.sum(axis=1), 1.0))
    rows = np.argmax(skills, axis=1) if one_hot else np.arange(len(skills))
    labels = sorted(set(rows.tolist()))
    grid = np.zeros((len(labels), len(tasks)))
    counts = np.zeros(len(labels))
    for row, achieved in zip(rows, by_rollout):
        i = labels.index(int(row))
        counts[i] += 1
        grid[i] += [task in achieved for task in tasks]
    grid /= counts[:, None]
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * len(tasks), 1.2 + 0.22 * len(labels)))
    ax.imshow(grid, cmap="Greens", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), [f"skill {label}" if one_hot else f"rollout {label}" for label in labels],
                  fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_phi(latents: np.ndarray, skills: np.ndarray, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = skill_colors(skills)
    fig, ax = plt.subplots(figsize=(5, 5))
    for i, latent in enumerate(latents):
        ax.plot(latent[:, 0], latent[:, 1], color=colors[i], lw=1)
    ax.set(xlabel="phi_1(s)", ylabel="phi_2(s)", title="phi of the skill trajectories")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
