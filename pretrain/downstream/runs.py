"""One downstream run: a learned agent trained for a budget of low-level steps and evaluated as it goes, or a
reference controller evaluated once; its result is one JSON file, written atomically after every evaluation, and a
learned run's trained agent is saved beside it (``NAME.zip``, Stable-Baselines3's format) when it finishes.

Agents: ``controller`` (the high-level controller over the task's skills, under a protocol), ``flat`` (SAC on the
low-level task, under a protocol), and the reference controllers of :mod:`pretrain.downstream.reference`. Budgets
count low-level steps for every agent (a controller step counts its skill's K, whether or not the episode ended
within the skill). A learned run is evaluated before any update on ``final_episodes`` episodes (the untrained
controller), every ``eval_every`` low-level steps on the first ``eval_episodes`` of them, and at the end on all
``final_episodes``; a reference controller on the ``final_episodes`` episodes (the same ones:
:func:`~pretrain.downstream.evaluation.evaluation_seeds`).

A finished file is never run again. A learned run given a folder for run states saves one after every evaluation
(:mod:`pretrain.downstream.run_state`) and, run again after a stop, goes on from the last one; without it, or from
a state of other settings, it starts from the beginning. It learns between evaluations in ``learn`` calls that end
where the agent's own collection ends (after a whole epoch of episodes for the paper's SAC, a whole rollout for
PPO), so an evaluation and a save fall at most one such collection after their mark, and are recorded at the step
where they happened.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pretrain.downstream.reference import REFERENCES

LEARNED = ("controller", "flat")
AGENTS = (*LEARNED, *REFERENCES)


@dataclass(frozen=True)
class RunSpec:
    """One run.

    :param task: a task of :data:`~pretrain.downstream.protocol.TASKS`.
    :param agent: ``controller``, ``flat`` or a reference controller's name.
    :param seed: the run's seed (training, and which evaluation episodes).
    :param protocol: the protocol of a learned agent (None for a reference controller).
    :param steps: the low-level budget of a learned agent (0 for a reference controller).
    :param eval_every: low-level steps between evaluations of a learned agent.
    :param eval_episodes: episodes of an evaluation during training.
    :param final_episodes: episodes of the first and last evaluations (and of a reference controller's).
    :param checkpoint: skills other than the task's bundled ones.
    """

    task: str
    agent: str
    seed: int
    protocol: str | None = None
    steps: int = 0
    eval_every: int = 0
    eval_episodes: int = 10
    final_episodes: int = 50
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        from pretrain.downstream.protocol import protocol, task

        task(self.task)
        if self.agent not in AGENTS:
            raise ValueError(f"unknown downstream agent {self.agent!r}; choose one of {', '.join(AGENTS)}")
        if self.agent in LEARNED:
            protocol(self.protocol or "")
            if self.steps <= 0 or self.eval_every <= 0:
                raise ValueError(f"a {self.agent} run needs steps > 0 and eval_every > 0, got {self.steps} and "
                                 f"{self.eval_every}")
        elif self.protocol is not None or self.steps:
            raise ValueError(f"the reference controller {self.agent!r} is not trained: give no protocol or steps")
        if not 1 <= self.eval_episodes <= self.final_episodes:
            raise ValueError(f"need 1 <= eval_episodes <= final_episodes, got {self.eval_episodes} and "
                             f"{self.final_episodes}")

    @property
    def name(self) -> str:
        """The run's file name (without ``.json``), e.g. ``ant_multigoals-controller-paper-seed=0``."""
        middle = f"{self.agent}-{self.protocol}" if self.protocol else self.agent
        return f"{self.task}-{middle}-seed={self.seed}"

    def settings(self) -> dict[str, Any]:
        """What makes two runs the same run (a finished file of other settings is not this run's)."""
        return asdict(self)


def write_atomic(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(row, indent=1))
    tmp.replace(path)


def read_run(path: Path) -> dict[str, Any] | None:
    """A run file, or None when it is missing or unreadable (a run killed while writing leaves only its ``.tmp``)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def is_finished(path: Path, spec: RunSpec) -> bool:
    row = read_run(path)
    return bool(row and row.get("finished") and row.get("settings") == spec.settings())


def sb3_class(agent: Any) -> str:
    """The Stable-Baselines3 (or sb3-contrib) class whose ``load`` reads the agent's zip (``SAC`` for
    :class:`~pretrain.downstream.protocol.LeanSAC`, ``TQC`` for a subclass of sb3-contrib's TQC)."""
    return next(cls.__name__ for cls in type(agent).__mro__
                if cls.__module__.startswith(("stable_baselines3.", "sb3_contrib.")))


def _summary(returns: list[float]) -> dict[str, Any]:
    return {"mean": float(np.mean(returns)), "returns": [round(float(r), 4) for r in returns]}


def _skills_digest(spec: RunSpec) -> str:
    from pretrain.downstream.protocol import checkpoint_config

    return checkpoint_config(spec.task, spec.checkpoint)["weights_sha256"][:12]


def run(spec: RunSpec, out: Path, cache: Path | None = None, states: Path | None = None) -> dict[str, Any]:
    """Do one run and write ``out/<name>.json``; returns its contents.

    :param out: the folder of run files.
    :param cache: where untrained skill checkpoints go (default: ``out/untrained_skills``).
    :param states: where a learned run keeps its run state (``states/<name>/``; removed when the run finishes), and
        from which it resumes; None: no run state, a stopped run starts again from the beginning.
    """
    import torch

    torch.set_num_threads(1)  # one run per core
    out = Path(out)
    path = out / f"{spec.name}.json"
    row: dict[str, Any] = {"settings": spec.settings(), "task": spec.task, "agent": spec.agent,
                           "protocol": spec.protocol, "seed": spec.seed, "finished": False,
                           "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                           "writer": {"host": platform.node(), "pid": os.getpid()}}
    if spec.agent != "flat":
        row["skills_sha256"] = _skills_digest(spec)
    start = time.time()
    if spec.agent in REFERENCES:
        from pretrain.downstream.reference import reference_returns

        returns = reference_returns(spec.task, spec.agent, spec.seed, spec.final_episodes,
                                    cache or out / "untrained_skills", spec.checkpoint)
        row.update(final=_summary(returns), finished=True, seconds=round(time.time() - start, 1))
        write_atomic(path, row)
        return row
    if states is None:
        return _train(spec, path, row, start, None)
    from pretrain.downstream.run_state import run_lock

    state = Path(states) / spec.name
    lock = run_lock(state)  # held until the run ends: no second process trains it
    try:
        return _train(spec, path, row, start, state)
    finally:
        lock.release()


def _train(spec: RunSpec, path: Path, row: dict[str, Any], start: float, states: Path | None) -> dict[str, Any]:
    import gymnasium as gym

    from pretrain.downstream.evaluation import agent_returns, evaluation_seeds
    from pretrain.downstream.protocol import (
        SACSettings,
        checkpoint_config,
        controller_env,
        flat_agent,
        hierarchical_agent,
        task,
    )
    from pretrain.downstream.run_state import load_run_state, quiet_logger, remove_run_state, save_run_state

    if spec.agent == "controller":
        agent = hierarchical_agent(spec.task, spec.seed, spec.checkpoint, protocol_name=spec.protocol)
        eval_env = controller_env(spec.task, spec.checkpoint, spec.protocol)
        scale = int(eval_env.unwrapped.skill_steps)
    else:
        agent, eval_env, scale = flat_agent(spec.task, spec.seed, spec.protocol), gym.make(task(spec.task).low_level_id), 1
    agent.set_logger(quiet_logger())
    seeds = evaluation_seeds(spec.seed, spec.final_episodes)

    def write() -> None:
        row["seconds"] = round(time.time() - start, 1)
        write_atomic(path, row)

    identity = {**spec.settings(), "skills_sha256": row.get("skills_sha256")}  # what a state must have been saved by
    resumed = load_run_state(states, agent, identity) if states is not None else None
    if resumed is not None:
        agent, saved = resumed
        start -= saved["seconds"]  # seconds count the run's time in every process that worked on it
        row.update({**saved, "writer": row["writer"], "resumes": saved.get("resumes", 0) + 1})
    else:
        row.update(algorithm=sb3_class(agent), low_level_steps_per_agent_step=scale, points=[],
                   pretraining_settings=SACSettings.of_checkpoint(checkpoint_config(spec.task,
                                                                                    spec.checkpoint)).as_dict())
        returns = agent_returns(agent, eval_env, seeds)  # the untrained controller
        row["untrained_controller"] = _summary(returns)
        row["points"].append((0, float(np.mean(returns[:spec.eval_episodes]))))
        write()
    budget = -(-spec.steps // scale)  # in agent steps
    saved_at = agent.num_timesteps if resumed is not None else -1
    while True:
        if states is not None and agent.num_timesteps != saved_at:
            write()  # the seconds so far, which the state keeps
            save_run_state(states, agent, identity, row)
        if agent.num_timesteps >= budget:
            break
        mark = (agent.num_timesteps * scale // spec.eval_every + 1) * spec.eval_every  # the next evaluation's
        agent.learn(min(budget, -(-mark // scale)) - agent.num_timesteps, reset_num_timesteps=False)
        steps = agent.num_timesteps * scale
        if steps < spec.steps:
            returns = agent_returns(agent, eval_env, seeds[:spec.eval_episodes])
            row["points"].append((steps, float(np.mean(returns))))
            write()
    returns = agent_returns(agent, eval_env, seeds)
    steps = agent.num_timesteps * scale
    row["final"] = {**_summary(returns), "steps": steps}
    row["points"].append((steps, float(np.mean(returns[:spec.eval_episodes]))))
    agent.save(path.with_suffix(".zip"))  # the trained agent, beside its result (SB3's format: ``SAC.load``)
    row.update(agent_file=path.with_suffix(".zip").name, finished=True)
    write()
    if states is not None:
        remove_run_state(states)
    eval_env.close()
    return row
