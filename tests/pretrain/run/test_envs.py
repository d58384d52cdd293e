"""Any Gymnasium environment in a training config: a user's module:Env-v0 id, coordinates from observation indices or
info keys, the fitted normaliser, and training without coordinates."""

import json
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import yaml

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.normalization import FIT_EPISODES, fit_normalizer
from pretrain.config import build_config
from pretrain.export import export_run
from pretrain.run.env_wrappers import AddCoordinates
from pretrain.run.envs import env_factory, raw_env_factory
from pretrain.run.trainer import train

TINY = {"epochs": 1, "n_envs": 2, "episode_steps": 50, "learning_starts": 100, "net_width": 16, "gradient_steps": 5,
        "eval_every": 1, "eval_skills": 4, "save_every": 1, "torch_threads": 1, "save_replay_buffer": False}
SWIMMER = {"env_id": "Swimmer-v5", "env_kwargs": {"exclude_current_positions_from_observation": False}}


def test_coordinates_from_observation_indices_equal_those_from_info_keys():
    by_index = AddCoordinates(gym.make("Swimmer-v5", **SWIMMER["env_kwargs"]), [0, 1])
    by_key = AddCoordinates(gym.make("Swimmer-v5", **SWIMMER["env_kwargs"]), ["x_position", "y_position"])
    for env in (by_index, by_key):
        env.action_space.seed(0)
    (_, a), (_, b) = by_index.reset(seed=3), by_key.reset(seed=3)
    np.testing.assert_allclose(a["coordinates"], b["coordinates"])
    for _ in range(5):
        action = by_index.action_space.sample()
        a, b = by_index.step(action)[4], by_key.step(action)[4]
        np.testing.assert_allclose(a["coordinates"], b["coordinates"])
        assert a["coordinates"].shape == (2,)


def test_a_users_module_id_trains_and_a_checkpoint_of_it_keeps_the_allow_list(tmp_path, monkeypatch):
    package = tmp_path / "my_robots_api_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "envs.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        gym.register("MyPointMassApiTest-v0", entry_point="metra_gym.envs.point_mass:make_point_mass",
                     max_episode_steps=50)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    env_id = "my_robots_api_test.envs:MyPointMassApiTest-v0"
    config = build_config({**TINY, "env_id": env_id, "normalizer": "none"})
    history = train(config, tmp_path / "run", verbose=0).history
    assert history[-1]["policy_coverage"] >= 1  # the point mass puts info["coordinates"]
    export_run(tmp_path / "run", tmp_path / "skills")
    written = json.loads((tmp_path / "skills" / "config.json").read_text())
    assert written["env_id"] == env_id
    assert f'gym.make("{env_id}")' in (tmp_path / "skills" / "README.md").read_text()
    policy = SkillPolicy.from_pretrained(tmp_path / "skills")
    with pytest.raises(CheckpointError, match="import the Python module 'my_robots_api_test.envs'"):
        policy.make_env()
    assert policy.make_env(allowed_env_ids=[env_id]).observation_space.shape == (2,)


def test_a_fitted_normaliser_is_fitted_once_stored_with_the_run_and_the_checkpoint(tmp_path):
    config = build_config({**TINY, **SWIMMER, "normalizer": "fitted", "coordinates": ["x_position", "y_position"]})
    train(config, tmp_path / "run", verbose=0)
    stats = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["normalizer_stats"]
    expected = fit_normalizer(raw_env_factory(config), FIT_EPISODES, config.episode_steps, config.seed)
    np.testing.assert_allclose(stats["mean"], expected["mean"])
    np.testing.assert_allclose(stats["std"], expected["std"])
    assert len(stats["mean"]) == 10 and min(stats["std"]) > 0

    resumed = build_config({**yaml.safe_load((tmp_path / "run" / "config.yaml").read_text()), "epochs": 2})
    train(resumed, tmp_path / "run", resume=True, verbose=0)
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["normalizer_stats"] == stats

    export_run(tmp_path / "run", tmp_path / "skills")
    normalizer = json.loads((tmp_path / "skills" / "config.json").read_text())["normalizer"]
    assert normalizer["name"] == "fitted"
    np.testing.assert_allclose(normalizer["mean"], stats["mean"], rtol=1e-6)
    np.testing.assert_allclose(normalizer["std"], stats["std"], rtol=1e-6)


class _BarelyMoving(gym.Env):
    """Observation: a random walk (std about 1), a dimension random actions move by about 1e-4 (an object the arm
    rarely touches) and a constant."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = np.array([0.0, 0.5, 2.0])
        return self.state.copy(), {}

    def step(self, action):
        self.state = self.state + [float(action[0]), 1e-4 * self.np_random.standard_normal(), 0.0]
        return self.state.copy(), 0.0, False, False, {}


def test_normalizer_min_std_raises_each_std_and_null_leaves_constant_dimensions_unscaled():
    free = fit_normalizer(_BarelyMoving, 5, 20, seed=0)["std"]
    floored = fit_normalizer(_BarelyMoving, 5, 20, seed=0, min_std=0.01)["std"]
    assert free[0] == floored[0] > 0.5                   # a moving dimension keeps its std
    assert 1e-5 < free[1] < 1e-3 and floored[1] == 0.01  # barely moving: amplified 100x at most, not 10,000x
    assert free[2] == 1.0 and floored[2] == 0.01         # constant: unscaled by default, floored with min_std


def test_without_coordinates_training_runs_and_the_coverage_columns_say_why(tmp_path):
    train(build_config({**TINY, "env_id": "Pendulum-v1", "normalizer": "none"}), tmp_path / "run", verbose=0)
    rows = json.loads((tmp_path / "run" / "eval" / "coverage.json").read_text())
    assert [row["epoch"] for row in rows] == [0, 1]
    for row in rows:
        assert row["policy_coverage"] is None and row["total_coverage"] is None
        assert "Pendulum-v1 puts no info['coordinates'] and the config names no coordinates" in row["coverage"]
    assert (tmp_path / "run" / "run_state" / "latest" / "state.json").is_file()
    assert not list((tmp_path / "run" / "eval").glob("*.png"))


def test_env_factory_fits_a_fitted_normaliser_that_has_no_statistics_yet():
    config = build_config({**TINY, **SWIMMER, "normalizer": "fitted", "coordinates": ["x_position", "y_position"]})
    assert config.normalizer_stats is None
    obs, _ = env_factory(config)().reset(seed=0)
    stats = fit_normalizer(raw_env_factory(config), FIT_EPISODES, config.episode_steps, config.seed)
    raw_obs, _ = raw_env_factory(config)().reset(seed=0)
    np.testing.assert_allclose(obs, (raw_obs - np.array(stats["mean"])) / np.array(stats["std"]), rtol=1e-5, atol=1e-6)
