"""The run state that ``--resume`` continues: model (with the skill learner and every optimiser), replay buffer,
RNGs, counters and coverage statistics, saved at epoch boundaries.

Layout: ``RUN_DIR/run_state/latest/`` with ``model.zip``, the replay buffer (``replay_buffer.pkl`` and its
segments ``replay.*.npy``, see :mod:`pretrain.run.replay_segments`), ``coverage.npz`` and ``state.json`` (written last; it lists every file with its size and sha256, so a state is complete exactly when
its ``state.json`` exists and matches). A save goes to a temporary folder (each file fsynced), then two renames
put it in place: ``latest`` -> ``previous``, temporary -> ``latest``. A kill at any moment leaves a complete state
behind: :func:`run_state_dir` takes the newest complete one among ``latest``, ``previous`` and finished
temporaries, puts it back as ``latest`` and removes the rest; the next save removes them too. A run folder whose
first save never finished holds no saved state (:func:`has_saved_state` is False): a new run may start there.

``state.json`` also records the run's configuration: ``--resume`` and ``export`` refuse a ``config.yaml`` edited
since (:func:`check_config_unchanged`). While a process trains a run folder it holds a lock on it
(:class:`RunFolderLock`), so that a second ``train`` or ``--resume`` of the same folder is refused.

The SB3 zip and the replay buffer are pickles: a run folder is trusted input. The sha256 check refuses files
changed after they were written (by another program or a person), which also catches silent corruption.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import random
import shlex
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from safetensors.torch import load_file, save_file
from stable_baselines3.common.vec_env import VecEnv

from pretrain.evaluation.coverage import CoverageTracker
from pretrain.run.config import without_other_algorithms
from pretrain.run.replay_segments import META as REPLAY_META
from pretrain.run.replay_segments import load_replay, save_replay

ROOT = "run_state"
LATEST = "latest"
PREVIOUS = "previous"
TMP_PREFIX = ".tmp-"
STATE = "state.json"
COLLECTOR_ACTOR = "collector_actor.safetensors"  # the policy copy the collection in flight uses


class ResumeError(ValueError):
    """``--resume`` was given something that is not a run folder with a usable run state."""


class ResumeWarning(UserWarning):
    """A resumed run that continues, but not exactly as the uninterrupted run would (no saved replay buffer)."""


# --- writing ----------------------------------------------------------------------------------------------------


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _umask() -> int:
    """The process's umask, read from /proc where it is shown (Linux >= 4.7), else by setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def give_usual_mode(path: Path) -> None:
    """Give a file or folder made by ``tempfile`` (which makes them private: 0600 and 0700) the mode that ``open``
    and ``mkdir`` would have given it under the umask, before it is renamed into place for others to read."""
    path = Path(path)
    path.chmod((0o777 if path.is_dir() else 0o666) & ~_umask())


def temporary_prefix(path: Path) -> str:
    """The name prefix of the temporary files and folders written for ``path`` (said once: a later write removes
    the ones a killed process left behind, see :func:`remove_temporaries`)."""
    return f".{Path(path).name}.tmp-"


def remove_temporaries(path: Path) -> None:
    """Remove the temporary files and folders of ``path`` that an earlier, killed writer left behind. Only one
    process writes a run folder's files (it holds the run folder's lock), so none of them is in use."""
    path = Path(path)
    for leftover in path.parent.glob(f"{glob.escape(temporary_prefix(path))}*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file through a temporary file renamed into place, so a reader never sees half a file. The file gets
    the usual mode for the umask, and temporaries of ``path`` left by a killed earlier write are removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        give_usual_mode(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, default=int))


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
            _fsync(path)
            files[path.name] = known.get(path.name) or {"bytes": path.stat().st_size, "sha256": _sha256(path)}
        state = {
            "epoch": epoch,
            "num_timesteps": model.num_timesteps,
            "python_rng": base64.b64encode(json.dumps(random.getstate()).encode()).decode(),
            "numpy_rng": _numpy_rng_state(),
            "torch_rng": base64.b64encode(th.get_rng_state().numpy().tobytes()).decode(),
            "env_rngs": _env_rngs(model.get_env()),
            "action_space_rng": model.action_space.np_random.bit_generator.state,
            "collector": in_flight,
            "files": files,
            **(extra or {}),
        }
        write_json_atomic(tmp / STATE, state)
        _fsync(tmp)
        latest, previous = root / LATEST, root / PREVIOUS
        if latest.exists():
            shutil.rmtree(previous, ignore_errors=True)
            latest.rename(previous)
        tmp.rename(latest)
        _fsync(root)
        shutil.rmtree(previous, ignore_errors=True)
        return latest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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
    latest_complete = _complete(root / LATEST) is not None
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

    :param run_dir: an existing run folder.
    :raises ResumeError: when another process holds it.
    """

    def __init__(self, run_dir: Path) -> None:
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # not POSIX
            return
        fd = os.open(run_dir, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ResumeError(f"{run_dir} is being trained by another process right now; wait for it to end (or stop "
                              "it), or choose another --run-dir") from None
        except OSError:  # no locks on this file system
            os.close(fd)
            return
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


# --- finding and checking ---------------------------------------------------------------------------------------


def _complete(folder: Path) -> dict[str, Any] | None:
    """The state of a folder whose files are all there with their recorded sizes, else None (cheap check)."""
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None
    files = state.get("files") if isinstance(state, dict) else None
    if not isinstance(files, dict) or "model.zip" not in files:
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
    complete = [(state["epoch"], p) for p in candidates if (state := _complete(p)) is not None]
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
        _fsync(root)
    for path in candidates:
        if path.exists() and path != latest:
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(root / f"{TMP_PREFIX}damaged", ignore_errors=True)
    return latest


def check_config_unchanged(state: dict[str, Any], config: dict[str, Any], run_dir: Path,
                           may_change: Iterable[str] = ()) -> None:
    """Refuse a run's ``config.yaml`` that was edited after the run state was saved (``state["config"]``, recorded
    at every save): the saved model, buffer and environments were built from the recorded values.

    :param state: the run state's ``state.json``.
    :param config: the configuration about to be used (``config.yaml`` with a resumed run's ``--set`` overrides).
    :param run_dir: the run folder, for the message.
    :param may_change: keys a resumed run may change (through ``--set``); not compared.
    :raises ResumeError: one line naming every key that differs, with both values.
    """
    recorded = state.get("config")
    if not isinstance(recorded, dict):  # saved by an older metra-gym, which did not record it
        return
    recorded, current = without_other_algorithms(recorded), without_other_algorithms(json.loads(json.dumps(config)))
    allowed = set(may_change)
    differ = [key for key, value in recorded.items()
              if key not in allowed and key in current and current[key] != value]
    if differ:
        details = ", ".join(f"{key} (config.yaml {current[key]!r}, run state {recorded[key]!r})" for key in differ)
        hint = (f"; a resumed run changes only {', '.join(sorted(allowed))}, with --set KEY=VALUE" if allowed else "")
        raise ResumeError(f"{Path(run_dir) / 'config.yaml'} was edited after the run state was saved: {details}. "
                          f"Restore these values (the saved model, buffer and environments were built from them), or "
                          f"start a new run{hint}")


def verify_files(folder: Path) -> dict[str, Any]:
    """The state of a run state folder after checking every file's sha256 against the one recorded at save."""
    state = json.loads((folder / STATE).read_text())
    for name, info in state["files"].items():
        if _sha256(folder / name) != info["sha256"]:
            raise ResumeError(f"{folder / name} changed after it was written (its sha256 differs from {STATE}); a "
                              "run folder is trusted input and this file is a pickle, so it is not loaded. Restore "
                              "the file, or start a new run")
    return state


# --- loading ----------------------------------------------------------------------------------------------------


def load_run_state(folder: Path, model, tracker: CoverageTracker) -> dict[str, Any]:
    """Restore RNGs, the replay buffer and coverage statistics into a freshly loaded model; return the state.

    The environments' RNGs are put back as they were *before* the reset that began the next epoch, and the
    pending reset runs again (SB3's load would otherwise re-seed the environments and replay epoch 0's skills):
    the resumed run draws the same skills and initial states as the run that was not interrupted.
    """
    state = json.loads((folder / STATE).read_text())
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
    random.setstate(_tuplify(json.loads(base64.b64decode(state["python_rng"]))))
    kind, key, pos, has_gauss, gauss = state["numpy_rng"]
    np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, gauss))
    th.set_rng_state(th.from_numpy(np.frombuffer(base64.b64decode(state["torch_rng"]), dtype=np.uint8).copy()))
    # The vec env itself, under SB3's wrappers (an image run's VecTransposeImage keeps seeds of its own).
    venv = model.get_env().unwrapped
    _set_env_rngs(venv, state["env_rngs"])
    venv._reset_seeds()  # drop the seeds SB3's load queued for the next reset
    model.action_space.np_random.bit_generator.state = state["action_space_rng"]
    model._last_obs = None  # so that learn() runs the pending reset
    if model.collector is not None and state.get("collector") is not None:
        model.collector.resume_from({**state["collector"], "weights": load_file(folder / COLLECTOR_ACTOR)})
    return state


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
