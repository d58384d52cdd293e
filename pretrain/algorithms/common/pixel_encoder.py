"""The pixel encoder of pixel METRA (Park et al., ICLR 2024) and an SB3 features extractor around it.

The official code (``garagei/torch/modules/with_encoder.py``) encodes 3 stacked 64 x 64 x 3 frames (9 channels,
oldest frame first) with ``pixels / 255`` followed by 4 convolutions of kernel 4 and stride 2, no padding, with
48-96-192-384 channels and an ELU after each, flattened: 64 -> 31 -> 14 -> 6 -> 2, so 384 * 2 * 2 = 1536
features. The state part of the input (the skill z for the policy and the critics) is concatenated after the image
features; phi sees the pixels only. Each network (policy, each critic, phi) has its OWN encoder; there is no
augmentation.

Pixel convention (one rule, so that nothing is divided by 255 twice):

- a ``uint8`` tensor holds raw pixels in [0, 255]: :class:`PixelEncoder` divides it by 255 itself;
- a floating-point tensor is taken as ALREADY in [0, 1] (SB3's ``preprocess_obs`` divides image observations by
  255 when the policy's ``normalize_images=True``, its default) and is not divided again.

So inside an SB3 policy keep ``normalize_images=True`` (the default); hand the encoder the ``uint8`` tensors of a
replay-buffer sample directly (phi). A float tensor above 1 on the first forward call raises a ``ValueError`` (the
sign of ``normalize_images=False`` or of a manual ``.float()`` on raw pixels).

Channel order: both channels-first ``(N, C, H, W)`` (what SB3 hands a policy: it wraps a channels-last image
environment in ``VecTransposeImage``, whose transpose keeps the channel order, so frames stay oldest first) and
channels-last ``(N, H, W, C)`` (the environment's own layout) are accepted; the layout is recognised from the
shape. Where both read the same (C == H == W) the input is taken as channels-first.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import is_image_space_channels_first
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

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


def image_layout(space: spaces.Box) -> tuple[int, int, int, bool]:
    """``(channels, height, width, channels_first)`` of a 3-d image space, by SB3's own heuristic (the channel axis
    is the smallest; channels-first if it is the first)."""
    if not isinstance(space, spaces.Box) or len(space.shape) != 3:
        raise ValueError(f"expected a 3-d image Box space, got {space}")
    channels_first = is_image_space_channels_first(space)
    if channels_first:
        c, h, w = space.shape
    else:
        h, w, c = space.shape
    return int(c), int(h), int(w), bool(channels_first)


class PixelEncoder(nn.Module):
    """The METRA CNN: ``/255`` for uint8 input, then convolutions with ELU, flattened.

    :param in_channels: channels of the stacked input (frame channels x stack: 9 for 3 RGB frames).
    :param image_size: height (and width unless ``image_width`` is given) of the input.
    :param channels: output channels of each convolution (the paper: 48, 96, 192, 384).
    :param kernel_size: kernel of every convolution (the paper: 4).
    :param stride: stride of every convolution (the paper: 2); no padding.
    :param image_width: width when the image is not square.
    :param check_range: on the first forward call, raise if a float input exceeds 1 (see the module docstring).

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

    def to_channels_first(self, pixels: th.Tensor) -> th.Tensor:
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

    def forward(self, pixels: th.Tensor) -> th.Tensor:
        lead = pixels.shape[:-3]
        x = self.to_channels_first(pixels)
        if x.dtype == th.uint8:
            x = x.float().div_(255.0)
        else:
            if self.check_range and not self._range_checked and x.numel():
                if float(x.detach().max()) > 1.0 + 1e-6:
                    raise ValueError("PixelEncoder got float pixels above 1: float input must already be divided by "
                                     "255 (SB3 does so with normalize_images=True); pass raw pixels as uint8")
                self._range_checked = True
            x = x.float()
        return self.convs(x).reshape(*lead, self.output_dim)


class PixelFeaturesExtractor(BaseFeaturesExtractor):
    """SB3 features extractor: a :class:`PixelEncoder` on the image, optionally a linear projection, then the other
    (vector) parts of a Dict observation, the skill z, concatenated after the image features.

    :param observation_space: an image Box (uint8, ``(H, W, C)`` or ``(C, H, W)``; SB3 hands channels-first) or a
        Dict holding one under ``pixels_key`` and flat Box entries (the skill) under the other keys, appended in the
        space's key order.
    :param projection_dim: None keeps the encoder's output (1536 at 64 x 64 with the paper's channels); an int
        adds ``nn.Linear(output_dim, projection_dim)`` on the image features (before the skill is appended).
    :param pixels_key: the image entry of a Dict observation.
    :param channels, kernel_size, stride: the CNN (default: the paper's).

    ``features_dim`` = image features (or ``projection_dim``) + the sizes of the other Dict entries. Pixels reach
    it as SB3's ``preprocess_obs`` leaves them (float in [0, 1] with ``normalize_images=True``) or as uint8.
    """

    def __init__(self, observation_space: gym.Space, projection_dim: int | None = None, pixels_key: str = "pixels",
                 channels: Sequence[int] = PAPER_CHANNELS, kernel_size: int = PAPER_KERNEL,
                 stride: int = PAPER_STRIDE) -> None:
        if isinstance(observation_space, spaces.Dict):
            if pixels_key not in observation_space.spaces:
                raise ValueError(f"the Dict observation has no {pixels_key!r} entry: {observation_space}")
            image_space = observation_space[pixels_key]
            extra_keys = [key for key in observation_space.spaces if key != pixels_key]
            for key in extra_keys:
                if not isinstance(observation_space[key], spaces.Box):
                    raise ValueError(f"entry {key!r} must be a Box, got {observation_space[key]}")
            extra_dim = sum(int(np.prod(observation_space[key].shape)) for key in extra_keys)
        else:
            image_space, extra_keys, extra_dim = observation_space, [], 0
        c, h, w, _ = image_layout(image_space)
        encoder = PixelEncoder(c, h, channels, kernel_size, stride, image_width=w)
        image_dim = encoder.output_dim if projection_dim is None else int(projection_dim)
        super().__init__(observation_space, features_dim=image_dim + extra_dim)
        self.encoder = encoder
        self.projection = None if projection_dim is None else nn.Linear(encoder.output_dim, image_dim)
        self.pixels_key = pixels_key if isinstance(observation_space, spaces.Dict) else None
        self.extra_keys = extra_keys

    def forward(self, observations: th.Tensor | dict[str, th.Tensor]) -> th.Tensor:
        pixels = observations[self.pixels_key] if self.pixels_key is not None else observations
        features = self.encoder(pixels)
        if self.projection is not None:
            features = self.projection(features)
        if not self.extra_keys:
            return features
        extras = [observations[key].reshape(features.shape[0], -1).to(features.dtype) for key in self.extra_keys]
        return th.cat([features, *extras], dim=1)


class PixelPhiNetwork(nn.Module):
    """phi for pixel observations: its own :class:`PixelEncoder`, then a ReLU MLP to R^D (METRA's phi sees the
    pixels only, never the skill).

    :param encoder: keyword arguments of :class:`PixelEncoder` (``in_channels``, ``image_size``, ``channels``, ...).
    :param skill_dim: D.
    :param hidden: hidden widths of the MLP.
    """

    def __init__(self, encoder: dict, skill_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        from metra_gym.networks import mlp

        self.encoder = PixelEncoder(**encoder)
        self.head = mlp(self.encoder.output_dim, list(hidden), skill_dim, nn.ReLU)

    def forward(self, pixels: th.Tensor) -> th.Tensor:
        return self.head(self.encoder(pixels))
