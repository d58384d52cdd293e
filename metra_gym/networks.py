"""The networks a skill checkpoint holds: the skill policy's mean path and the representation phi, each with its
own pixel encoder when the skills were trained on pixels.

Shared by the trainer (``pretrain``) and the runtime loader so both build exactly the same modules.
Imports torch, so :mod:`metra_gym` imports this module only when a checkpoint is loaded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
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


PAPER_CHANNELS = (48, 96, 192, 384)
PAPER_KERNEL, PAPER_STRIDE = 4, 2


def conv_output_size(image_size: int, n_layers: int, kernel_size: int = PAPER_KERNEL,
                     stride: int = PAPER_STRIDE) -> int:
    """Side of the last feature map of ``n_layers`` unpadded convolutions; 0 or less means the image is too small."""
    size = image_size
    for _ in range(n_layers):
        size = (size - kernel_size) // stride + 1
        if size < 1:
            return 0
    return size


class PixelEncoder(nn.Module):
    """The METRA CNN: ``/255`` for uint8 input, then convolutions with ELU, flattened (the pixel convention and the
    official layout: :mod:`pretrain.algorithms.common.pixel_encoder`).

    :param in_channels: channels of the stacked input (frame channels x stack: 9 for 3 RGB frames).
    :param image_size: height (and width unless ``image_width`` is given) of the input.
    :param channels: output channels of each convolution (the paper: 48, 96, 192, 384).
    :param kernel_size: kernel of every convolution (the paper: 4).
    :param stride: stride of every convolution (the paper: 2); no padding.
    :param image_width: width when the image is not square.
    :param check_range: on the first forward call, raise if a float input exceeds 1 (raw pixels must be uint8).

    ``forward`` takes ``(..., C, H, W)`` or ``(..., H, W, C)``, uint8 in [0, 255] or float in [0, 1], and returns
    ``(..., output_dim)`` float32 features.
    """

    def __init__(self, in_channels: int = 9, image_size: int = 64, channels: Sequence[int] = PAPER_CHANNELS,
                 kernel_size: int = PAPER_KERNEL, stride: int = PAPER_STRIDE, image_width: int | None = None,
                 check_range: bool = True) -> None:
        super().__init__()
        channels = tuple(int(c) for c in channels)
        if in_channels < 1 or not channels or min(channels) < 1:
            raise ValueError(f"in_channels and channels must be positive, got {in_channels} and {channels}")
        self.in_channels, self.channels = int(in_channels), channels
        self.image_height, self.image_width = int(image_size), int(image_width or image_size)
        out_h = conv_output_size(self.image_height, len(channels), kernel_size, stride)
        out_w = conv_output_size(self.image_width, len(channels), kernel_size, stride)
        if out_h < 1 or out_w < 1:
            raise ValueError(f"a {self.image_height} x {self.image_width} image is too small for {len(channels)} "
                             f"unpadded convolutions of kernel {kernel_size} and stride {stride}")
        layers: list[nn.Module] = []
        previous = self.in_channels
        for depth in channels:
            layers += [nn.Conv2d(previous, depth, kernel_size, stride=stride), nn.ELU()]
            previous = depth
        self.convs = nn.Sequential(*layers)
        self.output_shape = (channels[-1], out_h, out_w)
        self.output_dim = int(np.prod(self.output_shape))
        self.check_range = check_range
        self._range_checked = False

    def to_channels_first(self, pixels: torch.Tensor) -> torch.Tensor:
        """``pixels`` as ``(N, C, H, W)`` (leading dimensions flattened), in whichever layout it came."""
        c, h, w = self.in_channels, self.image_height, self.image_width
        if pixels.dim() < 3:
            raise ValueError(f"expected (..., {c}, {h}, {w}) or (..., {h}, {w}, {c}) pixels, got {tuple(pixels.shape)}")
        tail = tuple(pixels.shape[-3:])
        if tail == (c, h, w):
            return pixels.reshape(-1, c, h, w)
        if tail == (h, w, c):
            return pixels.reshape(-1, h, w, c).permute(0, 3, 1, 2)
        raise ValueError(f"expected (..., {c}, {h}, {w}) or (..., {h}, {w}, {c}) pixels, got {tuple(pixels.shape)}")

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        lead = pixels.shape[:-3]
        x = self.to_channels_first(pixels)
        if x.dtype == torch.uint8:
            x = x.float().div_(255.0)
        else:
            if self.check_range and not self._range_checked and x.numel():
                if float(x.detach().max()) > 1.0 + 1e-6:
                    raise ValueError("PixelEncoder got float pixels above 1: float input must already be divided by "
                                     "255 (SB3 does so with normalize_images=True); pass raw pixels as uint8")
                self._range_checked = True
            x = x.float()
        return self.convs(x).reshape(*lead, self.output_dim)


def pixel_encoder(spec: dict[str, Any] | None) -> PixelEncoder | None:
    """The encoder a checkpoint's ``pixels`` entry describes (``shape`` ``[H, W, C]``, ``encoder_channels``), or
    None for state skills."""
    if spec is None:
        return None
    height, width, channels = spec["shape"]
    return PixelEncoder(channels, height, spec["encoder_channels"], image_width=width)


class PhiNetwork(nn.Module):
    """phi: observation -> R^D (ReLU MLP; for pixels its own :class:`PixelEncoder` first). It never sees the skill.

    :param obs_dim: size of the (normalised) observation; ignored with an ``encoder`` (its features are the input).
    :param skill_dim: D, the size of the latent space.
    :param hidden: hidden layer widths.
    :param encoder: the pixel encoder, for skills trained on pixels.
    """

    def __init__(self, obs_dim: int, skill_dim: int, hidden: Sequence[int], encoder: PixelEncoder | None = None
                 ) -> None:
        super().__init__()
        self.encoder = encoder
        self.net = mlp(encoder.output_dim if encoder is not None else obs_dim, hidden, skill_dim, nn.ReLU)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(self.encoder(obs) if self.encoder is not None else obs)


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
    :param encoder: the actor's own pixel encoder, for skills trained on pixels (its features replace the
        observation; ``obs_dim`` is then ignored), as SB3's actor with a pixel features extractor.
    """

    LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # SB3's clamp

    def __init__(self, obs_dim: int, skill_dim: int, action_dim: int, hidden: Sequence[int],
                 activation: str = "tanh", encoder: PixelEncoder | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.skill_dim = skill_dim
        features_dim = encoder.output_dim if encoder is not None else obs_dim
        self.latent = mlp(features_dim + skill_dim, hidden[:-1], hidden[-1], ACTIVATIONS[activation])
        self.activation = ACTIVATIONS[activation]()
        self.mu = nn.Linear(hidden[-1], action_dim)
        self.log_std = nn.Linear(hidden[-1], action_dim)

    def forward(self, obs: torch.Tensor, skill: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """Action in [-1, 1]: ``tanh(mean)``, or ``tanh(mean + std * noise)`` when standard-normal noise is given."""
        features = self.encoder(obs) if self.encoder is not None else obs
        h = self.activation(self.latent(torch.cat([features, skill], dim=-1)))
        mean = self.mu(h)
        if noise is not None:
            mean = mean + self.log_std(h).clamp(self.LOG_STD_MIN, self.LOG_STD_MAX).exp() * noise
        return torch.tanh(mean)


class NumpySkillActor:
    """The deterministic action of a state :class:`SkillActor`, ``tanh(mu(h))``, for one raw observation at a time in
    NumPy, with the skill's share of the first layer computed once per skill.

    Why: at batch 1 a torch forward of these small MLPs costs more in per-call overhead (dispatch, autograd checks,
    tensor wrapping) than in arithmetic: 163 us of a 684 us ``AntSkills`` low-level step against a bare Ant step of
    443 us (one thread). The skill env runs one skill for K steps, so the first layer's skill term ``W_z z + b`` is the
    same for all of them (:meth:`skill_bias`). Batches (and sampling, and pixel skills) keep the torch path.

    Float32 throughout, normalised as the torch path does (``(o - mean) / (std + 1e-8)`` in float32); only the order
    of the sums differs, so the two agree to a few 1e-6 per action entry, not bit for bit
    (``tests/metra_gym/test_skill_policy.py`` holds them to 3e-5).

    :param actor: the torch actor (state skills: no pixel encoder), its weights loaded.
    :param normalizer: the observation normaliser (:class:`~metra_gym.envs.normalization.ObservationNormalizer`:
        its ``mean`` and ``std``).
    """

    def __init__(self, actor: SkillActor, normalizer: Any) -> None:
        if actor.encoder is not None:
            raise ValueError("NumpySkillActor runs state skills; pixel skills keep the torch path")
        linears = [layer for layer in actor.latent if isinstance(layer, nn.Linear)] + [actor.mu]

        def numpy(tensor: torch.Tensor) -> np.ndarray:
            return np.ascontiguousarray(tensor.detach().cpu().numpy(), dtype=np.float32)

        first = numpy(linears[0].weight)  # (out, obs + skill)
        # (o - mean) / (std + 1e-8) in float32, as ObservationNormalizer computes it, with the divisor computed once.
        self._mean = np.asarray(normalizer.mean, dtype=np.float32)
        self._divisor = np.asarray(normalizer.std, dtype=np.float32) + np.float32(1e-8)
        self.skill_dim = actor.skill_dim
        self.obs_dim = obs_dim = first.shape[1] - self.skill_dim
        # Weights as (in, out): a row vector times them is one small matrix-vector product each.
        self._obs_weight = np.ascontiguousarray(first[:, :obs_dim].T)
        self._skill_weight = np.ascontiguousarray(first[:, obs_dim:].T)
        self._first_bias = numpy(linears[0].bias)
        self._layers = [(np.ascontiguousarray(numpy(layer.weight).T), numpy(layer.bias)) for layer in linears[1:]]
        self._relu = isinstance(actor.activation, nn.ReLU)

    def skill_bias(self, z: np.ndarray) -> np.ndarray:
        """The first layer's bias with skill ``z``'s share added (``(skill_dim,)``, checked by the caller)."""
        return np.asarray(z, dtype=np.float32) @ self._skill_weight + self._first_bias

    def __call__(self, obs: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """The action in [-1, 1] for one raw observation ``(obs_dim,)`` and a :meth:`skill_bias`."""
        h = ((np.asarray(obs, dtype=np.float32) - self._mean) / self._divisor) @ self._obs_weight + bias
        for weight, layer_bias in self._layers:
            h = np.maximum(h, 0.0) if self._relu else np.tanh(h)
            h = h @ weight + layer_bias
        return np.tanh(h)
