"""Run checkpoints that ``--resume`` continues: model (with phi, lambda and optimisers), replay buffer, RNGs,
counters and coverage statistics, written atomically so that a killed run never leaves a broken checkpoint."""

from __future__ import annotations

import base64
import json
import random
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.vec_env import VecEnv

from pretrain.algorithms.metra import METRA
from pretrain.evaluation.coverage import CoverageTracker

LATEST = "latest"


class ResumeError(ValueError):
    """``--resume`` was given something that is not a METRA run folder with a checkpoint."""


def _env_rngs(venv: VecEnv) -> list[dict[str, Any]]:
    return [env.unwrapped.np_random.bit_generator.state for env in venv.envs]  # type: ignore[attr-defined]


def _set_env_rngs(venv: VecEnv, states: list[dict[str, Any]]) -> None:
    for env, state in zip(venv.envs, states):  # type: ignore[attr-defined]
        env.unwrapped.np_random.bit_generator.state = state


def save_run_state(run_dir: Path, model: METRA, tracker: CoverageTracker, epoch: int, save_buffer: bool,
                    extra: dict[str, Any] | None = None) -> Path:
    """Write ``run_dir/run_state/latest`` atomically (a temporary folder renamed into place)."""
    root = run_dir / "run_state"
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        model.save(tmp / "model.zip")
        if save_buffer:
            model.save_replay_buffer(tmp / "replay_buffer.pkl")
        np.savez(tmp / "coverage.npz", **tracker.state())
        state = {
            "epoch": epoch,
            "num_timesteps": model.num_timesteps,
            "python_rng": base64.b64encode(json.dumps(random.getstate()).encode()).decode(),
            "numpy_rng": _numpy_rng_state(),
            "torch_rng": base64.b64encode(th.get_rng_state().numpy().tobytes()).decode(),
            "env_rngs": _env_rngs(model.get_env()),
            "action_space_rng": model.action_space.np_random.bit_generator.state,
            **(extra or {}),
        }
        (tmp / "state.json").write_text(json.dumps(state, default=int))
        final = root / LATEST
        old = root / ".old"
        if old.exists():
            shutil.rmtree(old)
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def run_state_dir(run_dir: Path) -> Path:
    """The checkpoint folder of a run, with a clear error for anything that cannot be resumed."""
    run_dir = Path(run_dir)
    if run_dir.is_file():
        hint = " (an SB3 .zip is a model, not a run)" if run_dir.suffix == ".zip" else ""
        raise ResumeError(f"--resume expects the run folder written by metra-pretrain train, got the file {run_dir}{hint}")
    ckpt = run_dir / "run_state" / LATEST
    if not (ckpt / "model.zip").is_file() or not (ckpt / "state.json").is_file():
        raise ResumeError(f"{run_dir} has no checkpoint to resume ({ckpt}/model.zip and state.json are missing)")
    with zipfile.ZipFile(ckpt / "model.zip") as archive:
        if "phi.pth" not in archive.namelist():
            raise ResumeError(f"{ckpt / 'model.zip'} is a plain SAC model without METRA's phi; it cannot be resumed")
    return ckpt


def load_run_state(ckpt: Path, model: METRA, tracker: CoverageTracker) -> int:
    """Restore RNGs, the replay buffer and coverage statistics into a freshly loaded model; return the epoch."""
    state = json.loads((ckpt / "state.json").read_text())
    if (ckpt / "replay_buffer.pkl").is_file():
        model.load_replay_buffer(ckpt / "replay_buffer.pkl")
    with np.load(ckpt / "coverage.npz") as data:
        tracker.load_state(dict(data))
    random.setstate(_tuplify(json.loads(base64.b64decode(state["python_rng"]))))
    kind, key, pos, has_gauss, gauss = state["numpy_rng"]
    np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, gauss))
    th.set_rng_state(th.from_numpy(np.frombuffer(base64.b64decode(state["torch_rng"]), dtype=np.uint8).copy()))
    _set_env_rngs(model.get_env(), state["env_rngs"])
    model.action_space.np_random.bit_generator.state = state["action_space_rng"]
    return int(state["epoch"])


def _numpy_rng_state() -> list[Any]:
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    return [kind, key.tolist(), int(pos), int(has_gauss), float(gauss)]


def _tuplify(value: Any) -> Any:
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value
