"""Gymnasium ids of metra_gym, registered with string entry points so that registering imports nothing heavy."""

from __future__ import annotations

import gymnasium as gym

PRETRAINING_EPISODE_STEPS = 200

_PRETRAINING_ENVS: dict[str, tuple[str, int]] = {
    "metra/Ant-v0": ("metra_gym.envs.locomotion:MetraAntEnv", PRETRAINING_EPISODE_STEPS),
    "metra/HalfCheetah-v0": ("metra_gym.envs.locomotion:MetraHalfCheetahEnv", PRETRAINING_EPISODE_STEPS),
    "metra/PointMass-v0": ("metra_gym.envs.point_mass:PointMassEnv", 50),
    # Downstream tasks (paper appendix): low-level envs of 200 steps, task information after the pretraining obs.
    "metra/AntMultiGoals-v0": ("metra_gym.envs.tasks:AntMultiGoalsEnv", PRETRAINING_EPISODE_STEPS),
    "metra/HalfCheetahGoal-v0": ("metra_gym.envs.tasks:HalfCheetahGoalEnv", PRETRAINING_EPISODE_STEPS),
    "metra/HalfCheetahHurdle-v0": ("metra_gym.envs.tasks:HalfCheetahHurdleEnv", PRETRAINING_EPISODE_STEPS),
}


# Skill-level ids: the paper's downstream horizon is 8 skills of K = 25 low-level steps (200 steps).
SKILLS_PER_EPISODE = 8
_SKILL_ENVS: dict[str, dict[str, object]] = {
    "metra/AntSkills-v0": {"env": "metra/Ant-v0", "checkpoint": "ant", "skill_steps": 25},
    "metra/HalfCheetahSkills-v0": {"env": "metra/HalfCheetah-v0", "checkpoint": "half_cheetah", "skill_steps": 25},
    # The frozen policy sees only the pretraining observation (29-d / 18-d); the high level sees everything.
    "metra/AntMultiGoalsSkills-v0": {"env": "metra/AntMultiGoals-v0", "checkpoint": "ant", "skill_steps": 25,
                                     "policy_obs_dim": 29},
    "metra/HalfCheetahGoalSkills-v0": {"env": "metra/HalfCheetahGoal-v0", "checkpoint": "half_cheetah",
                                       "skill_steps": 25, "policy_obs_dim": 18},
    "metra/HalfCheetahHurdleSkills-v0": {"env": "metra/HalfCheetahHurdle-v0", "checkpoint": "half_cheetah",
                                         "skill_steps": 25, "policy_obs_dim": 18},
}


def skill_env_id(env_id: str) -> str | None:
    """The registered skill-level id whose low-level environment is ``env_id`` (e.g. metra/Ant-v0 -> AntSkills)."""
    return next((skill_id for skill_id, kwargs in _SKILL_ENVS.items() if kwargs["env"] == env_id), None)


def register_envs() -> None:
    """Register every metra_gym id; called by ``import metra_gym`` and safe to call again."""
    for env_id, (entry_point, max_episode_steps) in _PRETRAINING_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, max_episode_steps=max_episode_steps)
    for env_id, kwargs in _SKILL_ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="metra_gym.skill_env:SkillEnv", max_episode_steps=SKILLS_PER_EPISODE,
                         kwargs=kwargs)
