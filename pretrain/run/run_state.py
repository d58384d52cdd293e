"""The run state that ``--resume`` continues: model (with the skill learner and every optimiser), replay buffer,
RNGs, counters and coverage statistics, saved at epoch boundaries.

Layout: ``RUN_DIR/run_state/latest/`` with ``model.zip``, the replay buffer (``replay_buffer.pkl`` and its
segments ``replay.*.npy``, see :mod:`pretrain.run.replay_segments`), ``coverage.npz`` and ``state.json`` (written last; it lists every file with its size and sha256, so a state is complete exactly when
its ``state.json`` exists and matches). A save goes to a temporary folder (each file fsynced), then two renames
put it in place: ``latest`` -> ``previous``, temporary -> ``latest``. A kill at any moment leaves a complete state
behind: :func:`run_state_dir` takes the newest complete one among ``latest``, ``previous`` and finished
temporaries, puts it back as ``latest`` and removes the rest.

The SB3 zip and the replay buffer are pickles: a run folder is trusted input. The sha256 check refuses files
changed after they were written (by another program or a person), which also catches silent corruption.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from safetensors.torch import load_file, save_file
from stable_baselines3.common.vec_env import VecEnv

from pretrain.evaluation.coverage import CoverageTracker
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


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file through a temporary file renamed into place, so a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
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
    remove_unfinished(root)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
    try:
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


def remove_unfinished(root: Path) -> None:
    """Remove temporary folders of saves that were killed before they finished."""
    for path in root.glob(f"{TMP_PREFIX}*"):
        if path.is_dir() and not (path / STATE).is_file():
            shutil.rmtree(path, ignore_errors=True)


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


def run_state_dir(run_dir: Path, recover: bool = True) -> Path:
    """The run state of a run folder, with a clear error if there is none.

    With ``recover`` (what ``--resume`` does) a state left behind by a killed save is put back as ``latest`` and the
    rest removed. Without it (readers such as export, which may look at a run that is still training) the newest
    complete state is returned where it lies and nothing is moved.
    """
    run_dir = Path(run_dir)
    # recover: --resume; else a reader (export), whose messages must not talk about resuming.
    command, verb = ("--resume", "resume") if recover else ("export", "read")
    if run_dir.is_file():
        hint = " (an SB3 .zip is a model, not a run)" if run_dir.suffix == ".zip" else ""
        raise ResumeError(f"{command} expects the run folder written by metra-pretrain train, got the file "
                          f"{run_dir}{hint}")
    root = run_dir / ROOT
    if not root.is_dir():
        if recover:
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
    with np.load(folder / "coverage.npz") as data:
        tracker.load_state(dict(data))
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
