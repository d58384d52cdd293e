"""A replay buffer for frame-stacked pixel observations that stores every frame once.

Pixel METRA observes 3 stacked 64 x 64 x 3 uint8 frames (``(64, 64, 9)`` channels-last, oldest frame first; SB3
hands them on channels-first, ``(9, 64, 64)``, after its ``VecTransposeImage``) and keeps 3e5 transitions. SB3's
``DictReplayBuffer`` stores the observation and the next observation stacks of every transition: 3e5 x 2 x 36,864
bytes = 22 GB. :class:`FrameStackReplayBuffer` stores each frame once (about 12,288 bytes per transition, 3.8 GB
for 3e5) and rebuilds both stacks when it samples.

Layout. Each environment has a ring of ``frames_per_env`` frames, written in order:

- when the observation handed to :meth:`add` is not the stack ending at that environment's last written frame
  (the first step of an episode, or of the buffer, or after anything else that broke the chain), all ``stack``
  frames of the observation are written (the reset stack as the environment made it: the first frame repeated
  for a wrapper that refills on reset, zeros for SB3's ``VecFrameStack``: whatever it was, it is kept exactly);
- then the newest frame of the next observation (the ``terminal_observation`` at the end of an episode, as SB3's
  ``_store_transition`` passes it) is written.

So the observation of a transition is the ``stack`` consecutive ring frames ending at its recorded frame index,
and its next observation the ``stack`` frames one further on: a sample gathers ``stack + 1`` frames, and a stack
never reaches into another episode. The check "is this the stack I already hold" compares bytes, so it needs no
done flags and stays exact after a reset, an interrupted collection, or a repeated ``learn()``; a next observation
whose older frames are not the observation's newer ones (not a frame stack) raises ``ValueError``.

Wrap-around. Transitions live in SB3's ring (``buffer_size // n_envs`` slots per environment, overwritten oldest
first); frames in their own ring of ``frames_per_env`` per environment, which also overwrites its oldest frames. An
episode costs ``stack`` frames more than its transitions, so ``frames_per_env`` defaults to the transition slots plus
``stack`` frames per ``min_episode_length`` transitions (1.5 % more for 200-step episodes, 3 % at the default
100). A transition one of whose frames has been overwritten (only possible among the oldest, and only when
episodes are shorter than ``min_episode_length`` on average) is never sampled: :meth:`sample` draws uniformly over
the transitions whose frames are all present (:meth:`n_sampleable`), so the buffer then holds fewer usable
transitions, never a wrong stack.

Everything else (actions, rewards, dones, timeouts, and the vector entries of a Dict observation such as the
skill, for the observation and the next observation) is stored per transition as SB3 does, and
``handle_timeout_termination`` works as in SB3's ``ReplayBuffer``. Samples are uint8 pixels (SB3's policies divide by
255, see :mod:`pretrain.algorithms.common.pixel_encoder`) on ``self.device``. The object pickles, so SB3's
``save_replay_buffer`` / ``load_replay_buffer`` work.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import BaseBuffer, ReplayBuffer
from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape, is_image_space_channels_first
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

try:
    import psutil
except ImportError:  # pragma: no cover
    psutil = None

Spec = tuple[tuple[int, ...], np.dtype]


def _image_space(observation_space: spaces.Space, pixels_key: str) -> spaces.Box:
    space = observation_space[pixels_key] if isinstance(observation_space, spaces.Dict) else observation_space
    if not (isinstance(space, spaces.Box) and len(space.shape) == 3 and space.dtype == np.uint8):
        raise ValueError(f"FrameStackReplayBuffer needs a uint8 (H, W, C) or (C, H, W) image space"
                         f"{f' under {pixels_key!r}' if isinstance(observation_space, spaces.Dict) else ''}, "
                         f"got {space}")
    return space


def _layout(buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space, n_envs: int,
            pixels_key: str, frame_channels: int, min_episode_length: int,
            frames_per_env: int | None) -> tuple[dict[str, Any], dict[str, Spec]]:
    """Geometry and the (shape, dtype) of every array, without allocating anything."""
    image = _image_space(observation_space, pixels_key)
    channels_first = bool(is_image_space_channels_first(image))
    if channels_first:
        channels, height, width = image.shape
    else:
        height, width, channels = image.shape
    if frame_channels < 1 or channels % frame_channels:
        raise ValueError(f"{channels} image channels are not a whole number of {frame_channels}-channel frames")
    stack = channels // frame_channels
    slots = max(buffer_size // n_envs, 1)
    if frames_per_env is None:
        if min_episode_length < 1:
            raise ValueError(f"min_episode_length must be >= 1, got {min_episode_length}")
        frames_per_env = slots + stack * math.ceil(slots / min_episode_length) + stack + 1
    if frames_per_env < stack + 1:
        raise ValueError(f"frames_per_env must be at least stack + 1 = {stack + 1}, got {frames_per_env}")
    frame_shape = (frame_channels, height, width) if channels_first else (height, width, frame_channels)
    specs: dict[str, Spec] = {
        "frames": ((frames_per_env, n_envs, *frame_shape), np.dtype(np.uint8)),
        "obs_end": ((slots, n_envs), np.dtype(np.int64)),
        "frame_count": ((n_envs,), np.dtype(np.int64)),
    }
    vector_keys = [key for key in observation_space.spaces if key != pixels_key] \
        if isinstance(observation_space, spaces.Dict) else []
    for key in vector_keys:
        sub = observation_space[key]
        shape = get_obs_shape(sub)
        specs[f"obs:{key}"] = ((slots, n_envs, *shape), np.dtype(sub.dtype))
        specs[f"next_obs:{key}"] = ((slots, n_envs, *shape), np.dtype(sub.dtype))
    action_dtype = np.dtype(np.float32) if action_space.dtype == np.float64 else np.dtype(action_space.dtype)
    specs["actions"] = ((slots, n_envs, get_action_dim(action_space)), action_dtype)
    for name in ("rewards", "dones", "timeouts"):
        specs[name] = ((slots, n_envs), np.dtype(np.float32))
    geometry = {"slots": slots, "stack": stack, "frames_per_env": int(frames_per_env), "frame_shape": frame_shape,
                "frame_channels": frame_channels, "channels_first": channels_first, "image_shape": tuple(image.shape),
                "height": height, "width": width, "vector_keys": vector_keys}
    return geometry, specs


class FrameStackReplayBuffer(ReplayBuffer):
    """SB3 replay buffer for frame-stacked uint8 image observations (a plain image Box, or a Dict of one image and
    vector entries such as the skill) that stores each frame once and rebuilds the stacks at sample time.

    A :class:`ReplayBuffer` for SB3 (whose ``load_replay_buffer`` accepts nothing else, so that a resumed pixel run
    gets its buffer back), with its own storage: ``ReplayBuffer.__init__``, which would allocate SB3's arrays, is
    not run.

    :param buffer_size: transitions kept, all environments together (``buffer_size // n_envs`` per environment,
        as in SB3).
    :param observation_space: ``Box(0, 255, (H, W, k*C) or (k*C, H, W), uint8)`` holding ``k`` stacked frames of
        ``C = frame_channels`` channels, oldest first, or a ``Dict`` with such a Box under ``pixels_key``.
    :param action_space: the action space.
    :param device: where sampled tensors go.
    :param n_envs: parallel environments (``add`` takes arrays with a leading ``n_envs`` axis).
    :param optimize_memory_usage: accepted for SB3's constructor call and ignored (frames are stored once anyway).
    :param handle_timeout_termination: sampled dones are ``done * (1 - TimeLimit.truncated)``, as in SB3.
    :param pixels_key: the image entry of a Dict observation.
    :param frame_channels: channels of one frame (3 for RGB).
    :param min_episode_length: sizes the frame ring (see the module docstring); ignored if ``frames_per_env`` is
        given. Shorter episodes on average make the oldest transitions unsampleable, never wrong.
    :param frames_per_env: frames kept per environment.
    """

    observation_space: spaces.Space

    def __init__(self, buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space,
                 device: th.device | str = "auto", n_envs: int = 1, optimize_memory_usage: bool = False,
                 handle_timeout_termination: bool = True, pixels_key: str = "pixels", frame_channels: int = 3,
                 min_episode_length: int = 100, frames_per_env: int | None = None) -> None:
        BaseBuffer.__init__(self, buffer_size, observation_space, action_space, device, n_envs=n_envs)
        geometry, specs = _layout(buffer_size, observation_space, action_space, n_envs, pixels_key, frame_channels,
                                  min_episode_length, frames_per_env)
        self.is_dict = isinstance(observation_space, spaces.Dict)
        self.pixels_key = pixels_key
        self.buffer_size = geometry["slots"]
        self.n_stack: int = geometry["stack"]
        self.frames_per_env: int = geometry["frames_per_env"]
        self.frame_channels: int = geometry["frame_channels"]
        self.channels_first: bool = geometry["channels_first"]
        self.image_shape: tuple[int, ...] = geometry["image_shape"]
        self.frame_shape: tuple[int, ...] = geometry["frame_shape"]
        self.vector_keys: list[str] = geometry["vector_keys"]
        self.optimize_memory_usage = False
        self.handle_timeout_termination = handle_timeout_termination
        self._specs = specs
        # np.zeros of a large array maps zero pages lazily: memory is touched only as the buffer fills.
        arrays = {name: np.zeros(shape, dtype=dtype) for name, (shape, dtype) in specs.items()}
        self.frames, self.obs_end, self.frame_count = arrays["frames"], arrays["obs_end"], arrays["frame_count"]
        self.observations = {key: arrays[f"obs:{key}"] for key in self.vector_keys}
        self.next_observations = {key: arrays[f"next_obs:{key}"] for key in self.vector_keys}
        self.actions, self.rewards = arrays["actions"], arrays["rewards"]
        self.dones, self.timeouts = arrays["dones"], arrays["timeouts"]
        if psutil is not None:
            total, available = self.nbytes, psutil.virtual_memory().available
            if total > available:
                warnings.warn(f"This system does not have apparently enough memory to store the complete replay "
                              f"buffer {total / 1e9:.2f}GB > {available / 1e9:.2f}GB", stacklevel=2)

    # ----------------------------------------------------------------------------------------------- memory
    @staticmethod
    def memory_bytes(buffer_size: int, observation_space: spaces.Space, action_space: spaces.Space, n_envs: int = 1,
                     pixels_key: str = "pixels", frame_channels: int = 3, min_episode_length: int = 100,
                     frames_per_env: int | None = None) -> dict[str, int]:
        """Bytes of every array a buffer with these arguments holds (and ``"total"``), computed from the shapes
        without allocating."""
        _, specs = _layout(buffer_size, observation_space, action_space, n_envs, pixels_key, frame_channels,
                           min_episode_length, frames_per_env)
        sizes = {name: int(np.prod(shape)) * dtype.itemsize for name, (shape, dtype) in specs.items()}
        return {**sizes, "total": sum(sizes.values())}

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {"frames": self.frames, "obs_end": self.obs_end, "frame_count": self.frame_count,
                  "actions": self.actions, "rewards": self.rewards, "dones": self.dones, "timeouts": self.timeouts}
        for key in self.vector_keys:
            arrays[f"obs:{key}"], arrays[f"next_obs:{key}"] = self.observations[key], self.next_observations[key]
        return arrays

    @property
    def nbytes(self) -> int:
        """Bytes of all the buffer's arrays (their full size, filled or not)."""
        return sum(array.nbytes for array in self._arrays().values())

    # ------------------------------------------------------------------------------------------------ frames
    def _frames_of(self, stacked: np.ndarray) -> np.ndarray:
        """One environment's stacked image as ``(stack, *frame_shape)`` (a view), oldest frame first."""
        if self.channels_first:
            return stacked.reshape(self.n_stack, *self.frame_shape)
        height, width = self.image_shape[0], self.image_shape[1]
        return np.moveaxis(stacked.reshape(height, width, self.n_stack, self.frame_channels), 2, 0)

    def _ring(self, first: int, count: int) -> np.ndarray:
        return np.arange(first, first + count) % self.frames_per_env

    def _holds_stack(self, env: int, frames: np.ndarray) -> bool:
        """Whether the last ``stack`` frames written for ``env`` are ``frames``."""
        count = int(self.frame_count[env])
        if count < self.n_stack:
            return False
        return bool(np.array_equal(self.frames[self._ring(count - self.n_stack, self.n_stack), env], frames))

    def _write(self, env: int, frames: np.ndarray) -> None:
        count = int(self.frame_count[env])
        self.frames[self._ring(count, len(frames)), env] = frames
        self.frame_count[env] = count + len(frames)

    # -------------------------------------------------------------------------------------------------- add
    def add(self, obs: np.ndarray | dict[str, np.ndarray], next_obs: np.ndarray | dict[str, np.ndarray],
            action: np.ndarray, reward: np.ndarray, done: np.ndarray, infos: list[dict[str, Any]]) -> None:
        pixels = obs[self.pixels_key] if self.is_dict else obs
        next_pixels = next_obs[self.pixels_key] if self.is_dict else next_obs
        pixels = np.asarray(pixels).reshape(self.n_envs, *self.image_shape)
        next_pixels = np.asarray(next_pixels).reshape(self.n_envs, *self.image_shape)
        for env in range(self.n_envs):
            frames, next_frames = self._frames_of(pixels[env]), self._frames_of(next_pixels[env])
            if not np.array_equal(frames[1:], next_frames[:-1]):
                raise ValueError(f"environment {env}: the next observation's older frames are not the observation's "
                                 "newer frames; FrameStackReplayBuffer needs frame-stacked observations (oldest "
                                 "frame first) and, at an episode end, the terminal observation as next_obs")
            if not self._holds_stack(env, frames):
                self._write(env, frames)
            self._write(env, next_frames[-1:])
            self.obs_end[self.pos, env] = self.frame_count[env] - 2
        for key in self.vector_keys:
            shape = (self.n_envs, *self.observations[key].shape[2:])
            self.observations[key][self.pos] = np.asarray(obs[key]).reshape(shape)
            self.next_observations[key][self.pos] = np.asarray(next_obs[key]).reshape(shape)
        self.actions[self.pos] = np.asarray(action).reshape(self.n_envs, self.action_dim)
        self.rewards[self.pos] = np.asarray(reward).reshape(self.n_envs)
        self.dones[self.pos] = np.asarray(done).reshape(self.n_envs)
        if self.handle_timeout_termination:
            self.timeouts[self.pos] = np.array([info.get("TimeLimit.truncated", False) for info in infos])
        self.pos += 1
        if self.pos == self.buffer_size:
            self.full = True
            self.pos = 0

    def reset(self) -> None:
        super().reset()
        self.frame_count[:] = 0

    # ----------------------------------------------------------------------------------------------- sample
    def n_sampleable_per_env(self) -> np.ndarray:
        """Per environment, how many of its most recent transitions still have all their frames (the others,
        the oldest, are never sampled)."""
        size = self.size()
        counts = np.zeros(self.n_envs, dtype=np.int64)
        if size == 0:
            return counts
        for env in range(self.n_envs):
            # the first frame of a transition's observation stack must not have been overwritten
            oldest_needed = int(self.frame_count[env]) - self.frames_per_env + self.n_stack - 1
            obs_end = self.obs_end[:, env]

            def valid(age: int, obs_end=obs_end, oldest_needed=oldest_needed) -> bool:
                return bool(obs_end[(self.pos - 1 - age) % self.buffer_size] >= oldest_needed)

            if valid(size - 1):
                counts[env] = size
                continue
            low, high = 0, size - 1  # valid(low - 1) holds (or low == 0); valid(high) fails
            while low < high:
                mid = (low + high) // 2
                if valid(mid):
                    low = mid + 1
                else:
                    high = mid
            counts[env] = low
        return counts

    def n_sampleable(self) -> int:
        """Transitions :meth:`sample` can return (``size() * n_envs`` unless frames ran out, see the module)."""
        return int(self.n_sampleable_per_env().sum())

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples | ReplayBufferSamples:
        """``batch_size`` transitions drawn uniformly (with replacement) from the sampleable ones."""
        counts = self.n_sampleable_per_env()
        total = int(counts.sum())
        if total == 0:
            raise ValueError("the replay buffer holds no transition to sample")
        draws = np.random.randint(0, total, size=batch_size)
        ends = np.cumsum(counts)
        env_indices = np.searchsorted(ends, draws, side="right")
        ages = draws - (ends - counts)[env_indices]
        batch_inds = (self.pos - 1 - ages) % self.buffer_size
        return self._get_samples(batch_inds, env=env, env_indices=env_indices)

    def _stacks(self, batch_inds: np.ndarray, env_indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The observation and next-observation stacks of these transitions (uint8, the observation space's
        layout), from ``stack + 1`` consecutive ring frames each."""
        stack = self.n_stack
        first = self.obs_end[batch_inds, env_indices] - (stack - 1)
        oldest_kept = self.frame_count[env_indices] - self.frames_per_env
        if np.any(first < oldest_kept) or np.any(first < 0):
            raise ValueError("a requested transition has overwritten frames (see n_sampleable)")
        ring = (first[:, None] + np.arange(stack + 1)) % self.frames_per_env
        envs = env_indices[:, None]
        batch = len(batch_inds)
        if self.channels_first:
            # two gathers straight into contiguous (B, stack, fc, H, W) arrays beat one gather of stack + 1 frames
            # and two contiguous copies (by how much: benchmarks/README.md, "DeepMind Control with pixels")
            return (self.frames[ring[:, :stack], envs].reshape(batch, *self.image_shape),
                    self.frames[ring[:, 1:], envs].reshape(batch, *self.image_shape))
        # (B, stack + 1, H, W, fc) -> (B, H, W, stack + 1, fc) -> channels-last stacks
        moved = self.frames[ring, envs].transpose(0, 2, 3, 1, 4)
        return (moved[:, :, :, :stack].reshape(batch, *self.image_shape),
                moved[:, :, :, 1:].reshape(batch, *self.image_shape))

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None,
                     env_indices: np.ndarray | None = None) -> DictReplayBufferSamples | ReplayBufferSamples:
        batch_inds = np.asarray(batch_inds)
        if env_indices is None:
            env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        env_indices = np.asarray(env_indices)
        pixels, next_pixels = self._stacks(batch_inds, env_indices)
        dones = (self.dones[batch_inds, env_indices] * (1 - self.timeouts[batch_inds, env_indices])).reshape(-1, 1)
        rewards = self._normalize_reward(self.rewards[batch_inds, env_indices].reshape(-1, 1), env)
        actions = self.actions[batch_inds, env_indices]
        if not self.is_dict:
            return ReplayBufferSamples(
                observations=self.to_torch(self._normalize_obs(pixels, env), copy=False),
                actions=self.to_torch(actions, copy=False),
                next_observations=self.to_torch(self._normalize_obs(next_pixels, env), copy=False),
                dones=self.to_torch(dones, copy=False), rewards=self.to_torch(rewards, copy=False))
        obs = {self.pixels_key: pixels,
               **{key: self.observations[key][batch_inds, env_indices] for key in self.vector_keys}}
        next_obs = {self.pixels_key: next_pixels,
                    **{key: self.next_observations[key][batch_inds, env_indices] for key in self.vector_keys}}
        obs, next_obs = self._normalize_obs(obs, env), self._normalize_obs(next_obs, env)
        return DictReplayBufferSamples(
            observations={key: self.to_torch(value, copy=False) for key, value in obs.items()},
            actions=self.to_torch(actions, copy=False),
            next_observations={key: self.to_torch(value, copy=False) for key, value in next_obs.items()},
            dones=self.to_torch(dones, copy=False), rewards=self.to_torch(rewards, copy=False))
