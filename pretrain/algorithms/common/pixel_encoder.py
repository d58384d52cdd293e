"""The pixel encoder of pixel METRA (Park et al., ICLR 2024; the module, :class:`PixelEncoder`, is defined in
:mod:`metra_gym.networks` so that skill checkpoints load without the training code) and an SB3 features extractor
around it.

The official code (``garagei/torch/modules/with_encoder.py``) encodes 3 stacked 64 x 64 x 3 frames (9 channels,
oldest frame first) with ``pixels / 255`` followed by 4 convolutions of kernel 4 and stride 2, no padding, with
48-96-192-384 channels and an ELU after each, flattened: 64 -> 31 -> 14 -> 6 -> 2, so 384 * 2 * 2 = 1536
features. The state part of the input (the skill z for the policy and the critics) is concatenated after the image
features; phi sees the pixels only. Each network (policy, Q1, Q2, phi) has its OWN encoder (four CNNs; SB3's
critic would feed both Q heads from one: see ``pretrain.algorithms.common.policies.FeaturesExtractorPerQCritic``);
there is no augmentation.

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

# The CNN itself lives in the runtime package, which skill checkpoints load without the training code.
from metra_gym.networks import (  # noqa: F401  (re-exported: the CNN's names in the training code)
    PAPER_CHANNELS,
    PAPER_KERNEL,
    PAPER_STRIDE,
    PhiNetwork,
    PixelEncoder,
    conv_output_size,
)


def encoder_channels(channels: Sequence[int] | None) -> tuple[int, ...]:
    """The output channels of the CNN's convolutions: those given (a config's ``encoder_channels``), else the paper's."""
    return tuple(channels or PAPER_CHANNELS)


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


class PixelPhiNetwork(PhiNetwork):
    """phi for pixel observations: its own :class:`PixelEncoder`, then a ReLU MLP to R^D (METRA's phi sees the
    pixels only, never the skill). The runtime's :class:`metra_gym.networks.PhiNetwork` with an encoder, so that a
    skill checkpoint holds its weights under the same names.

    :param encoder: keyword arguments of :class:`PixelEncoder` (``in_channels``, ``image_size``, ``channels``, ...).
    :param skill_dim: D.
    :param hidden: hidden widths of the MLP.
    """

    def __init__(self, encoder: dict, skill_dim: int, hidden: Sequence[int]) -> None:
        super().__init__(0, skill_dim, hidden, encoder=PixelEncoder(**encoder))
