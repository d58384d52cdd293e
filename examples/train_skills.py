"""Train skills the Stable-Baselines3 way: ``METRA("MlpPolicy", env).learn(...)``, save, load, export, use.

    python examples/train_skills.py                       # the point mass, about a CPU-minute
    python examples/train_skills.py --algo lsd --steps 20000

``env`` may be any Gymnasium environment or id with continuous actions; an id is made as ``metra-pretrain train``
makes it (``n_envs`` copies, ``episode_steps``-step episodes, the environment's normaliser), and the skill
conditioning (one skill z per episode, appended to the observation) is added. Hyperparameters not given take the
defaults of the training configuration (``help(METRA)`` lists them), which the CLI and the sweep build the same
classes with: ``METRA.config_kwargs(pretrain.load_config("point_mass"))`` gives all of a bundled config's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import CheckpointCallback

import metra_gym
import pretrain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", default="metra", choices=pretrain.ALGORITHMS)
    parser.add_argument("--steps", type=int, default=24_000, help="environment steps")
    parser.add_argument("--out", default="train_skills_out", help="folder for the model and the skills")
    args = parser.parse_args()
    out = Path(args.out)

    # The bundled point-mass config's hyperparameters (seed and device included), on a plain Gymnasium id.
    algorithm = pretrain.algorithm_class(args.algo)  # METRA, LSD, DIAYN, DADS or CIC (on SAC)
    kwargs = algorithm.config_kwargs(pretrain.load_config("point_mass", [f"algo={args.algo}"]))
    model = algorithm("MlpPolicy", "metra/PointMass-v0", **kwargs)
    model.learn(args.steps, callback=CheckpointCallback(args.steps // 2, str(out / "checkpoints")))
    model.save(out / "model.zip")

    # Load it back on a plain environment (conditioned again for it) and export the skill policy.
    model = algorithm.load(out / "model.zip", env="metra/PointMass-v0")
    skills = model.export_skills(out / "skills", force=True)

    # The exported skills, loaded by the runtime package alone: each skill is a direction of travel.
    env = metra_gym.SkillEnv("metra/PointMass-v0", checkpoint=skills, skill_steps=10)
    for angle in np.linspace(0, 2 * np.pi, 4, endpoint=False):
        z = np.array([np.cos(angle), np.sin(angle)], dtype=np.float32)
        _, info = env.reset(seed=0)
        start = info["coordinates"]
        for _ in range(5):
            _, _, terminated, truncated, info = env.step(z)
            if terminated or truncated:
                break
        print(f"skill angle {np.degrees(angle):5.1f} deg: moved {np.round(info['coordinates'] - start, 2)}")
    print(f"model {out / 'model.zip'}, skills {skills}")


if __name__ == "__main__":
    main()
