"""Evaluation episodes of the downstream tasks, the same for every controller: episode ``i`` of seed ``s`` starts
from ``reset(seed=evaluation_seeds(s, n)[i])``, so every agent of a seed meets the same starts and first goals, and
agents can be compared episode by episode and seed by seed (paired)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

EVAL_SEED = 10_000  # evaluation episodes are seeded apart from training (which seeds its envs with the run's seed)
MAX_EPISODES = 1_000  # per seed: the seeds of two runs' episodes never meet


def evaluation_seeds(seed: int, episodes: int) -> list[int]:
    """The reset seeds of a run's ``episodes`` evaluation episodes."""
    if not 1 <= episodes <= MAX_EPISODES:
        raise ValueError(f"evaluation episodes must be between 1 and {MAX_EPISODES}, got {episodes}")
    return [EVAL_SEED + MAX_EPISODES * seed + i for i in range(episodes)]


def run_episodes(env: Any, act: Callable[[np.ndarray], Any], seeds: list[int],
                 on_reset: Callable[[int], None] | None = None) -> list[float]:
    """The undiscounted return of one episode per reset seed, acting with ``act(obs) -> action``.

    :param env: the environment (with its time limit).
    :param act: the controller.
    :param seeds: one reset seed per episode.
    :param on_reset: called with each episode's seed after its reset (a controller's own seeding).
    """
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        if on_reset is not None:
            on_reset(seed)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return returns


def agent_returns(agent: Any, env: Any, seeds: list[int]) -> list[float]:
    """The returns of a Stable-Baselines3 agent's deterministic policy on the episodes of ``seeds``."""
    return run_episodes(env, lambda obs: agent.predict(obs, deterministic=True)[0], seeds)
