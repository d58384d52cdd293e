"""Run pretrained METRA skills through the skill-level environment and plot where they take the Ant.

    python examples/skills_quickstart.py                       # bundled default skills
    python examples/skills_quickstart.py --checkpoint hf://org/name --out ant_skills.png
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import metra_gym  # noqa: F401  (registers the metra/ ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="ant", help="bundled name, folder, or Hub repo")
    parser.add_argument("--skills", type=int, default=8, help="number of skill directions to try")
    parser.add_argument("--out", default="skills_quickstart.png", help="where to save the x-y plot")
    args = parser.parse_args()

    # 40 skills of 5 low-level steps = the 200 steps of a pretraining episode, with a point every 5 steps.
    env = gym.make("metra/AntSkills-v0", checkpoint=args.checkpoint, skill_steps=5, max_episode_steps=40)
    fig, ax = plt.subplots(figsize=(5, 5))
    for i, angle in enumerate(np.linspace(0, 2 * np.pi, args.skills, endpoint=False)):
        z = np.array([np.cos(angle), np.sin(angle)], dtype=np.float32)
        obs, info = env.reset(seed=i)
        path, total, done = [info["coordinates"]], 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(z)
            path.append(info["coordinates"])
            total += reward
            done = terminated or truncated
        path = np.array(path)
        ax.plot(path[:, 0], path[:, 1], color=plt.get_cmap("hsv")(angle / (2 * np.pi)), lw=1.5)
        print(f"skill angle {np.degrees(angle):5.1f} deg: final x-y ({path[-1, 0]:6.2f}, {path[-1, 1]:6.2f}), "
              f"Ant-v5 task return {total:8.1f}")
    ax.set(xlabel="x (m)", ylabel="y (m)", title=f"METRA skills ({args.checkpoint}), 200 steps each")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
