import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch as th

from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.replay_segments import load_replay
from pretrain.cli import main
from pretrain.config import load_config
from pretrain.run import run_state
from pretrain.run.model import algorithm_class
from pretrain.run.run_config import read_run_config
from pretrain.run.trainer import train
from tests.pretrain.helpers import tiny_model

ROOT = Path(__file__).resolve().parents[3]
TINY = ["net_width=32", "n_envs=2", "learning_starts=200", "torch_threads=1", "eval_every=100", "eval_skills=4"]


def test_save_load_round_trip_keeps_phi_lambda_actor_and_optimisers(tmp_path):
    model, _ = tiny_model(tmp_path, learning_starts=100)
    model.learn(600)  # a few real updates so the optimisers have state
    with th.no_grad():
        model.skill_learner.log_dual_lam.fill_(1.2345)
    model.save(tmp_path / "m.zip")
    loaded = SkillSAC.load(tmp_path / "m.zip", device="cpu")
    for a, b in zip(model.skill_learner.phi.state_dict().values(), loaded.skill_learner.phi.state_dict().values()):
        th.testing.assert_close(a, b)
    for a, b in zip(model.actor.state_dict().values(), loaded.actor.state_dict().values()):
        th.testing.assert_close(a, b)
    assert loaded.skill_learner.log_dual_lam.item() == model.skill_learner.log_dual_lam.item()
    assert loaded.skill_learner.phi_optimizer.state_dict()["state"][0]["step"] == model.skill_learner.phi_optimizer.state_dict()["state"][0]["step"]
    assert loaded.skill_learner.dual_optimizer.state_dict()["state"][0]["step"] > 0
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
    saved = SkillSAC.load(run / "run_state" / "latest" / "model.zip", device="cpu")

    resumed = subprocess.run(_cli("--resume", str(run)), env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    history = json.loads((run / "eval" / "coverage.json").read_text())
    epochs = [row["epoch"] for row in history]
    assert epochs == sorted(set(epochs)) and epochs[-1] == 40 and killed_at in epochs
    final = json.loads(state_file.read_text())
    assert final["epoch"] == 40 and final["num_timesteps"] == 40 * 8 * 50
    # The resumed run went on from the saved phi and lambda rather than starting over.
    finished = SkillSAC.load(run / "run_state" / "latest" / "model.zip", device="cpu")
    assert finished._n_updates == saved._n_updates + (40 - killed_at) * 50
    assert not np.allclose(finished.skill_learner.log_dual_lam.item(), np.log(30.0))
    # ... and exactly as the run that was never killed (same seed, same settings).
    reference = tmp_path / "reference"
    done = subprocess.run(_cli("--config", "point_mass", "--run-dir", str(reference), *settings), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _assert_same_training(run, reference)


def _assert_same_training(a: Path, b: Path, algorithm=SkillSAC) -> None:
    """Equal replay buffers and equal weights of every network (and lambda, and CrossQ's batch-norm statistics) in two
    runs' latest run states."""
    models = [algorithm.load(r / "run_state" / "latest" / "model.zip", device="cpu") for r in (a, b)]
    for model, run in zip(models, (a, b)):
        model.replay_buffer = load_replay(run / "run_state" / "latest", model.device)
    (x, y) = models
    assert x.num_timesteps == y.num_timesteps and x._n_updates == y._n_updates
    np.testing.assert_array_equal(x.replay_buffer.observations, y.replay_buffer.observations)
    np.testing.assert_array_equal(x.replay_buffer.actions, y.replay_buffer.actions)
    for name in ("actor", "critic", "skill_learner"):
        for (key, u), v in zip(getattr(x, name).state_dict().items(), getattr(y, name).state_dict().values()):
            th.testing.assert_close(u, v, rtol=0, atol=0, msg=f"{name}.{key} differs")


@pytest.mark.parametrize("backbone", ["sac", "crossq"])
def test_resume_is_exact_skills_buffer_and_weights(tmp_path, backbone):
    """Train 6 epochs at once, or 3 and then resume to 6: the same transitions and the same weights (CrossQ: its
    batch-renorm statistics too: zeroing them after the load makes this test fail)."""
    settings = [*TINY, f"backbone={backbone}", "save_every=3"]
    straight = load_config("point_mass", [*settings, "epochs=6"])
    train(straight, tmp_path / "straight", verbose=0)
    train(load_config("point_mass", [*settings, "epochs=3"]), tmp_path / "split", verbose=0)
    train(read_run_config(tmp_path / "split", {"epochs": 6}), tmp_path / "split", resume=True, verbose=0)
    _assert_same_training(tmp_path / "straight", tmp_path / "split", algorithm_class(straight))


def test_a_kill_between_the_renames_of_a_save_is_recovered(tmp_path, monkeypatch):
    run = tmp_path / "run"
    train(load_config("point_mass", [*TINY, "epochs=2", "save_every=2"]), run, verbose=0)
    root = run / "run_state"
    (root / ".tmp-killed-early").mkdir()  # a save killed before it wrote anything: removed by the next save

    # Simulate a kill after `latest` became `previous` and before the new folder became `latest`: the second
    # rename fails and the cleanup that a killed process would not run is skipped.
    real_rename, real_rmtree = Path.rename, run_state.shutil.rmtree

    def rename(self, target):
        if Path(target).name == "latest" and self.name.startswith(".tmp-"):
            raise KeyboardInterrupt  # the "kill"
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    monkeypatch.setattr(run_state.shutil, "rmtree",  # a killed process removes nothing complete
                        lambda path, *a, **k: None if (Path(path) / "state.json").exists() else real_rmtree(path, *a, **k))
    with pytest.raises(KeyboardInterrupt):
        train(read_run_config(run, {"epochs": 4}), run, resume=True, verbose=0)
    monkeypatch.setattr(Path, "rename", real_rename)
    monkeypatch.setattr(run_state.shutil, "rmtree", real_rmtree)
    assert not (root / "latest").exists() and (root / "previous").is_dir()
    assert not (root / ".tmp-killed-early").exists()
    assert len(list(root.glob(".tmp-*"))) == 1

    folder = run_state.run_state_dir(run)  # recovers the newest complete state (epoch 4) as `latest`
    assert json.loads((folder / "state.json").read_text())["epoch"] == 4
    assert sorted(p.name for p in root.iterdir()) == ["latest"]
    result = train(read_run_config(run, {"epochs": 6}), run, resume=True, verbose=0)
    assert result.epoch == 6


def test_a_run_state_file_changed_after_it_was_written_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    train(load_config("point_mass", [*TINY, "epochs=2", "save_every=2"]), run, verbose=0)
    buffer = run / "run_state" / "latest" / "replay_buffer.pkl"
    data = bytearray(buffer.read_bytes())
    data[-10] ^= 0xFF  # same size, one byte changed
    buffer.write_bytes(bytes(data))
    assert main(["train", "--resume", str(run), "--set", "epochs=4", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "replay_buffer.pkl changed after it was written" in err and err.count("error:") == 1


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_save_then_stop_with_one_line(tmp_path, sig, code):
    """The signal arrives before any periodic save: the run still saves its current epoch and can be resumed."""
    run = tmp_path / "run"
    settings = [f"--set={item}" for item in TINY if not item.startswith("eval_every")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_cli("--config", "point_mass", "--run-dir", str(run), "--set", "epochs=1000",
                                 "--set", "save_every=1000", "--set", "eval_every=1", *settings),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    for line in proc.stdout:  # evaluation lines: "[epoch N] ..."
        if line.startswith("[epoch 3]") or time.time() > deadline:
            break
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    last = err.strip().splitlines()[-1]
    assert "stopped after saving epoch" in last and f"--resume {run}" in last and "Traceback" not in err
    saved = json.loads((run / "run_state" / "latest" / "state.json").read_text())["epoch"]
    assert 3 <= saved < 1000
    resumed = subprocess.run(_cli("--resume", str(run), "--set", f"epochs={saved + 1}"), env=env,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.parametrize("backbone", ["crossq", "tqc"])
def test_backbone_save_load_keeps_learner_and_optimisers(tmp_path, backbone):
    from pretrain.run.envs import env_factory, training_env
    from pretrain.run.model import algorithm_class, build_model

    config = load_config("point_mass", [*TINY, f"backbone={backbone}", "learning_starts=100"])
    model = build_model(config, training_env(config, env_factory(config)), tmp_path)
    model.learn(600)
    with th.no_grad():
        model.skill_learner.log_dual_lam.fill_(0.777)
    model.save(tmp_path / "m.zip")
    loaded = algorithm_class(config).load(tmp_path / "m.zip", device="cpu")
    assert type(loaded).__name__ == type(model).__name__
    for (key, a), b in zip(model.skill_learner.state_dict().items(), loaded.skill_learner.state_dict().values()):
        th.testing.assert_close(a, b, msg=key)
    for name in ("phi_optimizer", "dual_optimizer"):
        saved = getattr(model.skill_learner, name).state_dict()["state"]
        restored = getattr(loaded.skill_learner, name).state_dict()["state"]
        assert saved[0]["step"] == restored[0]["step"] > 0
        th.testing.assert_close(saved[0]["exp_avg"], restored[0]["exp_avg"])
    assert loaded.critic.optimizer.state_dict()["state"][0]["step"] == model.critic.optimizer.state_dict()["state"][0]["step"]


def test_a_resumed_run_cannot_switch_backbone(tmp_path, capsys):
    run = tmp_path / "run"
    train(load_config("point_mass", [*TINY, "epochs=1", "save_every=1"]), run, verbose=0)
    assert main(["train", "--resume", str(run), "--set", "backbone=tqc", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "cannot change backbone when resuming" in err and err.count("error:") == 1


def test_reading_a_run_state_moves_nothing(tmp_path):
    """Export reads a run that may still be training: it takes the newest complete state where it lies."""
    run = tmp_path / "run"
    train(load_config("point_mass", [*TINY, "epochs=2", "save_every=1"]), run, verbose=0)
    root = run / "run_state"
    (root / "latest").rename(root / "previous")  # as if a save were between its two renames
    assert run_state.run_state_dir(run, recover=False) == root / "previous"
    assert sorted(p.name for p in root.iterdir()) == ["previous"]


@pytest.mark.parametrize(("state", "message"), [
    ("{not json", "state.json is damaged (not a JSON object)"),
    ("[1, 2]", "state.json is damaged (not a JSON object)"),
    ('{"epoch": 3}', "was written by an older metra-gym without file checksums"),
])
def test_a_damaged_state_json_is_not_called_an_older_version(tmp_path, state, message):
    latest = tmp_path / "run_state" / "latest"
    latest.mkdir(parents=True)
    (latest / "model.zip").write_bytes(b"zip")
    (latest / "state.json").write_text(state)
    with pytest.raises(run_state.ResumeError, match="cannot be resumed|resume it with that version") as error:
        run_state.run_state_dir(tmp_path)
    assert message in str(error.value)
    if "damaged" in message:
        assert "older" not in str(error.value)
