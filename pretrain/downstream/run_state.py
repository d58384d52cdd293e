"""The run state of a learned downstream run, so that a run stopped part-way (the end of a session, a kill, a sweep
stopped by SIGTERM) goes on from its last evaluation instead of from its start: a 1 M-step HumanoidGoal run takes
45-60 minutes on one core here, and a sweep holds one or two of them at any moment.

Saved after every evaluation of a learned run (:mod:`pretrain.downstream.runs`), in ``STATES/NAME/latest/``:

- ``agent.zip``: Stable-Baselines3's save of the agent (networks, optimisers, entropy weight, counters);
- the replay buffer of an off-policy agent, in segments (:mod:`pretrain.algorithms.common.replay_segments`: a save
  writes only the segments that changed since the previous one and hard-links the rest);
- ``state.json``, written last: the run's identity (settings and skills' digest), its row so far (curve, untrained
  controller's returns, seconds), the process's RNG states, the agent's action-space RNG state (its random actions
  before learning starts), and every file's size and sha256, checked before a resume.

As in pretraining's run state (:mod:`pretrain.run.run_state`), a save goes to a temporary folder and two renames put
it in place, so a kill at any moment leaves a complete state (``latest``, else ``previous``) behind.

What a resume continues exactly is what the learner holds; the training environment starts again from a reset
seeded from the run's seed and step count. The agents of the paper's protocol update after whole episodes, so
their states are saved between episodes and only the next episode's start differs from the run not interrupted;
an agent that updates every step (protocol ``v0.3``) also loses the rest of the episode in flight. A state of other
identity (another budget, a changed sweep file, other skills) is not resumed: the run starts afresh and replaces it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from metra_gym.atomic_files import give_usual_mode, write_json_atomic
from pretrain.algorithms.common.replay_segments import META as REPLAY_META
from pretrain.algorithms.common.replay_segments import load_replay, save_replay
from pretrain.run.run_state import (
    LATEST,
    PREVIOUS,
    STATE,
    TMP_PREFIX,
    RunFolderLock,
    complete_state,
    file_sha256,
    fsync,
    process_rngs,
    put_in_place,
    restore_process_rngs,
)

AGENT = "agent.zip"


def quiet_logger() -> Logger:
    """A logger that writes nothing. Set on an agent before ``learn``, it also keeps Stable-Baselines3 from making a
    fresh ``/tmp/SB3-<date>`` folder at every ``learn`` call (what it does for an agent without a log folder)."""
    return Logger(folder=None, output_formats=[])


def save_run_state(folder: Path, agent: BaseAlgorithm, identity: dict[str, Any], row: dict[str, Any]) -> Path:
    """Write the run state of a run at its current step into ``folder`` (``STATES/NAME``); returns ``folder/latest``.

    :param agent: the learned agent, between two ``learn`` calls.
    :param identity: what makes a state this run's: its settings (:meth:`pretrain.downstream.runs.RunSpec.settings`)
        and the digest of its skills (a state over other skills is not resumed).
    :param row: the run's row so far (what its JSON file holds).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(f"{TMP_PREFIX}*"):  # of a save killed before its renames
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=folder))
    latest = folder / LATEST
    try:
        give_usual_mode(tmp)
        agent.save(tmp / AGENT)  # Stable-Baselines3 leaves the replay buffer out: it is saved next
        known: dict[str, dict[str, Any]] = {}  # the segments' sizes and digests (unchanged ones are hard links)
        if isinstance(agent, OffPolicyAlgorithm):
            before = complete_state(latest, AGENT) or {}
            known = save_replay(agent.replay_buffer, tmp, latest, before.get("files"))
        files = {}
        for path in sorted(tmp.iterdir()):
            fsync(path)
            files[path.name] = known.get(path.name) or {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        write_json_atomic(tmp / STATE, {"identity": identity, "row": row, "num_timesteps": agent.num_timesteps,
                                        "action_space_rng": agent.action_space.np_random.bit_generator.state,
                                        **process_rngs(), "files": files})
        return put_in_place(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_run_state(folder: Path, agent: BaseAlgorithm, identity: dict[str, Any]) -> tuple[BaseAlgorithm,
                                                                                        dict[str, Any]] | None:
    """The agent and row of the newest complete run state in ``folder`` saved with this ``identity``, or None when
    there is none: then the run starts afresh. A state of another identity is removed; a state that cannot be loaded
    (a file changed since it was written, an agent that no longer fits the environment) is moved aside to
    ``<folder>.damaged-<time>`` beside it with a warning, so that the run goes on rather than failing at every retry.

    :param agent: the run's agent as built afresh: its class, environment and device are the resumed agent's.
    """
    folder = Path(folder)
    found = [(state, path) for path in (folder / LATEST, folder / PREVIOUS)
             if (state := complete_state(path, AGENT)) is not None]
    if not found:
        return None
    state, path = found[0]
    if state.get("identity") != identity:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    try:
        for name, info in state["files"].items():
            if file_sha256(path / name) != info["sha256"]:
                raise ValueError(f"{name} changed after it was written (its sha256 differs from {STATE})")
        resumed = _load(path, state, agent, identity)
    except Exception as error:  # noqa: BLE001 - any failure to load: the state is set aside, the run starts afresh
        aside = folder.with_name(f"{folder.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        folder.rename(aside)
        warnings.warn(f"the run state in {path} cannot be resumed ({type(error).__name__}: {error}); it was moved to "
                      f"{aside} and the run starts from the beginning", RuntimeWarning, stacklevel=2)
        return None
    return resumed, state["row"]


def _load(path: Path, state: dict[str, Any], agent: BaseAlgorithm, identity: dict[str, Any]) -> BaseAlgorithm:
    env = agent.get_env()
    resumed = type(agent).load(path / AGENT, env=env, device=agent.device)
    if (path / REPLAY_META).is_file():
        resumed.replay_buffer = load_replay(path, resumed.device)
    # The training env starts again from a reset: seeded from the run's seed and step count, so that a resume from
    # the same state is repeatable and does not replay the run's first episode (what the load's seeding would do).
    env.seed(int(identity["seed"]) * 1_000_003 + int(state["num_timesteps"]))
    resumed._last_obs = None
    restore_process_rngs(state)
    resumed.action_space.np_random.bit_generator.state = state["action_space_rng"]
    resumed.set_logger(quiet_logger())
    return resumed


def run_lock(folder: Path) -> RunFolderLock:
    """Hold ``STATES/NAME.lock`` while this process trains the run whose state is ``folder`` (``STATES/NAME``): a
    second process on the same run and states folder (two hand-run ``downstream.py run`` of one name into one
    ``--out``) is refused with one line instead of both writing its state and file. The empty lock file stays
    (removing it could let a third process lock a fresh one beside a second still holding the old one); the state
    folder itself is not locked, as a state of another identity is removed and a damaged one moved aside."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = folder.with_name(f"{folder.name}.lock")
    lock.touch()
    return RunFolderLock(lock, refusal=f"the run {folder.name} is being trained by another process right now (its run "
                         f"state: {folder}); wait for it to end (or stop it), or give this run another --out")


def remove_run_state(folder: Path) -> None:
    """Remove a run's state once its result file is finished."""
    shutil.rmtree(folder, ignore_errors=True)
