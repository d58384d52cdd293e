"""The memory check: a run whose replay buffer and networks cannot fit is refused before anything is allocated."""

import gymnasium as gym
import numpy as np
import pytest

from pretrain.algorithms.common import memory
from pretrain.config import ConfigError, load_config

ANT_OBS = gym.spaces.Box(-np.inf, np.inf, (29,), np.float64)
ANT_ACTIONS = gym.spaces.Box(-1, 1, (8,), np.float32)


def test_the_buffer_estimate_is_sb3s_layout_for_flat_observations():
    """SB3's ReplayBuffer of the skill-conditioned Ant: 1e6 x (2 x 31 float32 observations + 8 actions + reward,
    done, timeout), whatever dtype the inner env has."""
    config = load_config("ant")
    assert memory.buffer_bytes(config, ANT_OBS, ANT_ACTIONS) == 1_000_000 * (2 * 31 + 8 + 3) * 4


def test_a_run_larger_than_the_machine_is_refused_and_one_that_fits_is_not(monkeypatch):
    monkeypatch.setattr(memory, "machine_memory", lambda: 2 * memory.GIB)
    memory.check_memory(load_config("ant"), ANT_OBS, ANT_ACTIONS)  # 0.29 GiB of buffer, 1.1 MiB of networks
    with pytest.raises(ConfigError, match=r"this run needs at least 2.7 GiB of memory \(replay buffer 2.7 GiB, networks "
                                          r"with their optimiser state 0.0 GiB\), but this machine has 2.0 GiB "
                                          r"\(buffer_size=10000000, .*\); lower buffer_size or the network widths"):
        memory.check_memory(load_config("ant", ["buffer_size=10000000"]), ANT_OBS, ANT_ACTIONS)
    with pytest.raises(ConfigError, match=r"networks with their optimiser state 6.0 GiB"):
        memory.check_memory(load_config("ant", ["net_width=10000"]), ANT_OBS, ANT_ACTIONS)


def test_networks_on_a_gpu_are_checked_against_its_memory(monkeypatch):
    monkeypatch.setattr(memory, "machine_memory", lambda: 64 * memory.GIB)
    monkeypatch.setattr(memory, "gpu_memory", lambda device: memory.GIB)
    with pytest.raises(ConfigError, match=r"the networks need at least 6.0 GiB of GPU memory .* but cuda has 1.0 GiB"):
        memory.check_memory(load_config("ant", ["net_width=10000"]), ANT_OBS, ANT_ACTIONS, device="cuda")


def test_the_machine_has_some_memory():
    assert memory.machine_memory() > memory.GIB
