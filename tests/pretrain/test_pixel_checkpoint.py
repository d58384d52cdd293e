"""Pixel skill checkpoints of the DMC environments: the renderer they record, the skill env that draws its frames with
it, and one clear error for each way to combine them wrongly."""

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from metra_gym.skill_checkpoint.format import CheckpointError, read_config
from metra_gym.skill_env import SkillEnv
from pretrain.config import load_config
from pretrain.export import export_untrained

ROOT = Path(__file__).resolve().parents[2]
# 32 x 32 frames through 3 convolutions (32 -> 15 -> 6 -> 2), small heads: a pixel checkpoint in a second.
SMALL = ["encoder_channels=[4,8,8]", "net_width=16"]


@pytest.fixture(scope="module")
def pixel_checkpoint(tmp_path_factory) -> Path:
    """Untrained pixel Quadruped skills drawn with the full renderer (cheap_render=False) at 32 x 32."""
    config = load_config("quadruped", [*SMALL, "env_kwargs={obs_type: pixels, frame_size: 32, cheap_render: false}"])
    return export_untrained(config, tmp_path_factory.mktemp("pixel") / "ckpt")


@pytest.fixture(scope="module")
def state_checkpoint(tmp_path_factory) -> Path:
    return export_untrained(load_config("quadruped_state", ["net_width=16"]), tmp_path_factory.mktemp("state") / "ckpt")


def test_the_checkpoint_records_its_renderer_and_the_skill_env_draws_with_it(pixel_checkpoint):
    config = read_config(pixel_checkpoint)
    assert config["pixels"] == {"shape": [32, 32, 9], "encoder_channels": [4, 8, 8],
                                "renderer": {"cheap_render": False, "frame_size": 32}}
    # Only obs_type given: the frame size and the full renderer come from the checkpoint, not the env's defaults.
    env = gym.make("metra/QuadrupedSkills-v0", checkpoint=str(pixel_checkpoint), env_kwargs={"obs_type": "pixels"})
    inner = env.unwrapped.env.unwrapped
    assert (inner.cheap_render, inner.frame_size) == (False, 32)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (32, 32, 9) and obs.dtype == np.uint8
    obs, _, _, _, info = env.step(np.array([1.0, 0.0, 0.0, 0.0]))
    assert info["skill_steps"] == 25 and obs.shape == (32, 32, 9)
    env.close()
    policy_env = env.unwrapped.policy.make_env(5)  # the policy's own environment: the same renderer
    assert (policy_env.unwrapped.cheap_render, policy_env.unwrapped.frame_size) == (False, 32)
    policy_env.close()


def test_the_default_renderer_is_the_cheap_one(tmp_path):
    config = load_config("quadruped", [*SMALL, "env_kwargs={obs_type: pixels, frame_size: 32}"])
    assert read_config(export_untrained(config, tmp_path / "ckpt"))["pixels"]["renderer"] == {
        "cheap_render": True, "frame_size": 32}


def test_pixel_skills_on_a_state_env_name_the_fix(pixel_checkpoint):
    with pytest.raises(CheckpointError, match=r"pixel observations, but this environment's are Box.*build it with "
                                              r"env_kwargs=\{'obs_type': 'pixels'\}"):
        gym.make("metra/QuadrupedSkills-v0", checkpoint=str(pixel_checkpoint))  # the id's default: state


def test_state_skills_on_a_pixel_env_name_the_fix(state_checkpoint):
    with pytest.raises(CheckpointError, match=r"80-d state observations, but this environment's are \(64, 64, 9\) "
                                              r"images; build it with env_kwargs=\{'obs_type': 'state'\}"):
        gym.make("metra/QuadrupedSkills-v0", checkpoint=str(state_checkpoint), env_kwargs={"obs_type": "pixels"})


def test_another_renderer_than_the_checkpoints_is_refused(pixel_checkpoint):
    with pytest.raises(ValueError, match="env_kwargs asks for {'cheap_render': True}; leave cheap_render out of "
                                         "env_kwargs"):
        gym.make("metra/QuadrupedSkills-v0", checkpoint=str(pixel_checkpoint),
                 env_kwargs={"obs_type": "pixels", "cheap_render": True})
    own = gym.make("metra/Quadruped-v0", frame_size=32, max_episode_steps=-1)  # built by the caller: cheap
    with pytest.raises(CheckpointError, match="frames drawn with {'cheap_render': False, 'frame_size': 32}, but this "
                                              "environment draws them with {'cheap_render': True"):
        SkillEnv(own, checkpoint=str(pixel_checkpoint))
    own.close()


def test_a_renderer_the_machine_cannot_provide_is_one_clear_error(pixel_checkpoint):
    """MUJOCO_GL is read once, when dm_control is imported: a fresh process with a backend that cannot render here."""
    code = ("import gymnasium as gym, metra_gym, sys\n"
            "try:\n"
            f"    gym.make('metra/QuadrupedSkills-v0', checkpoint={str(pixel_checkpoint)!r}, "
            "env_kwargs={'obs_type': 'pixels'})\n"
            "except Exception as error:\n"
            "    print(type(error).__name__, error)\n")
    for backend, problem in (("glfw", "cannot render here"), ("vulkan", "is not a rendering backend dm_control knows")):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "MUJOCO_GL": backend, "PYTHONPATH": str(ROOT)})
        assert done.stdout.startswith("MujocoGLError"), (done.stdout, done.stderr[-2000:])
        assert problem in done.stdout and "set MUJOCO_GL=egl" in done.stdout


def test_a_bad_pixels_entry_is_named(pixel_checkpoint, tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    for path in pixel_checkpoint.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    config["pixels"]["renderer"] = {"cheap_render": "yes", "frame_size": 32}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="'pixels' must be a JSON object"):
        read_config(folder)
