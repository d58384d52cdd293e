"""Pixel METRA: Dict observations {"pixels", "skill"}, the paper's CNN in every network, the lean replay buffer."""

import numpy as np
import pytest
import torch as th

from pretrain.cli import main
from pretrain.run.config import load_config
from pretrain.run.trainer import build_model, env_factory, train, training_env
from tests.pretrain.helpers import random_policy_coverage

TINY = ["encoder_channels=[4,8,8,8]", "net_width=16", "n_envs=2", "eval_skills=2", "torch_threads=1"]


def test_pixel_model_has_its_own_encoders_and_the_lean_buffer(tmp_path):
    from pretrain.algorithms.common.pixel_encoder import PixelFeaturesExtractor, PixelPhiNetwork
    from pretrain.run.pixel_replay import FrameStackReplayBuffer

    config = load_config("point_mass_pixels", TINY)
    venv = training_env(config, env_factory(config))
    assert venv.observation_space["pixels"].shape == (48, 48, 9) and venv.observation_space["pixels"].dtype == np.uint8
    model = build_model(config, venv, tmp_path)
    assert model.pixels and isinstance(model.replay_buffer, FrameStackReplayBuffer)
    assert isinstance(model.skill_learner.phi, PixelPhiNetwork)
    encoders = [model.actor.features_extractor, model.critic.features_extractor, model.critic_target.features_extractor]
    assert all(isinstance(e, PixelFeaturesExtractor) for e in encoders)
    assert len({id(e) for e in encoders} | {id(model.skill_learner.phi.encoder)}) == 4  # none shared
    model.learn(4 * config.steps_per_epoch)  # collection and storage only (learning_starts is later)
    batch = model.replay_buffer.sample(8)
    assert batch.observations["pixels"].dtype == th.uint8  # stored and sampled as uint8; the CNNs scale them


@pytest.mark.parametrize(("setting", "message"), [
    ("collector=overlapped", "need collector=sequential"),
    ("backbone=tqc", "need backbone=sac"),
])
def test_pixel_runs_refuse_what_they_do_not_support(tmp_path, capsys, setting, message):
    args = ["train", "--no-progress", "--config", "point_mass_pixels", "--run-dir", str(tmp_path / "run")]
    for item in [*TINY, setting]:
        args += ["--set", item]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1


def test_pixel_run_export_is_one_clear_error(tmp_path, capsys):
    args = ["train", "--no-progress", "--config", "point_mass_pixels", "--run-dir", str(tmp_path / "run")]
    for item in [*TINY, "epochs=1", "learning_starts=10000", "save_replay_buffer=false"]:
        args += ["--set", item]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt")]) == 2
    assert "exporting a pixel run is not supported yet" in capsys.readouterr().err


def test_pixel_metra_point_mass_coverage_beats_a_random_policy(tmp_path):
    """20 epochs from 48 x 48 pixels (about 2-3 CPU minutes): measured 573 bins, random actions 209."""
    config = load_config("point_mass_pixels", ["torch_threads=1", "save_replay_buffer=false"])
    history = train(config, tmp_path / "run", verbose=0).history
    assert history[-1]["epoch"] == 20
    assert history[-1]["policy_coverage"] >= 2 * random_policy_coverage(config), history[-1]
