"""What the skills do: per held-out skill, how far the body travels and how often it turns over.

Coverage counts the bins the x(-y) position visits; it cannot tell a skill that stands still from one that somersaults
in place. This benchmark rolls out the held-out evaluation skills of each checkpoint (48 deterministic skills drawn
with ``--seed`` from the checkpoint's prior, resets seeded ``seed + i``, the training episode length, as
``metra-pretrain evaluate``) and records for each skill

- the net displacement of the coverage coordinates (m), start to end of the episode;
- for x-y coordinates, the direction of that displacement (the table gives the largest angle between neighbouring
  directions and how many skills travel within 3 degrees of another: crowded directions share their bins; beside
  them the same for the 2-D skills' own directions, which random draws crowd as much);
- the net turns of every unlimited hinge joint of the model (HalfCheetah's ``rooty``, the torso's pitch: a
  somersaulting skill gains one turn per flip; models whose root is a free joint, like Ant's, have none);
- for a root that is a free joint (Ant's torso), the fraction of the episode's states with the root upside down (its
  z axis below the horizon) and the root's largest height: a body that tumbles or jumps, which pure exploration
  rewards early on;

and, for skills with a phi (METRA, LSD), where phi looks: the norm of d phi / d s_i for each entry i of the
normalised observation, averaged over every 10th visited state.

    MUJOCO_GL=egl python benchmarks/skill_motions.py \\
        lsd=runs/comparison/half_cheetah-lsd-seed=0/snapshots/epoch_001000 \\
        metra=runs/comparison/half_cheetah-metra-seed=0/snapshots/epoch_001050 --out benchmarks/results/skill_motions

writes ``summary.json`` (every skill; the paths' coverage, and that of straight lines from each start to the same end) and ``table.md`` (per checkpoint: skills travelling more than ``--far`` m,
skills turning over at least once, median and largest displacement, most turns of one skill).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import mujoco
import numpy as np
import torch

from metra_gym.atomic_files import write_text_atomic
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_ROLLOUTS, HELD_OUT_SEED, check_out_dir, episode_steps
from pretrain.project_paths import checkpoint_reference
from pretrain.run.coverage import SkillRollouts, coverage


def unlimited_hinges(model: mujoco.MjModel) -> dict[str, int]:
    """Name -> qpos address of every hinge joint without a range (its angle accumulates: turns are countable)."""
    return {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j): int(model.jnt_qposadr[j])
            for j in range(model.njnt)
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE and not model.jnt_limited[j]}


def free_root(model: mujoco.MjModel) -> int | None:
    """The qpos address of the model's first free joint (the root of a free-floating body: Ant's torso), or None."""
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    return int(model.jnt_qposadr[free[0]]) if free else None


def root_posture(qpos: np.ndarray, root: int) -> tuple[float, float]:
    """Over one episode's states ``qpos`` (steps, nq): the fraction with the free root upside down and the root's
    largest height (m). The root's z axis has z component 1 - 2 (x^2 + y^2) for its quaternion (w, x, y, z) at
    ``qpos[root + 3 : root + 7]``; below 0 the body's top faces the floor."""
    x, y = qpos[:, root + 4], qpos[:, root + 5]
    return float(np.mean(1.0 - 2.0 * (x * x + y * y) < 0.0)), float(qpos[:, root + 2].max())


def straight_paths(starts: np.ndarray, ends: np.ndarray, steps: int) -> np.ndarray:
    """Straight lines from ``starts`` to ``ends`` (n, c), sampled densely enough (20 points per step) that no bin
    they cross is skipped: (n, 20 * steps + 1, c)."""
    line = np.linspace(0.0, 1.0, 20 * steps + 1)[None, :, None]
    return starts[:, None, :] + (ends - starts)[:, None, :] * line


def radial_line_coverage(directions_deg: list[float], lengths: list[float], steps: int) -> dict[str, int]:
    """Bins of straight lines from the origin, one per direction, each ``length`` metres long: the held-out coverage
    that skills running straight along these directions would get, for each length."""
    unit = np.stack([np.cos(np.radians(directions_deg)), np.sin(np.radians(directions_deg))], axis=-1)
    return {f"{length:g}": coverage(straight_paths(np.zeros_like(unit), unit * length, steps)) for length in lengths}


def skill_motions(checkpoint: str, n_skills: int = HELD_OUT_ROLLOUTS, seed: int = HELD_OUT_SEED,
                  lengths: tuple[float, ...] = (32.0, 40.0, 46.0, 52.0)) -> dict[str, Any]:
    """Net displacement (m) and net turns of the unlimited hinges for each of ``n_skills`` held-out skills, rolled
    out exactly as ``metra-pretrain evaluate`` rolls them out (one batch, so its coverage is the held-out one)."""
    policy = SkillPolicy.from_pretrained(checkpoint)
    steps = episode_steps(policy)
    skills = evaluation_skills(n_skills, policy.skill_dim, policy.discrete, seed=seed, prior=policy.skill_prior)
    rollouts = SkillRollouts(lambda: policy.make_env(steps), n_skills, steps)
    model = rollouts.envs[0].unwrapped.model
    hinges, root = unlimited_hinges(model), free_root(model)
    states: list[np.ndarray] = []  # (n_skills, nq) before each step; the first call comes right after the resets

    def act(obs: np.ndarray, z: np.ndarray) -> np.ndarray:
        states.append(np.stack([env.unwrapped.data.qpos.copy() for env in rollouts.envs]))
        return policy.act(obs, z)

    observations: list[np.ndarray] = []
    positions = rollouts.run(act, skills, seed=seed, observations=observations)
    states.append(np.stack([env.unwrapped.data.qpos.copy() for env in rollouts.envs]))  # an ended one stays put
    rollouts.close()
    qpos_paths = np.stack(states, axis=1)  # (n_skills, steps + 1, nq)
    rows = []
    for z, path, qpos in zip(skills, positions, qpos_paths):
        move = path[-1] - path[0]
        row = {"skill": int(np.argmax(z)) if policy.discrete else z.round(4).tolist(),
               "displacement_m": round(float(np.linalg.norm(move)), 2),
               **({"direction_deg": round(float(np.degrees(np.arctan2(move[1], move[0]))), 1)} if len(move) == 2 else {}),
               "turns": {n: round(float(qpos[-1, a] - qpos[0, a]) / (2 * np.pi), 2) for n, a in hinges.items()}}
        if root is not None:
            upside_down, height = root_posture(qpos, root)
            row.update(upside_down_fraction=round(upside_down, 3), root_max_height_m=round(height, 2))
        rows.append(row)
    # The bins of the paths, and of straight lines from each start to the same end: equal when the skills run straight,
    # so that their bins follow from how far they travel alone.
    straight = straight_paths(positions[:, 0], positions[:, -1], steps)
    visited = np.concatenate(observations[1::10])  # every 10th step's observations of every skill
    # Random draws crowd too: for 2-D continuous skills, the same spread of the skills' own directions, and the bins of
    # straight runners along them at a few lengths (what a given speed is worth on this metric).
    planar = policy.skill_dim == 2 and not policy.discrete and positions.shape[-1] == 2
    z_directions = np.degrees(np.arctan2(skills[:, 1], skills[:, 0])).round(1).tolist() if planar else None
    return {"checkpoint": checkpoint_reference(checkpoint), "env_id": policy.env_id,
            "algorithm": policy.algorithm, "n_skills": n_skills, "steps": steps, "seed": seed,
            "policy_coverage": coverage(positions), "straight_line_coverage": coverage(straight),
            "unlimited_hinges": list(hinges), "skill_directions_deg": z_directions,
            "radial_line_coverage": radial_line_coverage(z_directions, list(lengths), steps) if planar else None,
            "phi_input_gradient": phi_input_gradient(policy, visited), "skills": rows}


def phi_input_gradient(policy: SkillPolicy, observations: np.ndarray) -> list[float] | None:
    """Mean over ``observations`` of ||d phi / d s_i|| for each entry i of the normalised observation (the
    columns of phi's Jacobian); None for skills without phi."""
    if policy.phi_net is None:
        return None
    states = torch.as_tensor(policy.normalizer(observations), dtype=torch.float32).requires_grad_(True)
    out = policy.phi_net(states)
    rows = [torch.autograd.grad(out[:, k].sum(), states, retain_graph=True)[0] for k in range(out.shape[1])]
    return [round(v, 3) for v in torch.stack(rows, dim=1).norm(dim=1).mean(dim=0).tolist()]


def direction_spread(directions_deg: list[float], close: float = 3.0) -> tuple[float, int]:
    """The largest angle between neighbouring travel directions (degrees; 48 even skills: 7.5) and how many skills
    have another within ``close`` degrees: skills crowded into a few directions share their bins."""
    angles = np.sort(np.asarray(directions_deg) % 360.0)
    gaps = np.diff(np.r_[angles, angles[0] + 360.0])  # gaps[i]: from skill i to the next one round the circle
    crowded = (gaps < close) | (np.roll(gaps, 1) < close)
    return float(gaps.max()), int(crowded.sum())


def table(results: dict[str, dict[str, Any]], far: float) -> str:
    lines = [f"| checkpoint | algorithm | env | skills | bins (straight lines to the same ends) | travel > {far:g} m | turn over >= 1 | median travel (m) |"
             " max travel (m) | most turns |"
             " largest gap between directions (skills' z) | skills within 3 deg of another (skills' z) |"
             " upside down half the episode or more | root's largest height (m) |", "|---" * 14 + "|"]
    for label, result in results.items():
        travel = np.array([row["displacement_m"] for row in result["skills"]])
        turned = sum(any(abs(t) >= 1 for t in row["turns"].values()) for row in result["skills"])
        flips = str(turned) if result["unlimited_hinges"] else "- (no unlimited hinge)"
        directions = [row["direction_deg"] for row in result["skills"] if "direction_deg" in row]
        gap, crowded = direction_spread(directions) if len(directions) > 1 else (None, None)
        spread = "- | -" if gap is None else f"{gap:.1f} deg | {crowded}"
        if gap is not None and result["skill_directions_deg"]:
            z_gap, z_crowded = direction_spread(result["skill_directions_deg"])
            spread = f"{gap:.1f} deg ({z_gap:.1f}) | {crowded} ({z_crowded})"
        most = max((abs(t) for row in result["skills"] for t in row["turns"].values()), default=None)
        rooted = [row for row in result["skills"] if "upside_down_fraction" in row]  # a free root (rows since 11-30)
        posture = (f"{sum(row['upside_down_fraction'] >= 0.5 for row in rooted)} | "
                   f"{max(row['root_max_height_m'] for row in rooted):.2f}") if rooted else "- | -"
        lines.append(f"| {label} | {result['algorithm']} | {result['env_id']} | {len(travel)} | "
                     f"{result['policy_coverage']} ({result['straight_line_coverage']}) | "
                     f"{int((travel > far).sum())} | {flips} | {np.median(travel):.1f} | {travel.max():.1f} | "
                     f"{'-' if most is None else f'{most:.1f}'} | {spread} | {posture} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", metavar="LABEL=CHECKPOINT",
                        help="a label and a checkpoint (bundled name, folder or hf:// reference)")
    parser.add_argument("--skills", type=int, default=48)
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--far", type=float, default=5.0, help="metres that count as travelling")
    parser.add_argument("--out", default="benchmarks/results/skill_motions")
    parser.add_argument("--add", action="store_true",
                        help="keep the checkpoints OUT/summary.json already holds (their runs may be gone) and add "
                             "these, replacing any of the same label")
    args = parser.parse_args()
    pairs = [item.partition("=") for item in args.checkpoints]
    bad = [item for item, (label, eq, ref) in zip(args.checkpoints, pairs) if not (label and eq and ref)]
    if bad:
        parser.error(f"checkpoints are LABEL=CHECKPOINT (e.g. lsd=runs/x/snapshots/epoch_001000), got {bad}")
    if args.skills < 1:
        parser.error(f"--skills must be >= 1, got {args.skills}")
    out = check_out_dir(args.out)
    earlier = out / "summary.json"
    results = json.loads(earlier.read_text()) if args.add and earlier.is_file() else {}
    results.update({label: skill_motions(ref, args.skills, args.seed) for label, _, ref in pairs})
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "summary.json", json.dumps(results, indent=1))  # with --add, the only copy of old rows
    write_text_atomic(out / "table.md", table(results, args.far))
    print(table(results, args.far), end="")
    print(f"wrote {out / 'summary.json'} and {out / 'table.md'}")


if __name__ == "__main__":
    main()
