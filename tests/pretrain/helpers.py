"""Small builders shared by the pretrain tests."""

from pathlib import Path

from pretrain.run.config import load_config
from pretrain.run.trainer import build_model, env_factory, training_env


def tiny_model(tmp_path: Path, **overrides):
    """A METRA model on the point mass with small networks (built, not trained)."""
    items = [f"{k}={v}" for k, v in {"net_width": 32, "n_envs": 2, **overrides}.items()]
    config = load_config("point_mass", items)
    venv = training_env(config, env_factory(config))
    return build_model(config, venv, tmp_path), config
