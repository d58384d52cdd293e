"""How much of the look-ahead reference's edge needs the exact simulator state (issue 41). The look-ahead controller
(``pretrain.downstream.reference.LookAhead``) scores every candidate skill by simulating it from the current state;
here its simulations start from the state with Gaussian noise of standard deviation ``sigma`` on every velocity
(``qvel``), each score the mean of ``--samples`` such simulations, and the chosen skill runs from the true state. If
the return holds as sigma grows, what the look-ahead exploits is predictable from an approximate state, which a
learned controller observing the state could learn too; if it falls, it plays on details of the state.
``--unknown-heading`` asks the same of the heading, which the DMC robots' state observation lacks: each simulation
starts from the state turned about the vertical through the torso by an angle uniform in [-pi, pi] (the free joint's
orientation and linear velocity turned together: the same motion relative to the body, facing another way).

    python benchmarks/lookahead_noise.py humanoid_goal --sigmas 0 0.3 1.0 --samples 2 \\
        --out benchmarks/results/downstream/lookahead_noise/humanoid_goal.json
    python benchmarks/lookahead_noise.py humanoid_goal --unknown-heading --samples 2 \\
        --out benchmarks/results/downstream/lookahead_noise/humanoid_goal_heading.json

Episodes: each seed's 50 shared evaluation episodes (``evaluation_seeds``), as every downstream run file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path


def heading_blind(samples: int):
    """A look-ahead whose simulations start from the state turned about the vertical by a random angle."""
    import mujoco
    import numpy as np

    from metra_gym.envs.snapshot import mujoco_structs
    from pretrain.downstream.reference import LookAhead

    class HeadingBlindLookAhead(LookAhead):
        perturbs = True

        def perturb(self, task_env) -> None:
            model, data = mujoco_structs(task_env)
            angle = self.noise.uniform(-np.pi, np.pi)
            turned = np.empty(4)
            mujoco.mju_mulQuat(turned, np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)]), data.qpos[3:7].copy())
            data.qpos[3:7] = turned
            cos, sin = np.cos(angle), np.sin(angle)
            data.qvel[:2] = [cos * data.qvel[0] - sin * data.qvel[1], sin * data.qvel[0] + cos * data.qvel[1]]
            mujoco.mj_forward(model, data)

    return HeadingBlindLookAhead(samples=samples)


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from pretrain.downstream.evaluation import evaluation_seeds, run_episodes
    from pretrain.downstream.protocol import TASKS, episode_shape, skill_env
    from pretrain.downstream.reference import LookAhead
    from pretrain.downstream.runs import write_atomic
    from pretrain.downstream.verdict import interval

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--sigmas", type=float, nargs="*", default=[], help="velocity noise of the model (0: exact)")
    parser.add_argument("--unknown-heading", action="store_true", help="a model that does not know the heading")
    parser.add_argument("--samples", type=int, default=4, help="simulations per candidate score (sigma > 0)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if any(sigma < 0 for sigma in args.sigmas) or args.samples < 1:
        parser.error(f"need sigmas >= 0 and samples >= 1, got {args.sigmas} and {args.samples}")
    if not args.sigmas and not args.unknown_heading:
        parser.error("give --sigmas, --unknown-heading or both")

    k, skills_per_episode = episode_shape(args.task)
    env = skill_env(args.task, skill_steps=k, max_episode_steps=skills_per_episode)
    row = {"task": args.task, "skill_steps": k, "skills_per_episode": skills_per_episode, "samples": args.samples,
           "episodes": args.episodes, "models": {},
           "command": shlex.join(["python", "benchmarks/lookahead_noise.py", *(sys.argv[1:] if argv is None else argv)])}
    if args.unknown_heading and not hasattr(env.unwrapped.env.unwrapped, "heading"):
        parser.error(f"{args.task} has no heading (--unknown-heading is for the DMC goal tasks)")
    models = {str(sigma): lambda sigma=sigma: LookAhead(model_noise=sigma, samples=args.samples) for sigma in args.sigmas}
    if args.unknown_heading:
        models["unknown heading"] = lambda: heading_blind(args.samples)
    for name, model in models.items():
        start, means = time.process_time(), []
        for seed in args.seeds:
            lookahead = model()
            returns = run_episodes(env, lambda obs: lookahead(env.unwrapped, obs),  # noqa: B023 (used at once)
                                   evaluation_seeds(seed, args.episodes), on_reset=lookahead.reset)
            means.append(float(np.mean(returns)))
        row["models"][name] = {**interval(means), "seeds": args.seeds,
                               "cpu_seconds": round(time.process_time() - start, 1)}
        print(f"{args.task} model {name}: {np.mean(means):.2f} over seeds {args.seeds} ({means})", flush=True)
    env.close()
    write_atomic(args.out, row)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
