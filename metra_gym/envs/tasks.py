"""The paper's downstream tasks (appendix): Ant multi-goals, HalfCheetah goal, HalfCheetah hurdles.

Each observation is the pretraining observation followed by the task information, so a frozen skill policy
can see exactly what it was trained on (each env's ``pretraining_obs_dim``; ``SkillEnv`` strips the rest). Rewards are
the sparse task rewards of the paper; ``info["coordinates"]`` holds the agent's position as in pretraining.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.envs.locomotion import MetraAntEnv, MetraHalfCheetahEnv


def _with_task_space(env: Any, task_dim: int) -> None:
    """Append ``task_dim`` entries to the observation space; ``pretraining_obs_dim`` says where the task part starts."""
    env.pretraining_obs_dim = env.observation_space.shape[0]
    size = env.pretraining_obs_dim + task_dim
    env.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)


class AntMultiGoalsEnv(MetraAntEnv):
    """Ant reaches 4 goals in turn, each uniform within +-``goal_range`` of its current x-y.

    Reward ``goal_reward`` when within ``goal_radius`` of the goal; the next goal comes when one is reached or
    after ``steps_per_goal`` steps, and the episode terminates after the last goal. Task observation: the goal
    relative to the agent (2-d). Registered as ``metra/AntMultiGoals-v0`` (200 steps).
    """

    def __init__(self, n_goals: int = 4, goal_range: float = 7.5, goal_radius: float = 3.0,
                 goal_reward: float = 2.5, steps_per_goal: int = 50, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_goals, self.goal_range, self.goal_radius = n_goals, goal_range, goal_radius
        self.goal_reward, self.steps_per_goal = goal_reward, steps_per_goal
        self.goal = np.zeros(2)
        self.goals_done = 0
        self._goal_steps = 0
        _with_task_space(self, 2)
        EzPickle.__init__(self, n_goals=n_goals, goal_range=goal_range, goal_radius=goal_radius,
                          goal_reward=goal_reward, steps_per_goal=steps_per_goal, **kwargs)

    def _new_goal(self) -> None:
        self.goal = self.coordinates() + self.np_random.uniform(-self.goal_range, self.goal_range, 2)
        self._goal_steps = 0

    def reset_model(self) -> np.ndarray:
        super().reset_model()
        self.goals_done = 0
        self._new_goal()
        return self._get_obs()

    def _get_obs(self) -> np.ndarray:
        task = (self.goal - self.coordinates()).astype(np.float32)
        return np.concatenate([super()._get_obs(), task])

    def step(self, action: np.ndarray):
        obs, _, _, truncated, info = super().step(action)
        self._goal_steps += 1
        reached = bool(np.linalg.norm(self.coordinates() - self.goal) <= self.goal_radius)
        reward = self.goal_reward if reached else 0.0
        if reached or self._goal_steps >= self.steps_per_goal:
            self.goals_done += 1
            if self.goals_done < self.n_goals:
                self._new_goal()
        terminated = self.goals_done >= self.n_goals
        info.update(goal=self.goal.copy(), goal_reached=reached, goals_done=self.goals_done)
        return self._get_obs(), reward, terminated, truncated, info


class HalfCheetahGoalEnv(MetraHalfCheetahEnv):
    """HalfCheetah reaches a goal x uniform in ``[-goal_range, goal_range]``: reward ``goal_reward`` and the end
    of the episode when within ``goal_radius``. Task observation: goal x relative to the agent (1-d).
    Registered as ``metra/HalfCheetahGoal-v0`` (200 steps)."""

    def __init__(self, goal_range: float = 100.0, goal_radius: float = 3.0, goal_reward: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.goal_range, self.goal_radius, self.goal_reward = goal_range, goal_radius, goal_reward
        self.goal = 0.0
        _with_task_space(self, 1)
        EzPickle.__init__(self, goal_range=goal_range, goal_radius=goal_radius, goal_reward=goal_reward, **kwargs)

    def reset_model(self) -> np.ndarray:
        super().reset_model()
        self.goal = float(self.np_random.uniform(-self.goal_range, self.goal_range))
        return self._get_obs()

    def _get_obs(self) -> np.ndarray:
        return np.concatenate([super()._get_obs(), np.array([self.goal - self.data.qpos[0]], dtype=np.float32)])

    def step(self, action: np.ndarray):
        obs, _, _, truncated, info = super().step(action)
        reached = bool(abs(self.data.qpos[0] - self.goal) <= self.goal_radius)
        info.update(goal=self.goal, goal_reached=reached)
        return obs, self.goal_reward if reached else 0.0, reached, truncated, info


def hurdle_xml(positions: np.ndarray, bottom: float, top: float) -> str:
    """Gymnasium's half_cheetah.xml with one box per hurdle, 0.1 m thick and from ``bottom`` to ``top`` m above the
    floor (real collision bodies), written once to a cache file."""
    import gymnasium.envs.mujoco as gym_mujoco

    source = Path(gym_mujoco.__file__).parent / "assets" / "half_cheetah.xml"
    middle, half = (bottom + top) / 2, (top - bottom) / 2
    geoms = "".join(
        f'<geom name="hurdle{i}" type="box" pos="{x:.3f} 0 {middle:.3f}" size="0.05 1 {half:.3f}" '
        f'rgba="0.9 0.3 0.2 1" contype="1" conaffinity="1" condim="3"/>' for i, x in enumerate(positions))
    text = source.read_text()
    anchor = "<worldbody>"
    if anchor not in text:
        raise RuntimeError(f"unexpected {source}: no {anchor}")
    text = text.replace(anchor, anchor + geoms, 1)
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"metra_gym_half_cheetah_hurdle_{digest}.xml"
    if not path.is_file():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)  # atomic: parallel environments never read a half-written file
    return str(path)


class HalfCheetahHurdleEnv(MetraHalfCheetahEnv):
    """HalfCheetah with hurdles ahead (boxes ``hurdle_height`` m high every ``spacing`` m): reward 1 each time it
    gets past a hurdle, counted once per hurdle. Task observation: the next hurdle's x and its distance ahead
    (2-d). Registered as ``metra/HalfCheetahHurdle-v0`` (200 steps): metra-gym's own layout;
    :class:`ReferenceHalfCheetahHurdleEnv` (``-v1``) is the reference code's."""

    keeps_passed = True  # a hurdle counts once, whatever comes after

    def __init__(self, n_hurdles: int = 20, spacing: float = 5.0, hurdle_height: float = 0.25,
                 **kwargs: Any) -> None:
        self._build(spacing * np.arange(1, n_hurdles + 1, dtype=np.float64), spacing, (0.0, hurdle_height), kwargs)
        # Not xml_file: a copy writes its own (the temporary file may be gone by then).
        EzPickle.__init__(self, n_hurdles=n_hurdles, spacing=spacing, hurdle_height=hurdle_height, **kwargs)

    def _build(self, hurdles: np.ndarray, spacing: float, bar: tuple[float, float], kwargs: dict[str, Any]) -> None:
        """Every hurdle is a body; those ahead of the start (x > 0) are the ones that pay."""
        self.hurdles = np.sort(np.asarray(hurdles, dtype=np.float64))
        self.counted = self.hurdles[self.hurdles > 0]
        self.spacing = spacing
        self.passed = 0
        MetraHalfCheetahEnv.__init__(self, xml_file=hurdle_xml(self.hurdles, *bar), **kwargs)
        _with_task_space(self, 2)

    def passing_x(self) -> float:
        """The x that has to get past a hurdle for it to count: the root's."""
        return float(self.data.qpos[0])

    def passed_now(self) -> int:
        """The paying hurdles passed so far (strictly behind :meth:`passing_x`; here once passed, always passed)."""
        behind = int(np.searchsorted(self.counted, self.passing_x(), side="left"))
        return max(self.passed, behind) if self.keeps_passed else behind

    def next_hurdle_x(self) -> float:
        """The x of the next hurdle to pass (after the last: one spacing past it, which keeps the obs finite)."""
        if self.passed < len(self.counted):
            return float(self.counted[self.passed])
        return float(self.hurdles[-1] + self.spacing)

    def reset_model(self) -> np.ndarray:
        super().reset_model()
        self.passed = 0
        self.passed = self.passed_now()
        return self._get_obs()

    def _get_obs(self) -> np.ndarray:
        x = self.next_hurdle_x()
        return np.concatenate([super()._get_obs(), np.array([x, x - self.passing_x()], dtype=np.float32)])

    def step(self, action: np.ndarray):
        super().step(action)
        before, self.passed = self.passed, self.passed_now()
        obs = self._get_obs()
        info = {"coordinates": self.coordinates(), "hurdles_passed": self.passed}
        return obs, float(self.passed - before), False, False, info


class ReferenceHalfCheetahHurdleEnv(HalfCheetahHurdleEnv):
    """HalfCheetahHurdle as the reference code builds it (LSD's, kept by CSD and by TLDR on METRA's code:
    https://github.com/seohongpark/CSD-locomotion/blob/master/envs/mujoco/assets/half_cheetah_hurdle.xml): bars from
    0.17 to 0.23 m above the floor at x = -15, -13, -9, -5, -1 (behind the start) and every 4 m from 3 to 27 (the 7
    that pay); a hurdle counts when the back foot gets past it, and going back over one takes its point away (the
    reward is the change in the number of paying hurdles behind the back foot). Task observation: the next hurdle's
    x and its distance ahead of the back foot. Registered as ``metra/HalfCheetahHurdle-v1`` (200 steps).

    Where it differs from the reference: after the last hurdle the observation names a virtual one a spacing further
    on (the reference names x = 15 whatever the foot's x).
    """

    HURDLES = (-15.0, -13.0, -9.0, -5.0, -1.0, 3.0, 7.0, 11.0, 15.0, 19.0, 23.0, 27.0)
    BAR = (0.17, 0.23)
    SPACING = 4.0
    keeps_passed = False

    def __init__(self, **kwargs: Any) -> None:
        self._build(np.array(self.HURDLES), self.SPACING, self.BAR, kwargs)
        EzPickle.__init__(self, **kwargs)

    def passing_x(self) -> float:
        """The back foot's x (its body frame, as the reference's ``get_body_com('bfoot')``)."""
        return float(self.data.body("bfoot").xpos[0])

    def next_hurdle_x(self) -> float:
        """The first hurdle, behind the start or ahead of it, not behind the back foot."""
        ahead = self.hurdles[self.hurdles >= self.passing_x()]
        return float(ahead[0]) if len(ahead) else float(self.hurdles[-1] + self.spacing)
