"""What limits state Humanoid METRA: how long the body stays up, and how far it gets, under skills and random actions.

dm_control's humanoid starts standing (head about 1.5 m up) and falls within about a second under any untrained
controller. METRA's coverage counts the torso's x-y, so skills that never learn to stand can only crawl. This measures,
for each checkpoint and for uniformly random actions on the same resets (seeded 1000 + i, as the held-out
evaluation): the head height (dm_control's ``head_height`` observation) at every policy step, the fraction of steps
with the head above 1 m, and the torso's x-y displacement over the episode. 48 rollouts of 200 policy steps each;
the checkpoints' skills are the held-out draws (seed 1000) of ``metra-pretrain evaluate --seed 1000``.

    MUJOCO_GL=egl python benchmarks/humanoid_falls.py RUN/snapshots/epoch_000900 [more checkpoints] \\
        --out benchmarks/results/humanoid_falls
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from metra_gym.skill_policy import SkillPolicy  # noqa: E402
from pretrain.algorithms.common.skills import evaluation_skills  # noqa: E402
from pretrain.evaluation.evaluate_checkpoint import (  # noqa: E402
    HELD_OUT_ROLLOUTS,
    HELD_OUT_SEED,
    episode_steps,
    rollout_observations,
)
from pretrain.project_paths import checkpoint_reference  # noqa: E402
from pretrain.run.coverage import coverage  # noqa: E402

# The state observation is the torso x-y, then dm_control's flat proprioception in its order: joint angles (21),
# head height (1), extremities, torso vertical, centre-of-mass velocity, velocities.
HEAD_HEIGHT_INDEX = 2 + 21
STANDING_HEAD_HEIGHT = 1.0  # metres; the head starts at about 1.5 and lies at about 0.15 once fallen


def rollouts_of(policy: SkillPolicy, act, skills: np.ndarray, steps: int) -> dict:
    """Head height per step and x-y displacement of deterministic rollouts of ``act`` (resets 1000 + i)."""
    observations, positions = rollout_observations(policy, skills, steps, seed=HELD_OUT_SEED, act=act)
    head = observations[:, :, HEAD_HEIGHT_INDEX]
    down = head <= STANDING_HEAD_HEIGHT
    first_down = np.where(down.any(axis=1), down.argmax(axis=1), head.shape[1])  # never down: one past the end
    displacement = np.linalg.norm(positions[:, -1] - positions[:, 0], axis=-1)
    return {"head_height_mean_per_step": head.mean(axis=0).round(3).tolist(),
            "fraction_of_steps_head_above_1m": float((head > STANDING_HEAD_HEIGHT).mean()),
            "first_step_head_below_1m_median": int(np.median(first_down)),
            "displacement_m_median": float(np.median(displacement)),
            "displacement_m_max": float(displacement.max()),
            "policy_coverage": coverage(positions)}


def measure(checkpoints: list[str]) -> dict:
    """The measurements of every checkpoint, and of random actions in the first checkpoint's environment."""
    results, policies = {}, []
    for checkpoint in checkpoints:
        policy = SkillPolicy.from_pretrained(checkpoint)
        policies.append(policy)
        if policy.env_id != "metra/Humanoid-v0" or policy.pixels is not None:
            raise ValueError(f"{checkpoint} was trained on {policy.env_id} (pixels: {policy.pixels is not None}); "
                             "this measures state Humanoid checkpoints (config humanoid_state)")
        skills = evaluation_skills(HELD_OUT_ROLLOUTS, policy.skill_dim, policy.discrete, seed=HELD_OUT_SEED,
                                   prior=policy.skill_prior)
        results[checkpoint_reference(checkpoint)] = rollouts_of(policy, policy.act, skills, episode_steps(policy))
    policy = policies[0]
    rng = np.random.default_rng(HELD_OUT_SEED)
    low, high = policy.action_low, policy.action_high
    results["random actions"] = rollouts_of(
        policy, lambda obs, z: rng.uniform(low, high, (len(obs), *low.shape)), np.zeros((HELD_OUT_ROLLOUTS, 1)),
        episode_steps(policy))
    return results


def plot(results: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, result in results.items():
        ax.plot(result["head_height_mean_per_step"], label=f"{name}: {result['policy_coverage']} bins",
                linestyle="--" if name == "random actions" else "-")
    ax.axhline(STANDING_HEAD_HEIGHT, color="grey", linewidth=0.8)
    ax.set(xlabel="policy step (2 control steps, 0.05 s)", ylabel="head height (m), mean of 48",
           title="State Humanoid: skills and random actions, held-out resets")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+", help="state Humanoid checkpoints or run snapshots")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/humanoid_falls"))
    args = parser.parse_args()
    results = measure(args.checkpoints)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(
        {"what": __doc__.split("\n\n")[0], "rollouts": HELD_OUT_ROLLOUTS, "reset_seeds": f"{HELD_OUT_SEED} + i",
         "results": results}, indent=1))
    plot(results, args.out / "head_height.png")
    for name, result in results.items():
        print(f"{name}: head above 1 m {result['fraction_of_steps_head_above_1m']:.0%} of steps (below from step "
              f"{result['first_step_head_below_1m_median']}, median), displacement median "
              f"{result['displacement_m_median']:.2f} m (max {result['displacement_m_max']:.2f}), "
              f"{result['policy_coverage']} bins")
    print(f"wrote {args.out}/summary.json and head_height.png")


if __name__ == "__main__":
    main()
