import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch as th

from pretrain.algorithms.metra import METRA
from tests.pretrain.helpers import tiny_model

ROOT = Path(__file__).resolve().parents[2]


def test_save_load_round_trip_keeps_phi_lambda_actor_and_optimisers(tmp_path):
    model, _ = tiny_model(tmp_path, learning_starts=100)
    model.learn(600)  # a few real updates so the optimisers have state
    with th.no_grad():
        model.log_dual_lam.fill_(1.2345)
    model.save(tmp_path / "m.zip")
    loaded = METRA.load(tmp_path / "m.zip", device="cpu")
    for a, b in zip(model.phi.state_dict().values(), loaded.phi.state_dict().values()):
        th.testing.assert_close(a, b)
    for a, b in zip(model.actor.state_dict().values(), loaded.actor.state_dict().values()):
        th.testing.assert_close(a, b)
    assert loaded.log_dual_lam.item() == model.log_dual_lam.item()
    assert loaded.phi_optimizer.state_dict()["state"][0]["step"] == model.phi_optimizer.state_dict()["state"][0]["step"]
    assert loaded.dual_optimizer.state_dict()["state"][0]["step"] > 0
    assert (loaded.skill_dim, loaded.discrete_skills, loaded.obs_dim) == (2, False, 2)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "pretrain", "train", "--no-progress", *args]


def test_resume_continues_a_killed_run(tmp_path):
    run = tmp_path / "run"
    settings = ["--set", "epochs=40", "--set", "save_every=4", "--set", "eval_every=4", "--set", "net_width=32",
                "--set", "learning_starts=400", "--set", "torch_threads=1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_cli("--config", "point_mass", "--run-dir", str(run), *settings), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state_file = run / "run_state" / "latest" / "state.json"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if state_file.is_file() and json.loads(state_file.read_text())["epoch"] >= 8:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be killed: " + proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = json.loads(state_file.read_text())["epoch"]
    assert 8 <= killed_at < 40
    saved = METRA.load(run / "run_state" / "latest" / "model.zip", device="cpu")

    resumed = subprocess.run(_cli("--resume", str(run)), env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    history = json.loads((run / "eval" / "coverage.json").read_text())
    epochs = [row["epoch"] for row in history]
    assert epochs == sorted(set(epochs)) and epochs[-1] == 40 and killed_at in epochs
    final = json.loads(state_file.read_text())
    assert final["epoch"] == 40 and final["num_timesteps"] == 40 * 8 * 50
    # The resumed run went on from the saved phi and lambda rather than starting over.
    finished = METRA.load(run / "run_state" / "latest" / "model.zip", device="cpu")
    assert finished._n_updates == saved._n_updates + (40 - killed_at) * 50
    assert not np.allclose(finished.log_dual_lam.item(), np.log(30.0))
