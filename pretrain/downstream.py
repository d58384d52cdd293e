"""High-level controllers over frozen skills, and the flat baseline, with the paper's hyperparameters.

Hierarchical: SAC over continuous skills (Ant), PPO over discrete skills (HalfCheetah); each high-level step
runs a skill for K (``SKILL_STEPS``) low-level steps, ``SKILLS_PER_EPISODE`` high-level steps per episode. Flat: SAC on the low-level task env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import SKILLS_PER_EPISODE


@dataclass(frozen=True)
class Task:
    """A downstream task: its low-level id and its skill-level id."""

    low_level_id: str
    skill_id: str


TASKS: dict[str, Task] = {
    "ant_multigoals": Task("metra/AntMultiGoals-v0", "metra/AntMultiGoalsSkills-v0"),
    "cheetah_goal": Task("metra/HalfCheetahGoal-v0", "metra/HalfCheetahGoalSkills-v0"),
    "cheetah_hurdle": Task("metra/HalfCheetahHurdle-v0", "metra/HalfCheetahHurdleSkills-v0"),
}


def task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name]


def sac(env: Any, seed: int, width: int = 256, learning_starts: int = 10_000, device: str = "cpu",
        **kwargs: Any) -> SAC:
    """SAC with METRA's pretraining hyperparameters (lr 1e-4, batch 256, tau 0.005, gamma 0.99, alpha learned,
    target entropy -|A|/2); width 256 instead of 1024 for CPUs."""
    action_dim = env.action_space.shape[0]
    return SAC("MlpPolicy", env, learning_rate=1e-4, batch_size=256, tau=0.005, gamma=0.99, buffer_size=1_000_000,
               learning_starts=learning_starts, ent_coef="auto", target_entropy=-action_dim / 2,
               policy_kwargs={"net_arch": [width, width]}, seed=seed, device=device, **kwargs)


def ppo(env: Any, seed: int, width: int = 256, **kwargs: Any) -> PPO:
    """PPO as in the paper for discrete skills: 64 episodes (of 8 skills) per update, 10 epochs, minibatch 256,
    entropy 0.01, GAE lambda 0.95, clip 0.2."""
    n_envs = env.num_envs
    return PPO("MlpPolicy", env, n_steps=64 * SKILLS_PER_EPISODE // n_envs, batch_size=256, n_epochs=10, ent_coef=0.01,
               gae_lambda=0.95, clip_range=0.2, gamma=0.99, policy_kwargs={"net_arch": [width, width]}, seed=seed,
               device="cpu", **kwargs)


def hierarchical_agent(name: str, seed: int = 0, checkpoint: str | None = None, n_envs: int = 1,
                       learning_starts: int = 1_000) -> BaseAlgorithm:
    """The high-level controller of a task over the bundled (or given) skills: SAC or PPO by skill type."""
    env_kwargs = {} if checkpoint is None else {"checkpoint": checkpoint}
    env = make_vec_env(task(name).skill_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)
    if isinstance(env.action_space, gym.spaces.Discrete):
        return ppo(env, seed)
    # 8 transitions per episode: waiting for the pretraining's 10,000 would spend most of a short budget.
    return sac(env, seed, learning_starts=learning_starts)


def flat_agent(name: str, seed: int = 0, learning_starts: int = 10_000, device: str = "cpu") -> SAC:
    """The flat baseline: SAC on the low-level task environment (``device="cuda"`` where a GPU is at hand)."""
    return sac(make_vec_env(task(name).low_level_id, n_envs=1, seed=seed), seed, learning_starts=learning_starts,
               device=device)
