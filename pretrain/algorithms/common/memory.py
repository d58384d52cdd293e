"""The memory a model needs at least, checked against the machine before anything is allocated.

A replay buffer or networks larger than the machine fail late and obscurely: numpy or torch raise an allocator
error, or (with Linux's overcommit) the buffer is allocated lazily and the run dies hours later when it fills. The
estimate here is a lower bound (the replay buffer, and the weights, gradients and Adam moments of the policy, two
critics and one phi-sized network; no activations, target networks or encoders), so a run it refuses cannot fit.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from gymnasium import spaces

from pretrain.config import ConfigError, PretrainConfig

GIB = 2**30
COPIES_PER_PARAMETER = 4  # the weight, its gradient and Adam's two moments, float32 each
FLOAT32_BYTES = 4
RGB_CHANNELS = 3  # the pixel replay buffer stores each RGB frame once


def _mlp_parameters(in_dim: int, hidden: list[int], out_dim: int) -> int:
    sizes = [in_dim, *hidden, out_dim]
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


def network_bytes(config: PretrainConfig, obs_dim: int, action_dim: int,
                  hidden: tuple[list[int], list[int], list[int]] | None = None) -> int:
    """Lower bound of the memory of the networks with their optimiser state.

    :param hidden: the hidden widths of the actor, the critics and the learner's network (default: the config's).
    """
    actor_hidden, critic_hidden, learner_hidden = hidden or (config.hidden, config.critic_hidden, config.phi_hidden)
    actor = _mlp_parameters(obs_dim + config.skill_dim, actor_hidden, 2 * action_dim)  # mean and log-std heads
    critics = 2 * _mlp_parameters(obs_dim + config.skill_dim + action_dim, critic_hidden, 1)
    phi = _mlp_parameters(obs_dim, learner_hidden, config.skill_dim)
    return (actor + critics + phi) * FLOAT32_BYTES * COPIES_PER_PARAMETER


def buffer_bytes(config: PretrainConfig, observation_space: spaces.Space, action_space: spaces.Space) -> int:
    """Lower bound of the replay buffer's memory: SB3's layout for flat observations (observation and next
    observation with the skill appended, float32 as the skill-conditioned environment gives them; action, reward,
    done and timeout as float32), one RGB frame per transition for image observations."""
    action_dim = int(np.prod(action_space.shape))
    scalars = (action_dim + 3) * FLOAT32_BYTES
    shape = observation_space.shape
    if len(shape) == 3:  # (H, W, C) images: frames stored once
        per_transition = shape[0] * shape[1] * RGB_CHANNELS + config.skill_dim * FLOAT32_BYTES + scalars
    else:
        per_transition = 2 * (int(np.prod(shape)) + config.skill_dim) * FLOAT32_BYTES + scalars
    return config.buffer_size * per_transition


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the physical memory, or the cgroup's limit when lower (containers).
    None where neither can be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = int(Path(limit_file).read_text().strip())  # "max" (no limit) is not an int
        except (OSError, ValueError):
            continue
        total = limit if total is None else min(total, limit)
        break
    return total


def gpu_memory(device: str) -> int | None:
    """Bytes of memory of a CUDA device, None for the CPU."""
    if not device.startswith("cuda"):
        return None
    import torch as th

    return int(th.cuda.get_device_properties(th.device(device)).total_memory)


def check_memory(config: PretrainConfig, observation_space: spaces.Space, action_space: spaces.Space,
                 device: str = "cpu", hidden: tuple[list[int], list[int], list[int]] | None = None) -> None:
    """Refuse a config whose replay buffer and networks cannot fit in this machine's memory (networks on a GPU:
    in its memory), with one line giving the estimate and the keys to lower.

    :param config: the run's configuration.
    :param observation_space: one environment's observation space (without the skill).
    :param action_space: its action space.
    :param device: the resolved torch device of the networks.
    :param hidden: the hidden widths of the actor, the critics and the learner's network (default: the config's).
    :raises ConfigError: when the lower bound exceeds the memory available.
    """
    flat_dim = int(np.prod(observation_space.shape)) if len(observation_space.shape) == 1 else 0
    action_dim = int(np.prod(action_space.shape))
    networks = network_bytes(config, flat_dim, action_dim, hidden)
    buffer = buffer_bytes(config, observation_space, action_space)
    ram, gpu = machine_memory(), gpu_memory(device)
    widths = (f"net_width={config.net_width}, critic_width={config.critic_width}, phi_width={config.phi_width}, "
              f"net_layers={config.net_layers}" if hidden is None else
              "hidden widths {} (actor), {} (critics), {} (skill learner)".format(*hidden))
    keys = f"buffer_size={config.buffer_size}, {widths}"
    on_cpu = buffer + (networks if gpu is None else 0)
    if ram is not None and on_cpu > ram:
        raise ConfigError(f"this run needs at least {_gib(on_cpu)} of memory (replay buffer {_gib(buffer)}"
                          + ("" if gpu is not None else f", networks with their optimiser state {_gib(networks)}")
                          + f"), but this machine has {_gib(ram)} ({keys}); lower buffer_size or the network widths")
    if gpu is not None and networks > gpu:
        raise ConfigError(f"the networks need at least {_gib(networks)} of GPU memory with their optimiser state, but "
                          f"{device} has {_gib(gpu)} ({keys}); lower the network widths")


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / GIB:,.1f} GiB"
