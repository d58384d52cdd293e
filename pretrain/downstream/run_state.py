"""The run state of a learned downstream run, so that a run stopped part-way (the end of a session, a kill, a sweep
stopped by SIGTERM) goes on from its last evaluation instead of from its start: a 1 M-step HumanoidGoal run takes
45-60 minutes on one core here, and a sweep holds one or two of them at any moment.

Saved after every evaluation of a learned run (:mod:`pretrain.downstream.runs`), in ``STATES/NAME/latest/``:

- ``agent.zip``: Stable-Baselines3's save of the agent (networks, optimisers, entropy weight, counters);
- the replay buffer of an off-policy agent, in segments (:mod:`pretrain.algorithms.common.replay_segments`: a save
  writes only the segments that changed since the previous one and hard-links the rest);
- ``state.json``, written last: the run's settings, its row so far (curve, untrained controller's returns, seconds),
  the process's RNG states and the agent's action-space RNG state (its random actions before learning starts).

As in pretraining's run state (:mod:`pretrain.run.run_state`), a save goes to a temporary folder and two renames put
it in place, so a kill at any moment leaves a complete state (``latest``, else ``previous``) behind.

What a resume continues exactly is what the learner holds; the training environment starts again from a reset
seeded from the run's seed and step count. The agents of the paper's protocol update after whole episodes, so
their states are saved between episodes and only the next episode's start differs from the run not interrupted;
an agent that updates every step (protocol ``v0.3``) also loses the rest of the episode in flight. A state of other
settings (another budget, a changed sweep file) is not resumed: the run starts afresh and replaces it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from metra_gym.atomic_files import give_usual_mode, write_json_atomic
from pretrain.algorithms.common.replay_segments import META as REPLAY_META
from pretrain.algorithms.common.replay_segments import load_replay, save_replay
from pretrain.run.run_state import process_rngs, restore_process_rngs

AGENT = "agent.zip"
STATE = "state.json"
LATEST = "latest"
PREVIOUS = "previous"
TMP_PREFIX = ".tmp-"


def quiet_logger() -> Logger:
    """A logger that writes nothing. Set on an agent before ``learn``, it also keeps Stable-Baselines3 from making a
    fresh ``/tmp/SB3-<date>`` folder at every ``learn`` call (what it does for an agent without a log folder)."""
    return Logger(folder=None, output_formats=[])


def _recorded(folder: Path) -> dict[str, Any] | None:
    """The state of a folder whose ``state.json`` and every file it lists are there at their recorded sizes."""
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None
    files = state.get("files") if isinstance(state, dict) else None
    if not isinstance(files, dict) or AGENT not in files:
        return None
    if any(not (folder / name).is_file() or (folder / name).stat().st_size != info.get("bytes")
           for name, info in files.items()):
        return None
    return state


def save_run_state(folder: Path, agent: BaseAlgorithm, settings: dict[str, Any], row: dict[str, Any]) -> Path:
    """Write the run state of a run at its current step into ``folder`` (``STATES/NAME``); returns ``folder/latest``.

    :param agent: the learned agent, between two ``learn`` calls.
    :param settings: the run's settings (:meth:`pretrain.downstream.runs.RunSpec.settings`).
    :param row: the run's row so far (what its JSON file holds).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(f"{TMP_PREFIX}*"):  # of a save killed before its renames
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=folder))
    latest, previous = folder / LATEST, folder / PREVIOUS
    try:
        give_usual_mode(tmp)
        agent.save(tmp / AGENT)  # Stable-Baselines3 leaves the replay buffer out: it is saved next
        if isinstance(agent, OffPolicyAlgorithm):
            before = _recorded(latest) or {}
            save_replay(agent.replay_buffer, tmp, latest, before.get("files"))
        files = {path.name: {"bytes": path.stat().st_size} for path in sorted(tmp.iterdir())}
        write_json_atomic(tmp / STATE, {"settings": settings, "row": row, "num_timesteps": agent.num_timesteps,
                                        "action_space_rng": agent.action_space.np_random.bit_generator.state,
                                        **process_rngs(), "files": files})
        if latest.exists():
            shutil.rmtree(previous, ignore_errors=True)
            latest.rename(previous)
        tmp.rename(latest)
        shutil.rmtree(previous, ignore_errors=True)
        return latest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_run_state(folder: Path, agent: BaseAlgorithm, settings: dict[str, Any]) -> tuple[BaseAlgorithm,
                                                                                        dict[str, Any]] | None:
    """The agent and row of the newest complete run state in ``folder`` saved with these ``settings``, or None when
    there is none (then the run starts afresh; a state of other settings is removed).

    :param agent: the run's agent as built afresh: its class, environment and device are the resumed agent's.
    :raises ValueError: a complete state whose RNG entries cannot be restored (a damaged or edited state.json).
    """
    folder = Path(folder)
    found = [(state, path) for path in (folder / LATEST, folder / PREVIOUS) if (state := _recorded(path)) is not None]
    if not found:
        return None
    state, path = found[0]
    if state.get("settings") != settings:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    env = agent.get_env()
    resumed = type(agent).load(path / AGENT, env=env, device=agent.device)
    if (path / REPLAY_META).is_file():
        resumed.replay_buffer = load_replay(path, resumed.device)
    # The training env starts again from a reset: seeded from the run's seed and step count, so that a resume from
    # the same state is repeatable and does not replay the run's first episode (what the load's seeding would do).
    env.seed(int(settings["seed"]) * 1_000_003 + int(state["num_timesteps"]))
    resumed._last_obs = None
    try:
        restore_process_rngs(state)
        resumed.action_space.np_random.bit_generator.state = state["action_space_rng"]
    except (ValueError, TypeError, KeyError, RuntimeError) as error:
        raise ValueError(f"{path / STATE} is damaged or was edited (an RNG state cannot be restored: {error}); remove "
                         f"{folder} to start the run afresh") from None
    resumed.set_logger(quiet_logger())
    return resumed, state["row"]


def remove_run_state(folder: Path) -> None:
    """Remove a run's state once its result file is finished."""
    shutil.rmtree(folder, ignore_errors=True)
