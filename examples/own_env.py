"""Skills for your own environment: METRA on Gymnasium's Swimmer-v5 (which metra-gym does not ship), exported as a
skill checkpoint and driven through ``metra_gym.SkillEnv``, with a figure of where each skill takes the swimmer.

    python examples/own_env.py                                  # examples/swimmer.yaml: a few CPU-minutes
    python examples/own_env.py --set epochs=2 --out /tmp/swim   # a quick try

The same run from the command line: ``metra-pretrain train --config examples/swimmer.yaml --run-dir runs/swimmer``,
then ``metra-pretrain export runs/swimmer skills/swimmer``. For an environment of your own package, set
``env_id: your_package.envs:YourEnv-v0`` (Gymnasium imports ``your_package.envs``, which registers the id); its
actions must be continuous (Box). Coverage metrics need the agent's position: ``info["coordinates"]``, or the
config's ``coordinates`` (observation indices or info keys); without them training runs and the coverage columns
say why they are empty.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import metra_gym
import pretrain

CONFIG = Path(__file__).with_name("swimmer.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="own_env_out", help="folder for the run, the skills and the figure")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
    parser.add_argument("--skills", type=int, default=8, help="skill directions in the figure")
    args = parser.parse_args()
    out = Path(args.out)

    # 1. Pretrain (what `metra-pretrain train --config examples/swimmer.yaml` runs) and export the skills.
    config = pretrain.load_config(str(CONFIG), args.set)
    result = pretrain.train(config, out / "run", verbose=0)
    last = result.history[-1]
    print(f"trained {last['epoch']} epochs ({last['env_steps']:,} env steps, {last['wall_clock_s']:.0f} s): "
          f"policy coverage {last['policy_coverage']} bins of 1 m")
    skills = pretrain.export_run(out / "run", out / "skills", force=True)

    # 2. The skills drive Swimmer-v5 through metra_gym.SkillEnv: one action = one skill for K low-level steps.
    env = metra_gym.SkillEnv(gym.make(config.env_id, **config.env_kwargs), checkpoint=skills, skill_steps=25)
    fig, ax = plt.subplots(figsize=(5, 5))
    for i, angle in enumerate(np.linspace(0, 2 * np.pi, args.skills, endpoint=False)):
        z = np.array([np.cos(angle), np.sin(angle)], dtype=np.float32)
        _, info = env.reset(seed=i)
        path = [(info["x_position"], info["y_position"])]
        for _ in range(config.episode_steps // env.skill_steps):
            _, _, terminated, truncated, info = env.step(z)
            path.append((info["x_position"], info["y_position"]))
            if terminated or truncated:
                break
        path = np.array(path)
        ax.plot(path[:, 0], path[:, 1], color=plt.get_cmap("hsv")(angle / (2 * np.pi)), lw=1.5)
        print(f"skill angle {np.degrees(angle):5.1f} deg: x-y after {config.episode_steps} steps "
              f"({path[-1, 0]:+.2f}, {path[-1, 1]:+.2f}) m")
    env.close()
    ax.set(xlabel="x (m)", ylabel="y (m)", title=f"METRA skills on {config.env_id}, {config.episode_steps} steps")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "skills.png", dpi=110)
    print(f"skills in {skills}; figure {out / 'skills.png'}")


if __name__ == "__main__":
    main()
