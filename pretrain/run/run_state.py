"""The run state that ``--resume`` continues: model (with the skill learner and every optimiser), replay buffer,
RNGs, counters and coverage statistics, saved at epoch boundaries.

Layout: ``RUN_DIR/run_state/latest/`` with ``model.zip``, the replay buffer (``replay_buffer.pkl`` and its
segments ``replay.*.npy``, see :mod:`pretrain.algorithms.common.replay_segments`), ``coverage.npz`` and
``state.json`` (written last; it lists every file with its size and sha256, so a state is complete exactly when its
``state.json`` exists and matches). A save goes to a temporary folder (each file fsynced), then two renames
put it in place: ``latest`` -> ``previous``, temporary -> ``latest``. A kill at any moment leaves a complete state
behind: :func:`run_state_dir` takes the newest complete one among ``latest``, ``previous`` and finished
temporaries, puts it back as ``latest`` and removes the rest; the next save removes them too. A run folder whose
first save never finished holds no saved state (:func:`has_saved_state` is False): a new run may start there.

``state.json`` also records the run's configuration (``--resume`` and ``export`` refuse a ``config.yaml`` edited
since: :mod:`pretrain.run.run_config`) and the sha256 of its own entries: a state.json edited by hand is refused, and
one of an older metra-gym is checked entry by entry (:func:`check_state`). While a process trains a run folder it holds a lock on it
(:class:`RunFolderLock`), so that a second ``train`` or ``--resume`` of the same folder is refused.

The SB3 zip and the replay buffer are pickles: a run folder is trusted input. The sha256 check refuses files
changed after they were written (by another program or a person), which also catches silent corruption.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import random
import shlex
import shutil
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from safetensors.torch import load_file, save_file
from stable_baselines3.common.vec_env import VecEnv

from metra_gym.atomic_files import give_usual_mode, write_json_atomic
from pretrain.algorithms.common.replay_segments import META as REPLAY_META
from pretrain.algorithms.common.replay_segments import load_replay, save_replay
from pretrain.run.coverage import CoverageTracker

ROOT = "run_state"
LATEST = "latest"
PREVIOUS = "previous"
TMP_PREFIX = ".tmp-"
STATE = "state.json"
STATE_SHA256 = "state_sha256"  # state.json's entry holding the sha256 of its other entries
COLLECTOR_ACTOR = "collector_actor.safetensors"  # the policy copy the collection in flight uses


class ResumeError(ValueError):
    """``--resume`` was given something that is not a run folder with a usable run state."""


class ResumeWarning(UserWarning):
    """A resumed run that continues, but not exactly as the uninterrupted run would (no saved replay buffer)."""


# --- writing ----------------------------------------------------------------------------------------------------


def fsync(path: Path) -> None:
    """Flush a file's (or a folder's) contents to disk, so that a save vouches only for what is there."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    """The sha256 hex digest of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_run_state(run_dir: Path, model, tracker: CoverageTracker, epoch: int, save_buffer: bool,
                   extra: dict[str, Any] | None = None) -> Path:
    """Write ``run_dir/run_state/latest`` so that a kill at any moment leaves a complete run state. With an
    overlapped collector, what its collection in flight started from is saved too (``collector_actor.safetensors``
    and ``state.json["collector"]``)."""
    root = Path(run_dir) / ROOT
    root.mkdir(parents=True, exist_ok=True)
    remove_leftovers(root)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
    try:
        give_usual_mode(tmp)
        model.save(tmp / "model.zip")
        known: dict[str, dict[str, Any]] = {}  # files whose size and sha256 are known without reading them again
        if save_buffer:  # only the segments that changed since the last save are written; the rest are linked
            previous = root / LATEST
            known = save_replay(model.replay_buffer, tmp, previous, _recorded_files(previous))
        np.savez(tmp / "coverage.npz", **tracker.state())
        in_flight = model.collector.in_flight() if model.collector is not None else None
        if in_flight is not None:
            save_file(in_flight["weights"], str(tmp / COLLECTOR_ACTOR))
            in_flight = {"rngs": in_flight["rngs"], "start_timesteps": in_flight["start_timesteps"]}
        files = {}
        for path in sorted(tmp.iterdir()):
            fsync(path)
            files[path.name] = known.get(path.name) or {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        state = {
            "epoch": epoch,
            "num_timesteps": model.num_timesteps,
            **process_rngs(),
            "env_rngs": _env_rngs(model.get_env()),
            "action_space_rng": model.action_space.np_random.bit_generator.state,
            "collector": in_flight,
            "files": files,
            **(extra or {}),
        }
        write_json_atomic(tmp / STATE, {**state, STATE_SHA256: state_digest(state)})
        return put_in_place(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def put_in_place(tmp: Path, root: Path) -> Path:
    """Make the finished temporary state folder ``tmp`` the ``latest`` one in ``root`` (also the downstream runs' save,
    :mod:`pretrain.downstream.run_state`): two renames, ``latest`` -> ``previous`` then ``tmp`` -> ``latest``, so that
    a kill at any moment leaves a complete state behind; then ``previous`` goes. Returns ``root/latest``."""
    fsync(tmp)
    latest, previous = root / LATEST, root / PREVIOUS
    if latest.exists():
        shutil.rmtree(previous, ignore_errors=True)
        latest.rename(previous)
    tmp.rename(latest)
    fsync(root)
    shutil.rmtree(previous, ignore_errors=True)
    return latest


def _recorded_files(folder: Path) -> dict[str, dict[str, Any]]:
    """The files a run state folder's ``state.json`` records (empty when there is none to read)."""
    try:
        files = json.loads((folder / STATE).read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        return {}
    return files if isinstance(files, dict) else {}


def remove_leftovers(root: Path) -> None:
    """Before a save: remove what earlier saves that were killed left in ``run_state/``. Temporaries that never
    finished always go; ``previous`` and finished temporaries go when ``latest`` is complete (the saving process
    holds newer state, and ``--resume`` would have taken ``latest``), and are kept otherwise."""
    latest_complete = complete_state(root / LATEST) is not None
    for path in [root / PREVIOUS, *root.glob(f"{TMP_PREFIX}*")]:
        if not path.exists() and not path.is_symlink():
            continue
        if path.is_dir() and not path.is_symlink():
            if latest_complete or not (path / STATE).is_file():
                shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def has_saved_state(run_dir: Path) -> bool:
    """Whether any save of the run in ``run_dir`` finished writing (``state.json`` is written last), complete or
    damaged since. False for a folder whose first save was killed or failed (``run_state/`` empty or holding only
    unfinished temporaries): there is nothing to resume, and a new run may start there."""
    root = Path(run_dir) / ROOT
    if not root.is_dir():
        return False
    return any((path / STATE).exists() for path in [root / LATEST, root / PREVIOUS, *root.glob(f"{TMP_PREFIX}*")])


def recorded_config(run_dir: Path) -> dict[str, Any] | None:
    """The config the newest save of the run in ``run_dir`` recorded; None when there is none (no save yet, or a save
    by an older metra-gym that did not record it)."""
    try:
        recorded = json.loads((Path(run_dir) / ROOT / LATEST / STATE).read_text()).get("config")
    except (OSError, ValueError, AttributeError):
        return None
    return recorded if isinstance(recorded, dict) else None


def discard_unsaved_state(run_dir: Path) -> None:
    """Remove ``run_state/`` of a run folder in which no save ever finished, so that a new run starts afresh."""
    root = Path(run_dir) / ROOT
    if root.is_dir() and not has_saved_state(run_dir):
        shutil.rmtree(root)


class RunFolderLock:
    """An exclusive lock on a run folder (``flock`` on the folder itself; no file is left), held while a process
    trains it: a second ``train`` or ``--resume`` of the same folder is refused instead of mixing two runs. Where
    the file system has no locks (some network file systems, Windows) it locks nothing.

    :param run_dir: an existing run folder (or file).
    :param refusal: the error's message (default: the run folder's, for ``train`` and ``--resume``).
    :raises ResumeError: when another process holds it.
    """

    def __init__(self, run_dir: Path, refusal: str | None = None) -> None:
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # not POSIX
            return
        # a folder opens read-only; a lock file read-write (some network file systems refuse an exclusive lock on a
        # file opened read-only)
        fd = os.open(run_dir, os.O_RDONLY if Path(run_dir).is_dir() else os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ResumeError(refusal or f"{run_dir} is being trained by another process right now; wait for it to "
                              "end (or stop it), or choose another --run-dir") from None
        except OSError:  # no locks on this file system
            os.close(fd)
            return
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


# --- finding and checking ---------------------------------------------------------------------------------------


def complete_state(folder: Path, model_file: str = "model.zip") -> dict[str, Any] | None:
    """The state of a folder whose files are all there with their recorded sizes, else None (cheap check); a state
    holds ``model_file`` (the downstream runs' states name theirs ``agent.zip``)."""
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None
    files = state.get("files") if isinstance(state, dict) else None
    if not isinstance(files, dict) or model_file not in files:
        return None
    for name, info in files.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != info.get("bytes"):
            return None
    return state


def run_state_dir(run_dir: Path, recover: bool = True, resume: bool | None = None) -> Path:
    """The run state of a run folder, with a clear error if there is none.

    With ``recover`` (what ``--resume`` does) a state left behind by a killed save is put back as ``latest`` and the
    rest removed. Without it (readers such as export, which may look at a run that is still training) the newest
    complete state is returned where it lies and nothing is moved.

    :param resume: whether the messages speak of resuming (default: ``recover``); a check before ``--resume`` takes
        the run folder's lock passes ``recover=False, resume=True``.
    """
    run_dir = Path(run_dir)
    # --resume; else a reader (export), whose messages must not talk about resuming.
    resume = recover if resume is None else resume
    command, verb = ("--resume", "resume") if resume else ("export", "read")
    if run_dir.is_file():
        hint = " (an SB3 .zip is a model, not a run)" if run_dir.suffix == ".zip" else ""
        raise ResumeError(f"{command} expects the run folder written by metra-pretrain train, got the file "
                          f"{run_dir}{hint}")
    root = run_dir / ROOT
    if not root.is_dir():
        if resume:
            raise ResumeError(f"{run_dir} has no run state to resume ({root} is missing); start it with "
                              "`metra-pretrain train --run-dir`")
        what = "does not exist" if not run_dir.exists() else f"has no run state to {verb} ({root} is missing)"
        raise ResumeError(f"{run_dir} {what}; give the folder of a run started with `metra-pretrain train "
                          "--run-dir`")
    latest = root / LATEST
    candidates = [p for p in [latest, root / PREVIOUS, *sorted(root.glob(f"{TMP_PREFIX}*"))] if p.is_dir()]
    complete = [(state["epoch"], p) for p in candidates if (state := complete_state(p)) is not None]
    for epoch, path in complete:  # the newest is chosen by its epoch
        if type(epoch) is not int or epoch < 0:
            raise _damaged(path, f"epoch must be an integer >= 0, got {epoch!r}")
    if not complete:
        legacy = latest / "model.zip"
        if legacy.is_file() and (latest / STATE).is_file():
            try:
                state = json.loads((latest / STATE).read_text())
            except (OSError, ValueError):  # ValueError: not JSON, or not UTF-8
                state = None
            if not isinstance(state, dict):
                raise ResumeError(f"{latest / STATE} is damaged (not a JSON object), so the run state cannot be "
                                  "resumed; restore the file from a backup, or start a new run")
            if "files" not in state:
                raise ResumeError(f"{latest} was written by an older metra-gym without file checksums; resume it "
                                  "with that version, or start a new run")
        if not has_saved_state(run_dir):  # the first save was killed or failed: nothing was ever saved
            again = shlex.join(["metra-pretrain", "train", "--config", str(run_dir / "config.yaml"), "--run-dir",
                                str(run_dir)])
            raise ResumeError(f"{run_dir} has no saved run state to {verb}: its first save did not finish (killed, or "
                              f"the disk was full). Start the run afresh in the same folder with: {again}")
        raise ResumeError(f"{run_dir} has no complete run state to {verb} (looked in {root})")
    best = max(complete, key=lambda item: (item[0], item[1] == latest))[1]
    with zipfile.ZipFile(best / "model.zip") as archive:
        if "skill_learner.pth" not in archive.namelist():
            raise ResumeError(f"{best / 'model.zip'} is a plain SB3 model without a skill learner; it cannot be "
                              "resumed")
    if not recover:
        return best
    if best != latest:  # a save was killed between its renames, or `latest` was damaged: put the newest back
        if latest.exists():
            latest.rename(root / f"{TMP_PREFIX}damaged")
        best.rename(latest)
        fsync(root)
    for path in candidates:
        if path.exists() and path != latest:
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(root / f"{TMP_PREFIX}damaged", ignore_errors=True)
    return latest


def state_digest(state: dict[str, Any]) -> str:
    """The sha256 of a state.json's entries (without its own :data:`STATE_SHA256`), as JSON with sorted keys."""
    entries = {key: value for key, value in state.items() if key != STATE_SHA256}
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


def _damaged(folder: Path, what: str) -> ResumeError:
    return ResumeError(f"{folder / STATE} is damaged or was edited ({what}); a run state is trusted input, so it is "
                       "not loaded. Restore the file from a backup, or start a new run")


def _b64(value: Any) -> bytes:
    return base64.b64decode(value, validate=True)


def check_state(state: Any, folder: Path) -> dict[str, Any]:
    """A state.json's entries after checking them: the sha256 it recorded of them (a save by this metra-gym), and
    each entry's type (also for older saves, which recorded none).

    :raises ResumeError: naming what is wrong.
    """
    if not isinstance(state, dict):
        raise _damaged(folder, "not a JSON object")
    digest = state.get(STATE_SHA256)
    if digest is not None and digest != state_digest(state):
        raise _damaged(folder, "its entries differ from the sha256 recorded when it was written")
    for key in ("epoch", "num_timesteps"):
        if type(state.get(key)) is not int or state[key] < 0:
            raise _damaged(folder, f"{key} must be an integer >= 0, got {state.get(key)!r}")
    kinds = {"files": dict, "python_rng": str, "numpy_rng": list, "torch_rng": str, "env_rngs": list,
             "action_space_rng": dict}
    for key, kind in kinds.items():
        if not isinstance(state.get(key), kind):
            what = "missing" if key not in state else f"not a {kind.__name__}: {str(state[key])[:40]!r}"
            raise _damaged(folder, f"{key} is {what}")
    try:
        json.loads(_b64(state["python_rng"]))
        _b64(state["torch_rng"])
    except (binascii.Error, ValueError) as error:
        raise _damaged(folder, f"an RNG state does not decode: {error}") from None
    if not all(isinstance(rng, dict) for rng in state["env_rngs"]) or len(state["numpy_rng"]) != 5:
        raise _damaged(folder, "env_rngs or numpy_rng is not an RNG state")
    return state


def verify_files(folder: Path) -> dict[str, Any]:
    """The state of a run state folder, checked (:func:`check_state`), after checking every file's sha256 against
    the one recorded at save."""
    try:
        state = check_state(json.loads((folder / STATE).read_text()), folder)
    except (OSError, ValueError) as error:
        if isinstance(error, ResumeError):
            raise
        raise _damaged(folder, "not a JSON object") from None
    for name, info in state["files"].items():
        if file_sha256(folder / name) != info["sha256"]:
            raise ResumeError(f"{folder / name} changed after it was written (its sha256 differs from {STATE}); a "
                              "run folder is trusted input and this file is a pickle, so it is not loaded. Restore "
                              "the file, or start a new run")
    return state


# --- loading ----------------------------------------------------------------------------------------------------


def load_run_state(folder: Path, state: dict[str, Any], model, tracker: CoverageTracker) -> None:
    """Restore RNGs, the replay buffer and coverage statistics of a run state into a freshly loaded model.

    The environments' RNGs are put back as they were *before* the reset that began the next epoch, and the
    pending reset runs again (SB3's load would otherwise re-seed the environments and replay epoch 0's skills):
    the resumed run draws the same skills and initial states as the run that was not interrupted.

    :param folder: the run state folder.
    :param state: its state.json, checked (:func:`verify_files`).
    :raises ResumeError: for RNG states that cannot be restored.
    """
    # The vec env itself, under SB3's wrappers (an image run's VecTransposeImage keeps seeds of its own).
    venv = model.get_env().unwrapped
    try:
        restore_process_rngs(state)
        if len(state["env_rngs"]) != venv.num_envs:
            raise ValueError(f"{len(state['env_rngs'])} environment RNGs for {venv.num_envs} environments")
        _set_env_rngs(venv, state["env_rngs"])
        model.action_space.np_random.bit_generator.state = state["action_space_rng"]
    except (ValueError, TypeError, KeyError, RuntimeError) as error:
        raise _damaged(folder, f"an RNG state cannot be restored: {error}") from None
    if (folder / REPLAY_META).is_file():
        model.replay_buffer = load_replay(folder, model.device)
    else:
        warnings.warn(f"{folder} holds no replay buffer (the run was saved with save_replay_buffer=false): the resumed "
                      "run trains on an empty buffer that refills from now on, so it does not continue exactly as "
                      "the uninterrupted run would", ResumeWarning, stacklevel=2)
    with np.load(folder / "coverage.npz") as data:
        try:
            tracker.load_state(dict(data))
        except ValueError as error:
            raise ResumeError(f"{folder / 'coverage.npz'}: {error}") from None
    venv._reset_seeds()  # drop the seeds SB3's load queued for the next reset
    model._last_obs = None  # so that learn() runs the pending reset
    if model.collector is not None and state.get("collector") is not None:
        model.collector.resume_from({**state["collector"], "weights": load_file(folder / COLLECTOR_ACTOR)})


def process_rngs() -> dict[str, Any]:
    """The process's RNG states (Python's, NumPy's global one and torch's) as JSON entries: ``python_rng``,
    ``numpy_rng`` and ``torch_rng`` (also the downstream runs' state: :mod:`pretrain.downstream.run_state`)."""
    return {"python_rng": base64.b64encode(json.dumps(random.getstate()).encode()).decode(),
            "numpy_rng": _numpy_rng_state(),
            "torch_rng": base64.b64encode(th.get_rng_state().numpy().tobytes()).decode()}


def restore_process_rngs(state: dict[str, Any]) -> None:
    """Put back the RNG states of :func:`process_rngs` (``state`` may hold other entries too).

    :raises ValueError, TypeError, KeyError, RuntimeError: for entries that are not such RNG states.
    """
    random.setstate(_tuplify(json.loads(_b64(state["python_rng"]))))
    kind, key, pos, has_gauss, gauss = state["numpy_rng"]
    np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, gauss))
    th.set_rng_state(th.from_numpy(np.frombuffer(_b64(state["torch_rng"]), dtype=np.uint8).copy()))


def _env_rngs(venv: VecEnv) -> list[dict[str, Any]]:
    """Each environment's RNG state before its last reset (the vec env records it; see NoCopyDummyVecEnv)."""
    return [rng for rng in venv.pre_reset_rngs]  # type: ignore[attr-defined]


def _set_env_rngs(venv: VecEnv, states: list[dict[str, Any]]) -> None:
    for env, state in zip(venv.envs, states):  # type: ignore[attr-defined]
        env.unwrapped.np_random.bit_generator.state = state


def _numpy_rng_state() -> list[Any]:
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    return [kind, key.tolist(), int(pos), int(has_gauss), float(gauss)]


def _tuplify(value: Any) -> Any:
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value
