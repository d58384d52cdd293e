"""METRA's metrics: policy state coverage (deterministic skill rollouts), queue and total coverage, plots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np

from metra_gym.registration import TASK_SUCCESS_KEY
from metra_gym.skill_priors import UNIT
from pretrain.algorithms.common.skills import evaluation_skills

# act(obs_batch, skill_batch) -> action_batch, with normalised observations.
ActFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def bins_of(coordinates: np.ndarray) -> np.ndarray:
    """1 x 1 m bins (1 m bins in 1-D) of an array of positions whose last axis holds the coordinates."""
    coordinates = np.asarray(coordinates)
    return np.floor(coordinates.reshape(-1, coordinates.shape[-1])).astype(np.int64)


def coverage(coordinates: np.ndarray) -> int:
    """Number of distinct 1 m bins visited by positions ``(..., n_coordinates)``."""
    return int(len(np.unique(bins_of(coordinates), axis=0)))


class SkillRollouts:
    """Run a batch of skills deterministically, one environment per skill, and record their positions.

    The environments are built once and reused, so repeated evaluations during training stay cheap.

    :param make_env: builds one environment that emits normalised observations and ``info["coordinates"]``.
    :param n_skills: number of skills rolled out at once.
    :param steps: steps per rollout (the episode length).
    """

    def __init__(self, make_env: Callable[[], gym.Env], n_skills: int, steps: int) -> None:
        self.envs = [make_env() for _ in range(n_skills)]
        self.steps = steps
        # Environments with tasks (Kitchen) report {task: achieved} in info[TASK_SUCCESS_KEY]; the last run's flags,
        # (n_skills, steps + 1, n_tasks), start states included, or None when the environment reports no tasks.
        self.task_names: list[str] | None = None
        self.task_flags: np.ndarray | None = None

    def run(self, act: ActFn, skills: np.ndarray, seed: int = 0,
            observations: list[np.ndarray] | None = None) -> np.ndarray:
        """Positions ``(n_skills, steps + 1, n_coordinates)``, start states included. Environment ``i`` is reset
        with seed ``seed + i``. When ``observations`` is a list, each step's observations (start and final ones
        included) are appended to it."""
        if len(skills) != len(self.envs):
            raise ValueError(f"expected {len(self.envs)} skills, got {len(skills)}")
        resets = [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]
        obs = np.stack([o for o, _ in resets])
        if observations is not None:
            observations.append(obs.copy())
        positions = [np.stack([info["coordinates"] for _, info in resets])]
        self.task_names = list(resets[0][1][TASK_SUCCESS_KEY]) if TASK_SUCCESS_KEY in resets[0][1] else None
        flags = [np.stack([self._flags(info) for _, info in resets])]
        alive = np.ones(len(self.envs), dtype=bool)
        for _ in range(self.steps):
            actions = act(obs, skills)
            last, last_flags = positions[-1].copy(), flags[-1].copy()
            for i, env in enumerate(self.envs):
                if alive[i]:
                    obs[i], _, terminated, truncated, info = env.step(actions[i])
                    last[i] = info["coordinates"]
                    last_flags[i] = self._flags(info)
                    alive[i] = not (terminated or truncated)
            positions.append(last)
            flags.append(last_flags)
            if observations is not None:
                observations.append(obs.copy())
        self.task_flags = None if self.task_names is None else np.stack(flags, axis=1)
        return np.stack(positions, axis=1)

    def _flags(self, info: dict) -> np.ndarray:
        """The task flags of one info, in ``task_names`` order (empty when the environment reports no tasks)."""
        if self.task_names is None:
            return np.zeros(0, dtype=bool)
        return np.array([bool(info[TASK_SUCCESS_KEY][name]) for name in self.task_names])

    def achieved_tasks(self) -> dict[str, bool] | None:
        """Which tasks any rollout of the last run achieved at any step (METRA's Kitchen metric: their number, 0-6),
        or None when the environment reports no tasks."""
        if self.task_names is None or self.task_flags is None:
            return None
        return dict(zip(self.task_names, self.task_flags.any(axis=(0, 1)).tolist()))

    def tasks_by_rollout(self) -> list[list[str]] | None:
        """The tasks each rollout of the last run achieved at any step (None without tasks)."""
        if self.task_names is None or self.task_flags is None:
            return None
        return [[name for name, done in zip(self.task_names, flags) if done] for flags in self.task_flags.any(axis=1)]

    def close(self) -> None:
        for env in self.envs:
            env.close()


def policy_coverage(rollouts: SkillRollouts, act: ActFn, skill_dim: int, discrete: bool,
                    seed: int = 0, prior: str = UNIT) -> tuple[int, np.ndarray, np.ndarray]:
    """METRA's policy coverage: (bins, positions, skills) of ``len(rollouts.envs)`` evaluation skills, continuous ones
    drawn from the algorithm's ``prior``."""
    skills = evaluation_skills(len(rollouts.envs), skill_dim, discrete, seed=seed, prior=prior)
    positions = rollouts.run(act, skills, seed=seed)
    return coverage(positions), positions, skills


def skill_colors(skills: np.ndarray) -> np.ndarray:
    """RGBA colours: hue = angle of the first two skill dimensions, or the one-hot index; without skills (an
    exploration method's plain policy), the rollout's index."""
    import matplotlib.pyplot as plt

    one_hot = bool(np.all((skills == 0) | (skills == 1)) and np.allclose(skills.sum(axis=1), 1.0))
    if skills.shape[1] == 0:
        hue = np.arange(len(skills)) / len(skills)
    elif one_hot or skills.shape[1] == 1:
        hue = np.argmax(skills, axis=1) / skills.shape[1]
    else:
        hue = (np.arctan2(skills[:, 1], skills[:, 0]) / (2 * np.pi)) % 1.0
    return plt.get_cmap("hsv")(hue)


def plot_trajectories(positions: np.ndarray, skills: np.ndarray, path: str | Path, title: str = "") -> Path:
    """Save a PNG: x-y paths coloured by skill, or x over time for 1-D positions (HalfCheetah)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = skill_colors(skills)
    fig, ax = plt.subplots(figsize=(5, 5))
    for i, path_i in enumerate(positions):
        if path_i.shape[1] >= 2:
            ax.plot(path_i[:, 0], path_i[:, 1], color=colors[i], lw=1)
            ax.set_xlabel("x (m)")
            ax.set_ylabel("y (m)")
            ax.set_aspect("equal", adjustable="datalim")
        else:
            ax.plot(np.arange(len(path_i)), path_i[:, 0], color=colors[i], lw=1)
            ax.set_xlabel("step")
            ax.set_ylabel("x (m)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class CoverageTracker:
    """Queue coverage (bins of the most recent ``queue_size`` training positions) and total coverage (bins of every
    training position so far); on environments with tasks (Kitchen) also the tasks achieved by those transitions:
    METRA's queue and total task coverage.

    :param n_coordinates: 2 for x-y, 1 for x.
    :param queue_size: METRA uses the most recent 100,000 transitions.
    :param task_names: the environment's tasks (``info[TASK_SUCCESS_KEY]``'s keys), or None.
    """

    def __init__(self, n_coordinates: int, queue_size: int = 100_000, task_names: list[str] | None = None) -> None:
        self.queue = np.zeros((queue_size, n_coordinates), dtype=np.float32)
        self.size = 0
        self.pos = 0
        self.total_bins: set[tuple[int, ...]] = set()
        self.task_names = list(task_names or ())
        self.task_queue = np.zeros((queue_size, len(self.task_names)), dtype=bool)
        self.total_tasks = np.zeros(len(self.task_names), dtype=bool)

    def add(self, positions: np.ndarray, tasks: np.ndarray | None = None) -> None:
        """Record training transitions: their positions ``(n, n_coordinates)`` and, on environments with tasks, their
        task flags ``(n, n_tasks)`` (in ``task_names`` order)."""
        positions = np.asarray(positions, dtype=np.float32).reshape(-1, self.queue.shape[1])
        n_tasks = len(self.task_names)
        if tasks is None:
            if n_tasks:
                raise ValueError(f"this tracker counts the tasks {self.task_names}: pass each transition's flags")
            tasks = np.zeros((len(positions), 0), dtype=bool)
        tasks = np.asarray(tasks, dtype=bool).reshape(len(positions), n_tasks)
        for start in range(0, len(positions), len(self.queue)):
            chunk = positions[start:start + len(self.queue)]
            idx = (self.pos + np.arange(len(chunk))) % len(self.queue)
            self.queue[idx] = chunk
            self.task_queue[idx] = tasks[start:start + len(self.queue)]
            self.pos = int((self.pos + len(chunk)) % len(self.queue))
            self.size = min(self.size + len(chunk), len(self.queue))
        self.total_bins.update(map(tuple, np.unique(bins_of(positions), axis=0).tolist()))
        self.total_tasks |= tasks.any(axis=0)

    def queue_coverage(self) -> int:
        return coverage(self.queue[: self.size]) if self.size else 0

    def total_coverage(self) -> int:
        return len(self.total_bins)

    def queue_tasks(self) -> dict[str, bool]:
        """Which tasks the most recent ``queue_size`` training transitions achieved (empty without tasks)."""
        return dict(zip(self.task_names, self.task_queue[: self.size].any(axis=0).tolist()))

    def total_tasks_achieved(self) -> dict[str, bool]:
        """Which tasks any training transition so far achieved (empty without tasks)."""
        return dict(zip(self.task_names, self.total_tasks.tolist()))

    def state(self) -> dict[str, np.ndarray]:
        bins = np.array(sorted(self.total_bins), dtype=np.int64).reshape(len(self.total_bins), self.queue.shape[1])
        tasks = {"task_names": np.array(self.task_names, dtype=str), "task_queue": self.task_queue,
                 "total_tasks": self.total_tasks} if self.task_names else {}
        return {"queue": self.queue, "size": np.array(self.size), "pos": np.array(self.pos), "total_bins": bins,
                **tasks}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`state`. A state without task flags for an environment with tasks was saved before they were
        counted, by a release whose Kitchen had another control: a ValueError says so."""
        saved_tasks = [str(name) for name in state.get("task_names", ())]
        if saved_tasks != self.task_names:
            raise ValueError(f"the saved coverage statistics count the tasks {saved_tasks}, this environment reports "
                             f"{self.task_names}" + ("; a Kitchen run state saved before metra-gym counted training "
                                                     "tasks ran the earlier end-effector control (a third of LEXA's "
                                                     "speed), so it is not comparable: start a new run"
                                                     if self.task_names and not saved_tasks else ""))
        if self.task_names:
            self.task_queue = np.asarray(state["task_queue"], dtype=bool).copy()
            self.total_tasks = np.asarray(state["total_tasks"], dtype=bool).copy()
        self.queue = np.asarray(state["queue"], dtype=np.float32).copy()
        self.size, self.pos = int(state["size"]), int(state["pos"])
        self.total_bins = set(map(tuple, np.asarray(state["total_bins"]).tolist()))
