"""The training environment's wrappers: preset normaliser and skill conditioning."""

import gymnasium as gym
import numpy as np

import metra_gym  # noqa: F401
from metra_gym.envs.normalization import PRESETS
from pretrain.algorithms.common.normalization import NormalizeObservationPreset


def test_preset_normaliser_matches_the_formula():
    env = NormalizeObservationPreset(gym.make("metra/Ant-v0"), "ant")
    raw_env = gym.make("metra/Ant-v0")
    obs, _ = env.reset(seed=3)
    raw, _ = raw_env.reset(seed=3)
    mean, std = (np.array(v, dtype=np.float32) for v in PRESETS["ant"])
    np.testing.assert_allclose(obs, (raw - mean) / (std + 1e-8), rtol=1e-5)
