"""Policy coverage of uniformly random actions: the floor every skill set is compared with.

48 rollouts of uniformly random actions (one episode each, the config's episode length), resets seeded
``seed + i`` as in ``metra-pretrain evaluate``, the same 1 x 1 m bins. With ``--seed 1000`` (the held-out seed of
the skill evaluations) the number sits beside the held-out coverage of the trained and untrained skills.

    MUJOCO_GL=egl python benchmarks/random_coverage.py --config quadruped_state --seed 1000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from pretrain.config import load_config
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED
from pretrain.run.coverage import SkillRollouts, coverage
from pretrain.run.envs import env_factory


def random_action_coverage(config_name: str, n_rollouts: int = 48, seed: int = HELD_OUT_SEED) -> dict:
    """Coverage of ``n_rollouts`` random-action episodes in the environment of a training config."""
    config = load_config(config_name, [])
    make = env_factory(config)
    rollouts = SkillRollouts(make, n_rollouts, config.episode_steps)
    action_space = rollouts.envs[0].action_space
    rng = np.random.default_rng(seed)
    positions = rollouts.run(lambda obs, z: rng.uniform(action_space.low, action_space.high,
                                                         (len(obs), *action_space.shape)),
                             np.zeros((n_rollouts, 1)), seed=seed)
    rollouts.close()
    return {"config": config_name, "env_id": config.env_id, "env_kwargs": config.env_kwargs,
            "policy_coverage": coverage(positions), "n_rollouts": n_rollouts, "steps": config.episode_steps,
            "seed": seed, "mean_final_distance_m": float(np.linalg.norm(positions[:, -1] - positions[:, 0],
                                                                         axis=-1).mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", default=["ant", "half_cheetah", "quadruped_state"])
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--out", default="benchmarks/results/random_coverage/summary.json")
    args = parser.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.is_file() else {}
    for name in args.config:
        results[name] = random_action_coverage(name, seed=args.seed)
        print(name, results[name]["policy_coverage"], "bins")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
