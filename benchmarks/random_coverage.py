"""Policy coverage of uniformly random actions: the floor every skill set is compared with.

48 rollouts of uniformly random actions (one episode each, the config's episode length), resets seeded
``seed + i`` as in ``metra-pretrain evaluate``, the same 1 x 1 m bins. With ``--seed 1000`` (the held-out seed of
the skill evaluations) the number sits beside the held-out coverage of the trained and untrained skills.

    MUJOCO_GL=egl python benchmarks/random_coverage.py --config quadruped_state --seed 1000

With ``--episodes N`` (more than 48) the episodes run 48 at a time (episode ``i`` still reset with ``seed + i``) and
the bins of all of them so far are counted after each batch: random actions' *total* coverage at equal env steps,
the floor of the exploration methods' total coverage (``results/comparison/exploration/``). Those results go under
``NAME@N``, beside the 48-episode ones:

    MUJOCO_GL=egl python benchmarks/random_coverage.py --config ant --episodes 2000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from pretrain.config import load_config
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_ROLLOUTS, HELD_OUT_SEED
from pretrain.run.coverage import SkillRollouts, bins_of
from pretrain.run.envs import env_factory

BATCH = HELD_OUT_ROLLOUTS  # episodes run at once: the held-out evaluation's count


def random_action_coverage(config_name: str, n_rollouts: int = BATCH, seed: int = HELD_OUT_SEED) -> dict:
    """Coverage of ``n_rollouts`` random-action episodes in the environment of a training config; past one batch,
    also the bins of all episodes so far after each batch (``total_coverage``: env steps -> bins)."""
    config = load_config(config_name, [])
    make = env_factory(config)
    batch = min(n_rollouts, BATCH)
    rollouts = SkillRollouts(make, batch, config.episode_steps)
    action_space = rollouts.envs[0].action_space
    rng = np.random.default_rng(seed)
    bins: set[tuple[int, ...]] = set()
    total: dict[int, int] = {}
    final_distances = []
    for start in range(0, n_rollouts, batch):  # the last batch may run past n_rollouts: its episodes are counted
        positions = rollouts.run(lambda obs, z: rng.uniform(action_space.low, action_space.high,
                                                             (len(obs), *action_space.shape)),
                                 np.zeros((batch, 1)), seed=seed + start)
        bins.update(map(tuple, bins_of(positions)))
        total[(start + batch) * config.episode_steps] = len(bins)
        final_distances.append(np.linalg.norm(positions[:, -1] - positions[:, 0], axis=-1))
    rollouts.close()
    result = {"config": config_name, "env_id": config.env_id, "env_kwargs": config.env_kwargs,
              "policy_coverage": len(bins), "n_rollouts": len(total) * batch, "steps": config.episode_steps,
              "seed": seed, "mean_final_distance_m": float(np.concatenate(final_distances).mean())}
    return result if len(total) == 1 else {**result, "total_coverage": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", default=["ant", "half_cheetah", "quadruped_state"])
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--episodes", type=int, default=BATCH, help="random-action episodes (48 at a time)")
    parser.add_argument("--out", default="benchmarks/results/random_coverage/summary.json")
    args = parser.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.is_file() else {}
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    for name in args.config:
        key = name if args.episodes == BATCH else f"{name}@{args.episodes}"
        results[key] = random_action_coverage(name, args.episodes, seed=args.seed)
        print(key, results[key]["policy_coverage"], "bins")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
