"""The skill-level environment: its action is a skill z, and each step runs a frozen skill policy for K steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from metra_gym.skill_checkpoint.format import CheckpointError


class SkillEnv(gym.Env):
    """Hierarchical view of an environment: one step = run skill ``z`` deterministically for ``skill_steps``
    low-level steps and return the plain sum of their rewards.

    The action space is ``Box(-1, 1, (D,))`` for continuous skills (projected to unit length) or
    ``Discrete(D)`` for discrete ones. Observations are the inner environment's. A step stops early when the
    inner environment terminates or truncates; ``info`` is the last inner ``info`` plus ``skill_steps`` (the
    number of low-level steps run) and ``skill``.

    Example:
        >>> import gymnasium as gym, metra_gym
        >>> env = gym.make("metra/AntSkills-v0")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        >>> info["skill_steps"]
        25

    :param env: the low-level environment, or its id.
    :param checkpoint: a bundled checkpoint name, a folder, a Hub repo ("org/name", "hf://org/name@rev"), or a
        loaded :class:`metra_gym.SkillPolicy`.
    :param skill_steps: K, low-level steps per skill.
    :param revision: Hub revision of ``checkpoint``.
    :param env_kwargs: keyword arguments for ``gym.make`` when ``env`` is an id.
    :param policy_obs_dim: the skill policy sees the first this many entries of the observation (task
        information after them is stripped); defaults to the checkpoint's observation size.
    :param render_mode: passed to the inner environment.
    """

    # What gym.make checks before building; the instance copies the inner environment's metadata.
    metadata = {"render_modes": ["human", "rgb_array", "depth_array"]}

    def __init__(self, env: gym.Env | str, checkpoint: Any = "ant", skill_steps: int = 25,
                 revision: str | None = None, env_kwargs: dict[str, Any] | None = None,
                 policy_obs_dim: int | None = None, render_mode: str | None = None) -> None:
        from metra_gym.skill_policy import SkillPolicy

        if not isinstance(skill_steps, (int, np.integer)) or skill_steps < 1:
            raise ValueError(f"skill_steps must be an integer >= 1, got {skill_steps!r}")
        if isinstance(env, str):
            # The skill-level TimeLimit bounds the episode; the inner one would cut a skill short.
            env = gym.make(env, max_episode_steps=-1, render_mode=render_mode, **(env_kwargs or {}))
        self.env = env
        self.policy = checkpoint if isinstance(checkpoint, SkillPolicy) else SkillPolicy.from_pretrained(
            checkpoint if isinstance(checkpoint, (str, Path)) else str(checkpoint), revision=revision)
        self.skill_steps = int(skill_steps)
        self.render_mode = env.render_mode
        self.metadata = dict(env.metadata)
        self.observation_space = env.observation_space
        self.policy_obs_dim = self.policy.obs_dim if policy_obs_dim is None else int(policy_obs_dim)
        self._check_compatible(strip_task_info=policy_obs_dim is not None)
        d = self.policy.skill_dim
        self.action_space = spaces.Discrete(d) if self.policy.discrete else spaces.Box(-1.0, 1.0, (d,), np.float32)
        self._obs: np.ndarray | None = None

    def _check_compatible(self, strip_task_info: bool) -> None:
        policy, space = self.policy, self.env.observation_space
        trained_on = f"checkpoint {policy.source!r} was trained on {policy.env_id}"
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise CheckpointError(f"{trained_on} with flat observations; this environment's are {space}")
        # With task information appended (policy_obs_dim given) the observation may be longer, never otherwise.
        size_ok = space.shape[0] >= policy.obs_dim if strip_task_info else space.shape[0] == policy.obs_dim
        if self.policy_obs_dim != policy.obs_dim or not size_ok:
            raise CheckpointError(f"{trained_on} with {policy.obs_dim}-d observations, but this environment's are "
                                  f"{space.shape[0]}-d; use a checkpoint for this environment")
        if self.env.action_space.shape != (policy.action_dim,):
            raise CheckpointError(f"{trained_on} with {policy.action_dim}-d actions, but this environment's are "
                                  f"{self.env.action_space.shape}; use a checkpoint for this environment")

    def skill_of(self, action: Any) -> np.ndarray:
        """The skill z for a high-level action (unit-length projection, or one-hot), with clear errors."""
        if self.policy.discrete:
            if not self.action_space.contains(np.int64(action) if np.isscalar(action) else action):
                raise ValueError(f"a discrete skill action must be an integer in [0, {self.action_space.n}), got {action!r}")
            return np.eye(self.policy.skill_dim, dtype=np.float32)[int(action)]
        z = np.asarray(action, dtype=np.float32)
        if z.shape != self.action_space.shape:
            raise ValueError(f"a skill action must have shape {self.action_space.shape}, got {z.shape}")
        if not np.all(np.isfinite(z)):
            raise ValueError(f"a skill action must be finite, got {z.tolist()}")
        norm = float(np.linalg.norm(z))
        if norm == 0.0:
            raise ValueError("a zero skill action has no direction; continuous skills are projected to unit length")
        return z / norm

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._obs, info = self.env.reset(seed=seed, options=options)
        return self._obs, info

    def step(self, action: Any):
        if self._obs is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        z = self.skill_of(action)
        total, terminated, truncated, info, steps = 0.0, False, False, {}, 0
        while steps < self.skill_steps and not (terminated or truncated):
            low_action = self.policy.act(self._obs[: self.policy_obs_dim], z, deterministic=True)
            self._obs, reward, terminated, truncated, info = self.env.step(low_action)
            total += float(reward)
            steps += 1
        return self._obs, total, bool(terminated), bool(truncated), {**info, "skill_steps": steps, "skill": z}

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()
