"""Train a high-level controller over frozen METRA skills (or the flat SAC baseline) on a downstream task.

    python examples/hierarchical_training.py --task ant_multigoals --steps 2000000          # SAC over skills
    python examples/hierarchical_training.py --task cheetah_hurdle_v1 --steps 2000000       # PPO over skills
    python examples/hierarchical_training.py --task ant_multigoals --steps 2000000 --flat   # flat SAC baseline
    python examples/hierarchical_training.py --task ant_multigoals --steps 50000 --protocol v0.3

``--steps`` counts low-level environment steps for both, so the two are compared at equal experience (one
high-level step runs a skill for K low-level steps). The paper's protocol (the default) trains with the skills'
pretraining SAC settings, which learn after 10,000 controller steps (250,000 low-level steps); metra-gym 0.3's
(``--protocol v0.3``) learns within tens of thousands of low-level steps.
"""

from __future__ import annotations

import argparse

import numpy as np

from pretrain.downstream import DEFAULT_PROTOCOL, PROTOCOLS, TASKS, controller_env, flat_agent, hierarchical_agent
from pretrain.downstream.evaluation import agent_returns, evaluation_seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=sorted(TASKS), default="ant_multigoals")
    parser.add_argument("--steps", type=int, default=2_000_000, help="low-level env steps")
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS), default=DEFAULT_PROTOCOL)
    parser.add_argument("--flat", action="store_true", help="train the flat SAC baseline instead")
    parser.add_argument("--checkpoint", help="skills to use (default: the bundled ones)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="where to save the trained controller (.zip)")
    args = parser.parse_args()

    if args.flat:
        agent = flat_agent(args.task, args.seed, args.protocol)
        timesteps, env = args.steps, agent.get_env().envs[0]
    else:
        agent = hierarchical_agent(args.task, args.seed, args.checkpoint, protocol_name=args.protocol)
        env = controller_env(args.task, args.checkpoint, args.protocol)
        timesteps = -(-args.steps // env.unwrapped.skill_steps)
    agent.learn(timesteps, progress_bar=True)
    returns = agent_returns(agent, env, evaluation_seeds(args.seed, 10))
    kind = "flat SAC" if args.flat else f"{type(agent).__name__} over skills"
    print(f"{args.task}, {kind} ({args.protocol}), {args.steps} low-level steps: return {np.mean(returns):.2f} "
          f"+- {np.std(returns):.2f}")
    if args.save:
        agent.save(args.save)


if __name__ == "__main__":
    main()
