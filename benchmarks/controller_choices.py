"""Which skills a trained downstream controller chooses: per evaluation episode, the skill of every skill step, the
task information left at the end (goal tasks: the goal relative to the agent) and the return. The episodes are the
run's own shared evaluation episodes (``pretrain.downstream.evaluation.evaluation_seeds``).

    python benchmarks/controller_choices.py runs/downstream/runs/cheetah_goal-controller-paper-seed=0.zip \\
        --task cheetah_goal --protocol paper --seed 0 --episodes 6
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    import gymnasium as gym
    from stable_baselines3 import PPO, SAC

    from pretrain.downstream import controller_env
    from pretrain.downstream.evaluation import evaluation_seeds
    from pretrain.downstream.protocol import task_env

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agent", type=Path, help="a learned controller run's NAME.zip")
    parser.add_argument("--task", required=True)
    parser.add_argument("--protocol", default="paper")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (its evaluation episodes)")
    parser.add_argument("--episodes", type=int, default=6)
    args = parser.parse_args(argv)
    if not args.agent.is_file():
        print(f"controller_choices: no agent file {args.agent}", file=sys.stderr)
        return 2
    env = controller_env(args.task, None, args.protocol)
    learner = PPO if isinstance(env.action_space, gym.spaces.Discrete) else SAC
    agent = learner.load(args.agent)
    inner = task_env(env)  # its observation: the pretraining one, then the task information
    task_size = inner.observation_space.shape[0] - int(inner.pretraining_obs_dim)
    for reset_seed in evaluation_seeds(args.seed, args.episodes):
        obs, _ = env.reset(seed=reset_seed)
        skills, total, done = [], 0.0, False
        while not done:
            skill, _ = agent.predict(obs, deterministic=True)
            skills.append(int(skill) if np.ndim(skill) == 0 else np.round(skill, 2).tolist())
            obs, reward, terminated, truncated, _ = env.step(skill)
            total, done = total + float(reward), terminated or truncated
        print(f"reset seed {reset_seed}: skills {skills}, task information at the end "
              f"{np.round(obs[-task_size:].astype(float), 2).tolist()}, return {total:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
