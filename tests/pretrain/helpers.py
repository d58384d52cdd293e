"""Small builders shared by the pretrain tests."""

from pathlib import Path

import numpy as np
import torch as th

from pretrain.config import load_config
from pretrain.run.coverage import SkillRollouts, coverage
from pretrain.run.envs import env_factory, training_env
from pretrain.run.model import build_model
from pretrain.run.trainer import train


def tiny_model(tmp_path: Path, **overrides):
    """A METRA model on the point mass with small networks (built, not trained)."""
    items = [f"{k}={v}" for k, v in {"net_width": 32, "n_envs": 2, **overrides}.items()]
    config = load_config("point_mass", items)
    venv = training_env(config, env_factory(config))
    return build_model(config, venv, tmp_path), config


def skill_step_batch(step: float, n: int = 256):
    """(obs, next_obs, z): transitions of the point mass moving ``step`` along a random unit skill z."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((n, 2))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    obs = rng.uniform(-3, 3, (n, 2))
    return (th.as_tensor(obs, dtype=th.float32), th.as_tensor(obs + step * z, dtype=th.float32),
            th.as_tensor(z, dtype=th.float32))


def random_policy_coverage(config) -> int:
    """48 rollouts of uniformly random actions in the config's environment, same length, seeded."""
    rng = np.random.default_rng(0)
    rollouts = SkillRollouts(env_factory(config), 48, config.episode_steps)
    return coverage(rollouts.run(lambda obs, z: rng.uniform(-1, 1, (len(obs), 2)), np.zeros((48, 2)), seed=0))


def point_mass_coverage(tmp_path: Path, algo: str, epochs: int = 20) -> tuple[int, int]:
    """Policy coverage of ``algo`` trained ``epochs`` epochs on the point mass (seeded), and of random actions."""
    config = load_config("point_mass", [f"algo={algo}", f"epochs={epochs}", f"eval_every={epochs}",
                                        f"save_every={epochs}", "torch_threads=1", "save_replay_buffer=false"])
    trained = train(config, tmp_path / "run", verbose=0).history[-1]["policy_coverage"]
    random_coverage = random_policy_coverage(config)
    print(f"{algo}: coverage {trained} (random {random_coverage})")
    return trained, random_coverage


def fake_ray_tune(monkeypatch, cpus: int = 2) -> dict:
    """Ray Tune replaced by a recorder that runs nothing, on a cluster of ``cpus`` CPUs: the returned dict receives the
    ``max_concurrent_trials`` a sweep gives Tune."""
    import pytest

    tune = pytest.importorskip("ray.tune")
    from pretrain.sweep import ray_runner

    seen: dict = {}

    class Tuner:
        def __init__(self, trainable, param_space, tune_config, run_config):
            seen["max_concurrent_trials"] = tune_config.max_concurrent_trials

        def fit(self):
            return []

    monkeypatch.setattr(ray_runner, "start_ray", lambda address, cpus_per_run: cpus)
    monkeypatch.setattr(tune, "Tuner", Tuner)
    monkeypatch.setattr(tune, "with_parameters", lambda trainable, **specs: trainable)  # no object store: Ray is off
    return seen
