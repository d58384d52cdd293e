"""Train a high-level controller over frozen METRA skills (or the flat SAC baseline) on a downstream task.

    python examples/hierarchical_training.py --task ant_multigoals --steps 200000          # SAC over skills
    python examples/hierarchical_training.py --task cheetah_hurdle --steps 200000          # PPO over skills
    python examples/hierarchical_training.py --task ant_multigoals --steps 200000 --flat   # flat SAC baseline

``--steps`` counts low-level environment steps for both, so the two are compared at equal experience
(one high-level step runs a skill for 25 low-level steps).
"""

from __future__ import annotations

import argparse

import numpy as np
from stable_baselines3.common.evaluation import evaluate_policy

from metra_gym.registration import SKILL_STEPS
from pretrain.downstream import TASKS, flat_agent, hierarchical_agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=sorted(TASKS), default="ant_multigoals")
    parser.add_argument("--steps", type=int, default=100_000, help="low-level env steps")
    parser.add_argument("--flat", action="store_true", help="train the flat SAC baseline instead")
    parser.add_argument("--checkpoint", help="skills to use (default: the bundled ones)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="where to save the trained controller (.zip)")
    args = parser.parse_args()

    if args.flat:
        agent, timesteps = flat_agent(args.task, args.seed), args.steps
    else:
        agent, timesteps = hierarchical_agent(args.task, args.seed, args.checkpoint), args.steps // SKILL_STEPS
    agent.learn(timesteps, progress_bar=True)
    returns, _ = evaluate_policy(agent, agent.get_env(), n_eval_episodes=10, deterministic=True,
                                 return_episode_rewards=True)
    kind = "flat SAC" if args.flat else f"{type(agent).__name__} over skills"
    print(f"{args.task}, {kind}, {args.steps} low-level steps: return {np.mean(returns):.2f} +- {np.std(returns):.2f}")
    if args.save:
        agent.save(args.save)


if __name__ == "__main__":
    main()
