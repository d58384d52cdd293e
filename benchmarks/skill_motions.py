"""What the skills do: per held-out skill, how far the body travels and how often it turns over.

Coverage counts the bins the x(-y) position visits; it cannot tell a skill that stands still from one that somersaults
in place. This benchmark rolls out the held-out evaluation skills of each checkpoint (48 deterministic skills drawn
with ``--seed`` from the checkpoint's prior, resets seeded ``seed + i``, the training episode length, as
``metra-pretrain evaluate``) and records for each skill

- the net displacement of the coverage coordinates (m), start to end of the episode;
- the net turns of every unlimited hinge joint of the model (HalfCheetah's ``rooty``, the torso's pitch: a
  somersaulting skill gains one turn per flip; models whose root is a free joint, like Ant's, have none);

and, for skills with a phi (METRA, LSD), where phi looks: the norm of d phi / d s_i for each entry i of the
normalised observation, averaged over every 10th visited state.

    MUJOCO_GL=egl python benchmarks/skill_motions.py \\
        lsd=runs/comparison/half_cheetah-lsd-seed=0/snapshots/epoch_001000 \\
        metra=runs/comparison/half_cheetah-metra-seed=0/snapshots/epoch_001050 --out benchmarks/results/skill_motions

writes ``summary.json`` (every skill) and ``table.md`` (per checkpoint: skills travelling more than ``--far`` m,
skills turning over at least once, median and largest displacement, most turns of one skill).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import mujoco
import numpy as np
import torch

from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED, check_out_dir, episode_steps
from pretrain.project_paths import checkpoint_reference


def unlimited_hinges(model: mujoco.MjModel) -> dict[str, int]:
    """Name -> qpos address of every hinge joint without a range (its angle accumulates: turns are countable)."""
    return {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j): int(model.jnt_qposadr[j])
            for j in range(model.njnt)
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE and not model.jnt_limited[j]}


def skill_motions(checkpoint: str, n_skills: int = 48, seed: int = HELD_OUT_SEED) -> dict[str, Any]:
    """Net displacement (m) and net turns of the unlimited hinges for each of ``n_skills`` held-out skills."""
    policy = SkillPolicy.from_pretrained(checkpoint)
    steps = episode_steps(policy)
    skills = evaluation_skills(n_skills, policy.skill_dim, policy.discrete, seed=seed, prior=policy.skill_prior)
    env = policy.make_env(steps)
    model = env.unwrapped.model
    hinges = unlimited_hinges(model)
    rows, visited = [], []
    for i, z in enumerate(skills):
        obs, info = env.reset(seed=seed + i)
        start, angles = np.asarray(info["coordinates"], dtype=float), {n: float(env.unwrapped.data.qpos[a])
                                                                     for n, a in hinges.items()}
        end = start
        for _ in range(steps):
            obs, _, terminated, truncated, info = env.step(policy.act(obs, z))
            visited.append(obs)
            end = np.asarray(info["coordinates"], dtype=float)
            if terminated or truncated:
                break
        rows.append({"skill": int(np.argmax(z)) if policy.discrete else z.round(4).tolist(),
                     "displacement_m": round(float(np.linalg.norm(end - start)), 2),
                     "turns": {n: round((float(env.unwrapped.data.qpos[a]) - angles[n]) / (2 * np.pi), 2)
                               for n, a in hinges.items()}})
    env.close()
    return {"checkpoint": checkpoint_reference(checkpoint), "env_id": policy.env_id,
            "algorithm": policy.algorithm, "n_skills": n_skills, "steps": steps, "seed": seed,
            "unlimited_hinges": list(hinges),
            "phi_input_gradient": phi_input_gradient(policy, np.stack(visited[::10])), "skills": rows}


def phi_input_gradient(policy: SkillPolicy, observations: np.ndarray) -> list[float] | None:
    """Mean over ``observations`` of ||d phi / d s_i|| for each entry i of the normalised observation (the
    columns of phi's Jacobian); None for skills without phi."""
    if policy.phi_net is None:
        return None
    states = torch.as_tensor(policy.normalizer(observations), dtype=torch.float32).requires_grad_(True)
    out = policy.phi_net(states)
    rows = [torch.autograd.grad(out[:, k].sum(), states, retain_graph=True)[0] for k in range(out.shape[1])]
    return [round(v, 3) for v in torch.stack(rows, dim=1).norm(dim=1).mean(dim=0).tolist()]


def table(results: dict[str, dict[str, Any]], far: float) -> str:
    lines = [f"| checkpoint | algorithm | env | skills | travel > {far:g} m | turn over >= 1 | median travel (m) |"
             " max travel (m) | most turns |", "|---|---|---|---|---|---|---|---|---|"]
    for label, result in results.items():
        travel = np.array([row["displacement_m"] for row in result["skills"]])
        turned = sum(any(abs(t) >= 1 for t in row["turns"].values()) for row in result["skills"])
        flips = str(turned) if result["unlimited_hinges"] else "- (no unlimited hinge)"
        most = max((abs(t) for row in result["skills"] for t in row["turns"].values()), default=None)
        lines.append(f"| {label} | {result['algorithm']} | {result['env_id']} | {len(travel)} | "
                     f"{int((travel > far).sum())} | {flips} | {np.median(travel):.1f} | {travel.max():.1f} | "
                     f"{'-' if most is None else f'{most:.1f}'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", metavar="LABEL=CHECKPOINT",
                        help="a label and a checkpoint (bundled name, folder or hf:// reference)")
    parser.add_argument("--skills", type=int, default=48)
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--far", type=float, default=5.0, help="metres that count as travelling")
    parser.add_argument("--out", default="benchmarks/results/skill_motions")
    args = parser.parse_args()
    pairs = [item.partition("=") for item in args.checkpoints]
    bad = [item for item, (label, eq, ref) in zip(args.checkpoints, pairs) if not (label and eq and ref)]
    if bad:
        parser.error(f"checkpoints are LABEL=CHECKPOINT (e.g. lsd=runs/x/snapshots/epoch_001000), got {bad}")
    if args.skills < 1:
        parser.error(f"--skills must be >= 1, got {args.skills}")
    out = check_out_dir(args.out)
    results = {label: skill_motions(ref, args.skills, args.seed) for label, _, ref in pairs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(results, indent=1))
    (out / "table.md").write_text(table(results, args.far))
    print(table(results, args.far), end="")
    print(f"wrote {out / 'summary.json'} and {out / 'table.md'}")


if __name__ == "__main__":
    main()
