import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.algorithms.common.vec_env import NoCopyDummyVecEnv
from pretrain.config import load_config
from pretrain.run.envs import env_factory


def test_no_copy_vec_env_steps_exactly_like_sb3s():
    """Same observations, rewards, dones and infos (terminal observations included) as SB3's DummyVecEnv
    across episode ends; infos handed out earlier are not changed by later steps."""
    config = load_config("point_mass")
    make = env_factory(config)
    envs = [cls([lambda: SkillConditioned(make(), 2, False)] * 3) for cls in (DummyVecEnv, NoCopyDummyVecEnv)]
    for venv in envs:
        venv.seed(0)
        venv.reset()
    actions = np.random.default_rng(0).uniform(-1, 1, (2 * config.episode_steps + 5, 3, 2)).astype(np.float32)
    kept, episode_ends = [], 0
    for action in actions:
        (obs_a, rew_a, done_a, info_a), (obs_b, rew_b, done_b, info_b) = (venv.step(action) for venv in envs)
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(done_a, done_b)
        episode_ends += int(done_b.sum())
        for a, b in zip(info_a, info_b):
            assert a.keys() == b.keys()
            np.testing.assert_array_equal(a["coordinates"], b["coordinates"])
            if "terminal_observation" in a:
                np.testing.assert_array_equal(a["terminal_observation"], b["terminal_observation"])
        kept.append((info_b, [{k: np.copy(v) for k, v in info.items()} for info in info_b]))
    assert episode_ends == 6  # two episode ends of each of the 3 envs were crossed
    for infos, snapshot in kept:
        for info, copy in zip(infos, snapshot):
            assert info.keys() == copy.keys()
            for key in info:
                np.testing.assert_array_equal(info[key], copy[key])
