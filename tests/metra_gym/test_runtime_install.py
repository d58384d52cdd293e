"""``pip install metra-gym`` without extras is enough for the skill envs and Hub checkpoints.

Builds a fresh virtual environment with the runtime dependencies only (torch's CPU wheel first, as the README
says, then the project without extras), and in it: builds metra/AntSkills-v0, steps it, and loads a checkpoint
from the fake Hub through HF_ENDPOINT. The training stack (SB3, sb3-contrib, matplotlib, TensorBoard) must be
absent there. Takes one to two minutes: it installs packages.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metra_gym.skill_checkpoint.hub import resolve_checkpoint
from tests.metra_gym.fake_hub import FakeHub
from tests.metra_gym.helpers import package_source

TRAINING_ONLY = ("stable_baselines3", "sb3_contrib", "matplotlib", "tensorboard", "rich")
SCRIPT = """
import importlib.util, sys
import gymnasium as gym, metra_gym
missing = [m for m in {training_only!r} if importlib.util.find_spec(m) is None]
env = gym.make("metra/AntSkills-v0")
env.reset(seed=0)
_, _, _, _, info = env.step(env.action_space.sample())
policy = metra_gym.SkillPolicy.from_pretrained("hf://metra/ant-skills@v1")
print(len(missing), info["skill_steps"], policy.obs_dim, sorted(m for m in ("pretrain", "stable_baselines3") if m in sys.modules))
"""


@pytest.mark.slow
def test_runtime_only_install_runs_skill_envs_and_hub_checkpoints(tmp_path):
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    for requirement in (["torch==2.13.0"], [str(package_source(tmp_path / "source"))]):  # built outside the tree
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *requirement], capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
    with FakeHub() as fake:
        fake.add_checkpoint("metra/ant-skills", Path(resolve_checkpoint("ant")), revision="v1")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "HF_HUB_OFFLINE"))}
        env.update(HF_ENDPOINT=fake.endpoint, HF_HUB_CACHE=str(tmp_path / "cache"), MUJOCO_GL="egl")
        result = subprocess.run([str(python), "-c", SCRIPT.format(training_only=TRAINING_ONLY)], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [str(len(TRAINING_ONLY)), "25", "29", "[]"]
