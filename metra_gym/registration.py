"""Gymnasium ids of metra_gym, registered with string entry points so that registering imports nothing heavy."""

from __future__ import annotations

import gymnasium as gym

PRETRAINING_EPISODE_STEPS = 200

_PRETRAINING_ENVS: dict[str, tuple[str, int]] = {
    "metra/Ant-v0": ("metra_gym.envs.locomotion:MetraAntEnv", PRETRAINING_EPISODE_STEPS),
    "metra/HalfCheetah-v0": ("metra_gym.envs.locomotion:MetraHalfCheetahEnv", PRETRAINING_EPISODE_STEPS),
    "metra/PointMass-v0": ("metra_gym.envs.point_mass:PointMassEnv", 50),
}


def register_envs() -> None:
    """Register every metra_gym id; called by ``import metra_gym`` and safe to call again."""
    for env_id, (entry_point, max_episode_steps) in _PRETRAINING_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, max_episode_steps=max_episode_steps)
