"""The overlapped collector: SB3's buffer layout and counters, a one-epoch policy lag, exact resume."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch as th

from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.replay_segments import load_replay
from pretrain.config import load_config
from pretrain.run.run_config import read_run_config
from pretrain.run.trainer import train
from tests.pretrain.run.test_run_state import ROOT, TINY, _assert_same_training


def _latest(run):
    state = run / "run_state" / "latest"
    model = SkillSAC.load(state / "model.zip", device="cpu")
    model.replay_buffer = load_replay(state, model.device)
    return model


def test_overlapped_fills_the_buffer_like_the_sequential_loop(tmp_path):
    for mode in ("sequential", "overlapped"):
        train(load_config("point_mass", [*TINY, "epochs=4", "save_every=4", f"collector={mode}"]), tmp_path / mode,
              verbose=0)
    seq, ovl = _latest(tmp_path / "sequential"), _latest(tmp_path / "overlapped")
    assert (seq.num_timesteps, seq._n_updates, seq._episode_num) == (ovl.num_timesteps, ovl._n_updates, ovl._episode_num)
    a, b = seq.replay_buffer, ovl.replay_buffer
    assert (a.pos, a.full) == (b.pos, b.full) == (4 * 50, False)
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        assert getattr(a, name).shape == getattr(b, name).shape and getattr(a, name).dtype == getattr(b, name).dtype
    n = b.pos
    # Episodes of 50 steps end at the epoch boundary: one terminal flag per env at the last step of each epoch,
    # stored as done (the official time-limit convention, timeout_done), never as a timeout.
    np.testing.assert_array_equal(a.dones[:n].sum(axis=0), b.dones[:n].sum(axis=0))
    assert b.dones[:n][49::50].all() and b.dones[:n].sum() == 4 * 2 and not b.timeouts[:n].any()
    # Transitions chain: the next observation of a step is the observation of the following one within an episode.
    within = np.ones(n - 1, dtype=bool)
    within[49::50] = False
    np.testing.assert_array_equal(b.next_observations[: n - 1][within], b.observations[1:n][within])
    # Each episode keeps one skill (the last 2 entries) from its first to its last step.
    skills = b.observations[:n, :, 2:].reshape(4, 50, 2, 2)
    assert np.all(skills == skills[:, :1])


def test_overlapped_resume_is_exact(tmp_path):
    settings = [*TINY, "collector=overlapped"]
    train(load_config("point_mass", [*settings, "epochs=6", "save_every=3"]), tmp_path / "straight", verbose=0)
    train(load_config("point_mass", [*settings, "epochs=3", "save_every=3"]), tmp_path / "split", verbose=0)
    train(read_run_config(tmp_path / "split", {"epochs": 6}), tmp_path / "split", resume=True, verbose=0)
    _assert_same_training(tmp_path / "straight", tmp_path / "split")


def test_workers_exit_without_a_traceback_when_the_trainer_is_killed(tmp_path):
    """The trainer waits on its worker nearly all the time (one gradient step per epoch): a kill finds the worker
    collecting, and its next send meets a closed pipe."""
    run = tmp_path / "run"
    settings = [*TINY, "epochs=1000", "save_every=1", "eval_every=1000", "gradient_steps=1", "n_envs=16",
                "collector=overlapped"]
    proc = subprocess.Popen([sys.executable, "-m", "pretrain", "train", "--no-progress", "--config", "point_mass",
                             "--run-dir", str(run), *[a for s in settings for a in ("--set", s)]],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    state = run / "run_state" / "latest" / "state.json"
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            if state.is_file() and json.loads(state.read_text())["epoch"] >= 3:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)  # to EOF: until the workers, which share stderr, are gone too
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err and "Error" not in err, err


@pytest.mark.skipif(not th.cuda.is_available(), reason="needs a GPU: the learner's actor on CUDA, the workers on CPU")
def test_overlapped_collects_for_a_learner_on_a_gpu(tmp_path):
    # The worker receives the learner's actor; on a GPU its weights are CUDA tensors and the observations CPU ones.
    # Epochs 3 and 4 act with it (the first two, up to learning_starts, draw random actions).
    train(load_config("point_mass", [*TINY, "epochs=4", "save_every=4", "collector=overlapped", "device=cuda"]),
          tmp_path / "gpu", verbose=0)
    assert _latest(tmp_path / "gpu").replay_buffer.pos == 4 * 50
