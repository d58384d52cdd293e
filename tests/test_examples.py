"""The examples that train run end to end at tiny scale, as a user runs them (a subprocess from the project root)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_SWIMMER = ["epochs=2", "n_envs=2", "episode_steps=50", "learning_starts=100", "net_width=16", "gradient_steps=5",
                "eval_every=2", "save_every=2", "eval_skills=4"]


def _run(args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": "egl"}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_own_env_pretrains_swimmer_exports_and_drives_it_through_skill_env(tmp_path):
    out = _run(["examples/own_env.py", "--out", str(tmp_path), "--skills", "2",
                *(f"--set={item}" for item in TINY_SWIMMER)])
    assert "trained 2 epochs (200 env steps" in out and "skill angle 180.0 deg" in out
    assert (tmp_path / "skills.png").stat().st_size > 0
    assert (tmp_path / "skills" / "config.json").is_file() and (tmp_path / "run" / "config.yaml").is_file()


def test_train_skills_trains_saves_loads_and_exports_with_the_sb3_api(tmp_path):
    out = _run(["examples/train_skills.py", "--steps", "200", "--out", str(tmp_path)])
    assert "skill angle  90.0 deg: moved" in out
    assert (tmp_path / "model.zip").is_file() and (tmp_path / "skills" / "model.safetensors").is_file()
