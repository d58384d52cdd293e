"""How often the greedy look-ahead reference has nothing to go on (issue 41). Every skill step the look-ahead
(``pretrain.downstream.reference.LookAhead``) simulates each candidate skill for K steps and runs the one with the most
task reward; when no candidate earns any, progress breaks the tie. This counts, over a seed's evaluation episodes,
the skill steps where no candidate pays, and the return the greedy look-ahead gets on them: on a task where most
steps are ties a look-ahead over one skill step is a low ceiling (compare ``lookahead_two``).

    python benchmarks/lookahead_ties.py cheetah_hurdle_v1 --episodes 10 \\
        --out benchmarks/results/downstream/lookahead_ties/cheetah_hurdle_v1.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def count_ties(task_name: str, seed: int, episodes: int) -> dict:
    import numpy as np

    from pretrain.downstream.evaluation import evaluation_seeds
    from pretrain.downstream.protocol import DEFAULT_PROTOCOL, episode_shape, skill_env
    from pretrain.downstream.reference import LookAhead, best_index

    k, skills_per_episode = episode_shape(task_name, DEFAULT_PROTOCOL)
    env = skill_env(task_name, None, skill_steps=k, max_episode_steps=skills_per_episode)
    lookahead, inner = LookAhead(), env.unwrapped
    returns, steps, ties = [], 0, 0
    for episode_seed in evaluation_seeds(seed, episodes):
        env.reset(seed=int(episode_seed))
        lookahead.reset(int(episode_seed))
        episode_return, done = 0.0, False
        while not done:
            candidates, scores = lookahead.evaluate(inner)
            steps += 1
            ties += max(reward for reward, _ in scores) <= 0
            _, reward, terminated, truncated, _ = env.step(candidates[best_index(scores)])
            episode_return += float(reward)
            done = terminated or truncated
        returns.append(episode_return)
    env.close()
    return {"task": task_name, "seed": seed, "episodes": episodes, "skill_steps": steps, "no_candidate_pays": ties,
            "tie_fraction": ties / steps, "lookahead_return": float(np.mean(returns)), "returns": returns}


def main(argv: list[str] | None = None) -> int:
    from pretrain.downstream import TASKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=0, help="whose evaluation episodes (evaluation_seeds)")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    result = count_ties(args.task, args.seed, args.episodes)
    result["command"] = shlex.join(["python", "benchmarks/lookahead_ties.py", *(argv or sys.argv[1:])])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.task}: {result['no_candidate_pays']} of {result['skill_steps']} skill steps with no paying candidate "
          f"({result['tie_fraction']:.0%}); greedy look-ahead return {result['lookahead_return']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
