"""Gymnasium ids of metra_gym, registered with string entry points so that registering imports nothing heavy."""

from __future__ import annotations

import gymnasium as gym

# The constants of the paper's locomotion setting, said once; consumers import them or read them from the env.
EPISODE_STEPS = 200  # low-level steps of a pretraining (and downstream) episode
SKILL_STEPS = 25  # K: low-level steps one skill runs for at the skill level
SKILLS_PER_EPISODE = EPISODE_STEPS // SKILL_STEPS  # 8 high-level steps

_PRETRAINING_ENVS: dict[str, tuple[str, int]] = {
    "metra/Ant-v0": ("metra_gym.envs.locomotion:MetraAntEnv", EPISODE_STEPS),
    "metra/HalfCheetah-v0": ("metra_gym.envs.locomotion:MetraHalfCheetahEnv", EPISODE_STEPS),
    "metra/PointMass-v0": ("metra_gym.envs.point_mass:PointMassEnv", 50),
    # Downstream tasks (paper appendix): low-level envs of 200 steps, task information after the pretraining obs.
    "metra/AntMultiGoals-v0": ("metra_gym.envs.tasks:AntMultiGoalsEnv", EPISODE_STEPS),
    "metra/HalfCheetahGoal-v0": ("metra_gym.envs.tasks:HalfCheetahGoalEnv", EPISODE_STEPS),
    "metra/HalfCheetahHurdle-v0": ("metra_gym.envs.tasks:HalfCheetahHurdleEnv", EPISODE_STEPS),
}


# Skill-level ids: the paper's downstream horizon is 8 skills of K = 25 low-level steps (200 steps). On task envs
# the frozen policy sees only the pretraining observation (the env's ``pretraining_obs_dim``); the high level sees all.
_SKILL_ENVS: dict[str, dict[str, object]] = {
    "metra/AntSkills-v0": {"env": "metra/Ant-v0", "checkpoint": "ant"},
    "metra/HalfCheetahSkills-v0": {"env": "metra/HalfCheetah-v0", "checkpoint": "half_cheetah"},
    "metra/AntMultiGoalsSkills-v0": {"env": "metra/AntMultiGoals-v0", "checkpoint": "ant"},
    "metra/HalfCheetahGoalSkills-v0": {"env": "metra/HalfCheetahGoal-v0", "checkpoint": "half_cheetah"},
    "metra/HalfCheetahHurdleSkills-v0": {"env": "metra/HalfCheetahHurdle-v0", "checkpoint": "half_cheetah"},
}


def register_envs() -> None:
    """Register every metra_gym id; called by ``import metra_gym`` and safe to call again."""
    for env_id, (entry_point, max_episode_steps) in _PRETRAINING_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, max_episode_steps=max_episode_steps)
    for env_id, kwargs in _SKILL_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="metra_gym.skill_env:SkillEnv", max_episode_steps=SKILLS_PER_EPISODE,
                         kwargs=kwargs)


def metra_env_ids() -> frozenset[str]:
    """Every id metra_gym registers: the only env ids a checkpoint may name without the caller's permission."""
    return frozenset(_PRETRAINING_ENVS) | frozenset(_SKILL_ENVS)
