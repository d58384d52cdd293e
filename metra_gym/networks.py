"""The networks a skill checkpoint holds: the skill policy's mean path and the representation phi.

Shared by the trainer (``pretrain``) and the runtime loader so both build exactly the same modules.
Imports torch, so :mod:`metra_gym` imports this module only when a checkpoint is loaded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

_THREADS_LOCK = threading.RLock()


def _new_lock_after_fork() -> None:
    # A child forked while another thread of the parent held the lock would otherwise wait for it forever.
    global _THREADS_LOCK
    _THREADS_LOCK = threading.RLock()


if hasattr(os, "register_at_fork"):  # POSIX only; there is no fork elsewhere
    os.register_at_fork(after_in_child=_new_lock_after_fork)


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run the torch operations inside on one intra-op thread, then restore the caller's thread count.

    Why: torch's CPU kernels (MKL, ATen) run parallel regions on GNU OpenMP, whose thread pool starts at the first
    parallel region of a process. A process forked after that (Gymnasium's ``AsyncVectorEnv`` and SB3's
    ``SubprocVecEnv`` with the default ``fork`` start method) inherits the pool's bookkeeping but not its threads,
    and its first parallel region waits forever in an OpenMP barrier. With one thread torch never opens a parallel
    region: loading and running a skill policy neither starts the pool in a parent nor waits for it in a child (even
    when the parent's own code had started it). For these small MLPs one thread is also the fastest.
    The thread count is process-wide, so concurrent callers of this context are serialised by a lock.
    """
    with _THREADS_LOCK:
        previous = torch.get_num_threads()
        if previous == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, activation: type[nn.Module]) -> nn.Sequential:
    """Linear layers of widths ``hidden`` with ``activation`` between them and a linear output layer."""
    layers: list[nn.Module] = []
    last = in_dim
    for width in hidden:
        layers += [nn.Linear(last, width), activation()]
        last = width
    layers.append(nn.Linear(last, out_dim))
    return nn.Sequential(*layers)


class PhiNetwork(nn.Module):
    """phi: observation -> R^D (ReLU MLP). It never sees the skill.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: D, the size of the latent space.
    :param hidden: hidden layer widths.
    """

    def __init__(self, obs_dim: int, skill_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        self.net = mlp(obs_dim, hidden, skill_dim, nn.ReLU)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


# The hidden activations a skill actor may have, by the name a checkpoint's config.json gives them.
ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


class SkillActor(nn.Module):
    """METRA's skill policy: a tanh-squashed Gaussian whose mean and log-std heads share the hidden layers.

    Mirrors Stable-Baselines3's SAC ``Actor`` (``latent_pi``, ``mu``, ``log_std``) so its weights map one to one.

    :param obs_dim: size of the (normalised) observation.
    :param skill_dim: size of the skill vector appended to it.
    :param action_dim: size of the action.
    :param hidden: hidden layer widths.
    :param activation: of the hidden layers: ``"tanh"`` (the SAC and TQC actors of our training) or ``"relu"``
        (CrossQ's actor, with its batch renormalisation folded into the linear layers at export).
    """

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clamp

    def __init__(self, obs_dim: int, skill_dim: int, action_dim: int, hidden: Sequence[int],
                 activation: str = "tanh") -> None:
        super().__init__()
        self.latent = mlp(obs_dim + skill_dim, hidden[:-1], hidden[-1], ACTIVATIONS[activation])
        self.activation = ACTIVATIONS[activation]()
        self.mu = nn.Linear(hidden[-1], action_dim)
        self.log_std = nn.Linear(hidden[-1], action_dim)

    def forward(self, obs: torch.Tensor, skill: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """Action in [-1, 1]: ``tanh(mean)``, or ``tanh(mean + std * noise)`` when standard-normal noise is given."""
        h = self.activation(self.latent(torch.cat([obs, skill], dim=-1)))
        mean = self.mu(h)
        if noise is not None:
            mean = mean + self.log_std(h).clamp(self.LOG_STD_MIN, self.LOG_STD_MAX).exp() * noise
        return torch.tanh(mean)
