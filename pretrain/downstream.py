"""High-level controllers over frozen skills, and the flat baseline.

Hierarchical: SAC over continuous skills (Ant), PPO over discrete skills (HalfCheetah, the paper's settings); each
high-level step runs a skill for K (``SKILL_STEPS``) low-level steps, ``SKILLS_PER_EPISODE`` high-level steps per
episode; on the goal tasks the controller sees the task information only (:class:`TaskObservation`). Flat: SAC on
the low-level task env, with METRA's pretraining hyperparameters.

A high-level step costs K = 25 low-level steps, so a budget of 30,000 low-level steps is only 1,200 controller
transitions (150 episodes): the high-level SAC is set for that (:func:`high_level_sac`), not for pretraining.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import SKILLS_PER_EPISODE


@dataclass(frozen=True)
class Task:
    """A downstream task: its low-level id, its skill-level id, and what its controller sees (``"task"``: the task
    information only, :class:`TaskObservation`; ``"all"``: the whole observation)."""

    low_level_id: str
    skill_id: str
    controller_obs: Literal["task", "all"] = "task"


TASKS: dict[str, Task] = {
    "ant_multigoals": Task("metra/AntMultiGoals-v0", "metra/AntMultiGoalsSkills-v0"),
    "cheetah_goal": Task("metra/HalfCheetahGoal-v0", "metra/HalfCheetahGoalSkills-v0"),
    # Hurdles are not a translation-invariant goal, and which skill clears the next one may depend on the gait:
    # the whole observation, as before (on the task information alone PPO did no better: 1.1 hurdles after
    # 51,200 steps, 3 seeds, against 1.2 on everything).
    "cheetah_hurdle": Task("metra/HalfCheetahHurdle-v0", "metra/HalfCheetahHurdleSkills-v0", controller_obs="all"),
    # The paper's QuadrupedGoal on state observations (its skills are the state Quadruped's, `quadruped_state`).
    "quadruped_goal": Task("metra/QuadrupedGoal-v0", "metra/QuadrupedGoalSkills-v0"),
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


def high_level_sac(env: Any, seed: int, learning_starts: int = 100, gradient_steps: int = 4,
                   learning_rate: float = 3e-4, initial_alpha: float = 0.1, width: int = 256, **kwargs: Any) -> SAC:
    """SAC for a controller over continuous skills, set for the few transitions a skill level gives.

    With the pretraining settings (learning after 1,000 transitions, one update per transition at lr 1e-4, alpha
    from 1.0) a controller over 25-step skills makes few updates, its entropy weight stays near 1 against a sparse
    reward, and its return stays at the untrained one. Here it learns after 100 transitions (12 episodes), makes 4
    updates per transition at lr 3e-4, and alpha starts at 0.1 (then learned, target entropy -|A|/2 as in
    pretraining); what either setting reached is in ``benchmarks/README.md`` ("Downstream controllers"). Batch 256,
    tau 0.005 and gamma 0.99 (8 steps an episode) are the pretraining ones.
    """
    return SAC("MlpPolicy", env, learning_rate=learning_rate, batch_size=256, tau=0.005, gamma=0.99,
               buffer_size=1_000_000, learning_starts=learning_starts, gradient_steps=gradient_steps,
               ent_coef=f"auto_{initial_alpha}", target_entropy=-env.action_space.shape[0] / 2,
               policy_kwargs={"net_arch": [width, width]}, seed=seed, device="cpu", **kwargs)


def ppo(env: Any, seed: int, width: int = 256, **kwargs: Any) -> PPO:
    """PPO as in the paper for discrete skills: 64 episodes (of 8 skills) per update, 10 epochs, minibatch 256,
    entropy 0.01, GAE lambda 0.95, clip 0.2."""
    n_envs = env.num_envs
    return PPO("MlpPolicy", env, n_steps=64 * SKILLS_PER_EPISODE // n_envs, batch_size=256, n_epochs=10, ent_coef=0.01,
               gae_lambda=0.95, clip_range=0.2, gamma=0.99, policy_kwargs={"net_arch": [width, width]}, seed=seed,
               device="cpu", **kwargs)


class TaskObservation(gym.ObservationWrapper):
    """The controller's view of a goal task's skill env: the task information only (the entries after the inner
    env's ``pretraining_obs_dim``: Ant's goal relative to it, HalfCheetah's goal distance).

    Why: the rest is the pretraining observation, which the frozen skill policy already acts on. It holds the
    absolute position, which drifts without bound while the goals are relative to the agent, so a critic on it
    must generalise to positions it has not seen. On AntMultiGoals at 30,000 low-level steps (seed 0, 50
    episodes, interim skills e68860310bee) the same SAC returned 4.5 on the task information and 3.4 on the whole
    observation (untrained 2.3 and 2.7); on HalfCheetahGoal PPO did as well on either (3.8 and 4.0).
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        inner = env.unwrapped.env.unwrapped  # SkillEnv -> the task env
        start = getattr(inner, "pretraining_obs_dim", None)
        if start is None:
            raise ValueError(f"{inner} has no pretraining_obs_dim: not a downstream task env with task information")
        self.task_start = int(start)
        size = env.observation_space.shape[0] - self.task_start
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.task_start:]


def controller_env(name: str, checkpoint: str | None = None) -> gym.Env:
    """The env a task's high-level controller acts in (and is evaluated in): its skill env, seen through
    :class:`TaskObservation` where the task's ``controller_obs`` is ``"task"``."""
    env_kwargs = {} if checkpoint is None else {"checkpoint": checkpoint}
    env = gym.make(task(name).skill_id, **env_kwargs)
    return TaskObservation(env) if task(name).controller_obs == "task" else env


def hierarchical_agent(name: str, seed: int = 0, checkpoint: str | None = None, n_envs: int = 1,
                       **kwargs: Any) -> BaseAlgorithm:
    """The high-level controller of a task over the bundled (or given) skills: :func:`high_level_sac` for
    continuous skills, :func:`ppo` for discrete ones; ``kwargs`` go to that function (``learning_starts=``...)."""
    env = make_vec_env(controller_env, n_envs=n_envs, seed=seed, env_kwargs={"name": name, "checkpoint": checkpoint})
    if isinstance(env.action_space, gym.spaces.Discrete):
        return ppo(env, seed, **kwargs)
    return high_level_sac(env, seed, **kwargs)


def flat_agent(name: str, seed: int = 0, learning_starts: int = 10_000, device: str = "cpu") -> SAC:
    """The flat baseline: SAC on the low-level task environment (``device="cuda"`` where a GPU is at hand)."""
    return sac(make_vec_env(task(name).low_level_id, n_envs=1, seed=seed), seed, learning_starts=learning_starts,
               device=device)
