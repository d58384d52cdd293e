"""The model of a run: its algorithm's class on its backbone, built from the config (with the pixel settings of an
image environment), and the learning rate a resumed run applies to it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
from stable_baselines3.common.vec_env import VecEnv

from pretrain import algorithms
from pretrain.algorithms.common.pixel_encoder import PixelFeaturesExtractor, encoder_channels
from pretrain.algorithms.common.pixel_replay import FrameStackReplayBuffer
from pretrain.config import ConfigError, PretrainConfig

if TYPE_CHECKING:
    from pretrain.algorithms.common.algorithm import SkillAlgorithm


def algorithm_class(config: PretrainConfig) -> type[SkillAlgorithm]:
    """The SB3 class of a config: its algorithm on its backbone (``METRA`` for algo=metra, backbone=sac)."""
    return algorithms.algorithm_class(config.algo, config.backbone)


def pixel_settings(config: PretrainConfig, venv: VecEnv) -> dict[str, Any]:
    """What a pixel run changes: the paper's CNN as the features extractor of the actor and of each Q head (every one
    its own, as in the official agent: with phi's, four CNNs), and the replay buffer that stores each frame once.
    Empty for flat observations."""
    if not isinstance(venv.observation_space, gym.spaces.Dict):
        return {}
    for key, supported in (("algo", "metra"), ("backbone", "sac"), ("collector", "sequential")):
        if getattr(config, key) != supported:
            raise ConfigError(f"pixel observations ({config.env_id}) need {key}={supported}; got {getattr(config, key)}")
    image = venv.observation_space["pixels"]  # channels-last, as the environment renders
    channels = encoder_channels(config.encoder_channels)
    encoder = {"in_channels": int(image.shape[2]), "image_size": int(image.shape[0]),
               "image_width": int(image.shape[1]), "channels": channels}
    return {"phi_encoder": encoder, "replay_buffer_class": FrameStackReplayBuffer,
            "policy_kwargs": {"features_extractor_class": PixelFeaturesExtractor,
                              "features_extractor_kwargs": {"channels": channels},
                              "share_features_extractor": False, "features_extractor_per_q": True}}


def build_model(config: PretrainConfig, venv: VecEnv, run_dir: Path) -> SkillAlgorithm:
    """A new model of the config's algorithm on its backbone, built as a user's script builds it (the class with the
    config's keywords), plus the pixel settings and logging to ``run_dir/tb``."""
    cls = algorithm_class(config)
    kwargs = cls.config_kwargs(config)
    pixels = pixel_settings(config, venv)
    if pixels:
        kwargs["skill_learner_kwargs"] = {"phi_encoder": pixels["phi_encoder"]}
        kwargs["policy_kwargs"] = {**kwargs["policy_kwargs"], **pixels["policy_kwargs"]}
        kwargs["replay_buffer_class"] = pixels["replay_buffer_class"]
    model = cls("MultiInputPolicy" if pixels else "MlpPolicy", venv, tensorboard_log=str(run_dir / "tb"), **kwargs)
    model.env_id = config.env_id
    return model


def set_learning_rate(model: SkillAlgorithm, learning_rate: float) -> None:
    """Apply a (resumed) run's learning rate to the networks' optimisers: the backbone's through its schedule,
    the learner's through its own rule (METRA: phi follows, lambda keeps its rate)."""
    model.learning_rate = learning_rate
    model._setup_lr_schedule()
    model.skill_learner.set_learning_rate(learning_rate)
