"""Gymnasium ids of metra_gym, registered with string entry points so that registering imports nothing heavy."""

from __future__ import annotations

import gymnasium as gym

# The constants of the paper's locomotion setting, said once; consumers import them or read them from the env.
EPISODE_STEPS = 200  # low-level steps of a pretraining (and downstream) episode
SKILL_STEPS = 25  # K: low-level steps one skill runs for at the skill level
SKILLS_PER_EPISODE = EPISODE_STEPS // SKILL_STEPS  # 8 high-level steps

# DeepMind Control (pixel METRA; metra_gym.envs.dmc, needs the [dmc] extra): one policy step = DMC_ACTION_REPEAT
# control steps, so an episode of EPISODE_STEPS = 200 policy steps is 400 control steps, and a skill of K = 50 control
# steps is DMC_SKILL_STEPS = 25 policy steps (skill_steps counts policy steps, as everywhere in metra_gym).
DMC_ACTION_REPEAT = 2
DMC_SKILL_STEPS = 50 // DMC_ACTION_REPEAT
# Zero-shot goal reaching (paper): goals uniform in [-r, r]^d around the origin (d = 2, x only for HalfCheetah), r per
# pretraining id (the point mass's is ours).
# Kitchen (metra_gym.envs.kitchen, needs the [kitchen] extra): the paper's 50-step episodes. Environments with tasks
# put a dict {task name: achieved now} under info[TASK_SUCCESS_KEY]; the evaluation counts the tasks any rollout achieves.
KITCHEN_EPISODE_STEPS = 50
TASK_SUCCESS_KEY = "task_success"
ZERO_SHOT_GOAL_RANGES: dict[str, float] = {"metra/Ant-v0": 50.0, "metra/HalfCheetah-v0": 100.0,
                                           "metra/PointMass-v0": 20.0, "metra/Quadruped-v0": 15.0,
                                           "metra/Humanoid-v0": 10.0}

_PRETRAINING_ENVS: dict[str, tuple[str, int]] = {
    "metra/Ant-v0": ("metra_gym.envs.locomotion:MetraAntEnv", EPISODE_STEPS),
    "metra/HalfCheetah-v0": ("metra_gym.envs.locomotion:MetraHalfCheetahEnv", EPISODE_STEPS),
    "metra/PointMass-v0": ("metra_gym.envs.point_mass:make_point_mass", 50),  # obs_type="pixels": 48x48 views
    # Downstream tasks (paper appendix): low-level envs of 200 steps, task information after the pretraining obs.
    "metra/AntMultiGoals-v0": ("metra_gym.envs.tasks:AntMultiGoalsEnv", EPISODE_STEPS),
    "metra/HalfCheetahGoal-v0": ("metra_gym.envs.tasks:HalfCheetahGoalEnv", EPISODE_STEPS),
    "metra/HalfCheetahHurdle-v0": ("metra_gym.envs.tasks:HalfCheetahHurdleEnv", EPISODE_STEPS),
    "metra/HalfCheetahHurdle-v1": ("metra_gym.envs.tasks:ReferenceHalfCheetahHurdleEnv", EPISODE_STEPS),  # LSD's bars
    # DeepMind Control through shimmy: obs_type="pixels" (default; (64, 64, 9) uint8, 3 frames) or "state" (float32).
    "metra/Quadruped-v0": ("metra_gym.envs.dmc:make_quadruped", EPISODE_STEPS),
    "metra/Humanoid-v0": ("metra_gym.envs.dmc:make_humanoid", EPISODE_STEPS),
    "metra/QuadrupedGoal-v0": ("metra_gym.envs.dmc:QuadrupedGoalEnv", EPISODE_STEPS),
    "metra/HumanoidGoal-v0": ("metra_gym.envs.dmc:HumanoidGoalEnv", EPISODE_STEPS),
    # gymnasium-robotics' FrankaKitchen-v1: obs_type="pixels" (default; (64, 64, 9) uint8, 3 frames) or "state".
    "metra/Kitchen-v0": ("metra_gym.envs.kitchen:make_kitchen", KITCHEN_EPISODE_STEPS),
}


# Skill-level ids: the paper's downstream horizon is 8 skills of K = 25 low-level steps (200 steps). On task envs
# the frozen policy sees only the pretraining observation (the env's ``pretraining_obs_dim``); the skill env's
# observation is all of it (pretrain.downstream's controllers keep the task information only on the goal tasks).
_SKILL_ENVS: dict[str, dict[str, object]] = {
    "metra/AntSkills-v0": {"env": "metra/Ant-v0", "checkpoint": "ant"},
    "metra/HalfCheetahSkills-v0": {"env": "metra/HalfCheetah-v0", "checkpoint": "half_cheetah"},
    "metra/AntMultiGoalsSkills-v0": {"env": "metra/AntMultiGoals-v0", "checkpoint": "ant"},
    "metra/HalfCheetahGoalSkills-v0": {"env": "metra/HalfCheetahGoal-v0", "checkpoint": "half_cheetah"},
    "metra/HalfCheetahHurdleSkills-v0": {"env": "metra/HalfCheetahHurdle-v0", "checkpoint": "half_cheetah"},
    "metra/HalfCheetahHurdleSkills-v1": {"env": "metra/HalfCheetahHurdle-v1", "checkpoint": "half_cheetah"},
    # DeepMind Control: K = 50 control steps = 25 policy steps per skill, 8 skills = 400 control steps, on the state
    # observation (the bundled skills, quadruped_state and humanoid_state, are state-based).
    "metra/QuadrupedSkills-v0": {"env": "metra/Quadruped-v0", "checkpoint": "quadruped_state",
                                 "skill_steps": DMC_SKILL_STEPS, "env_kwargs": {"obs_type": "state"}},
    "metra/HumanoidSkills-v0": {"env": "metra/Humanoid-v0", "checkpoint": "humanoid_state",
                                "skill_steps": DMC_SKILL_STEPS, "env_kwargs": {"obs_type": "state"}},
    "metra/QuadrupedGoalSkills-v0": {"env": "metra/QuadrupedGoal-v0", "checkpoint": "quadruped_state",
                                     "skill_steps": DMC_SKILL_STEPS, "env_kwargs": {"obs_type": "state"}},
    "metra/HumanoidGoalSkills-v0": {"env": "metra/HumanoidGoal-v0", "checkpoint": "humanoid_state",
                                    "skill_steps": DMC_SKILL_STEPS, "env_kwargs": {"obs_type": "state"}},
    # Kitchen: 24 discrete skills of K = 25 steps, on the state observation under LEXA's control (kitchen_state).
    "metra/KitchenSkills-v0": {"env": "metra/Kitchen-v0", "checkpoint": "kitchen_state",
                               "env_kwargs": {"obs_type": "state"}},
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
