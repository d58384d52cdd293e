"""Segmented replay saves: exact round trips, and a second save writes only the segments that changed."""

import os

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.save_util import save_to_pkl

from pretrain.algorithms.common import replay_segments
from pretrain.algorithms.common.pixel_replay import FrameStackReplayBuffer

N_ENVS = 2


def _fill(buffer, n: int, rng: np.random.Generator) -> None:
    obs_space = buffer.observation_space
    for _ in range(n):
        obs, next_obs = (obs_space.sample(), obs_space.sample()) if isinstance(obs_space, spaces.Dict) else (
            rng.standard_normal((N_ENVS, *obs_space.shape)).astype(np.float32),
            rng.standard_normal((N_ENVS, *obs_space.shape)).astype(np.float32))
        if isinstance(obs_space, spaces.Dict):
            obs = {k: np.stack([v] * N_ENVS) for k, v in obs.items()}
            next_obs = {k: np.stack([v] * N_ENVS) for k, v in next_obs.items()}
        buffer.add(obs, next_obs, rng.uniform(-1, 1, (N_ENVS, 2)).astype(np.float32),
                   rng.standard_normal(N_ENVS).astype(np.float32), rng.uniform(size=N_ENVS) < 0.1,
                   [{"TimeLimit.truncated": bool(t)} for t in rng.uniform(size=N_ENVS) < 0.05])


def _state_buffer(size: int = 40_000) -> ReplayBuffer:
    return ReplayBuffer(size, spaces.Box(-np.inf, np.inf, (31,), np.float32), spaces.Box(-1, 1, (2,), np.float32),
                        device="cpu", n_envs=N_ENVS)


def _assert_same(a, b) -> None:
    assert (a.pos, a.full, a.buffer_size, a.n_envs) == (b.pos, b.full, b.buffer_size, b.n_envs)
    arrays_a, arrays_b = replay_segments._large_arrays(a), replay_segments._large_arrays(b)
    assert arrays_a.keys() == arrays_b.keys() and arrays_a
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key])
        assert arrays_a[key].dtype == arrays_b[key].dtype


def _save(buffer, folder, previous=None, previous_files=None):
    folder.mkdir()
    return replay_segments.save_replay(buffer, folder, previous, previous_files)


def test_round_trip_is_exact_and_samples_the_same(tmp_path):
    buffer = _state_buffer()
    _fill(buffer, 12_000, np.random.default_rng(0))
    _save(buffer, tmp_path / "a")
    loaded = replay_segments.load_replay(tmp_path / "a", "cpu")
    _assert_same(buffer, loaded)
    np.random.seed(3)
    x = buffer.sample(64)
    np.random.seed(3)
    y = loaded.sample(64)
    for u, v in zip(x, y):
        if u is not None:
            np.testing.assert_array_equal(u.numpy(), v.numpy())


def test_second_save_writes_only_changed_segments_and_links_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(replay_segments, "SEGMENT_BYTES", 256 << 10)
    buffer = _state_buffer()
    rng = np.random.default_rng(1)
    _fill(buffer, 5_000, rng)
    first = _save(buffer, tmp_path / "a")
    _fill(buffer, 300, rng)  # 600 transitions into one or two segments of the observations
    second = _save(buffer, tmp_path / "b", tmp_path / "a", first)
    assert first.keys() == second.keys()
    changed = [n for n in second if second[n]["sha256"] != first[n]["sha256"]]
    linked = [n for n in second if os.stat(tmp_path / "b" / n).st_ino == os.stat(tmp_path / "a" / n).st_ino]
    assert changed and linked
    assert set(changed).isdisjoint(linked) and len(changed) + len(linked) == len(second)
    assert len(changed) <= 3 * len(replay_segments._large_arrays(buffer))  # a few per array, not all of them
    for name, info in second.items():  # what state.json will record is what is on disk
        assert os.path.getsize(tmp_path / "b" / name) == info["bytes"]
    _assert_same(buffer, replay_segments.load_replay(tmp_path / "b", "cpu"))
    # the previous state can go: the new one holds its own links
    for path in (tmp_path / "a").iterdir():
        path.unlink()
    _assert_same(buffer, replay_segments.load_replay(tmp_path / "b", "cpu"))


def test_a_recorded_digest_that_does_not_match_is_written_again(tmp_path):
    buffer = _state_buffer()
    _fill(buffer, 3_000, np.random.default_rng(2))
    first = _save(buffer, tmp_path / "a")
    lying = {name: {**info, "sha256": "0" * 64} for name, info in first.items()}
    _save(buffer, tmp_path / "b", tmp_path / "a", lying)
    assert all(os.stat(tmp_path / "b" / n).st_ino != os.stat(tmp_path / "a" / n).st_ino for n in first)


def test_dict_and_frame_stack_buffers_round_trip(tmp_path):
    dict_space = spaces.Dict({"obs": spaces.Box(-1, 1, (64, 64), np.float32), "skill": spaces.Box(-1, 1, (2,))})
    buffer = DictReplayBuffer(2_000, dict_space, spaces.Box(-1, 1, (2,), np.float32), device="cpu", n_envs=N_ENVS)
    _fill(buffer, 300, np.random.default_rng(3))
    _save(buffer, tmp_path / "dict")
    _assert_same(buffer, replay_segments.load_replay(tmp_path / "dict", "cpu"))

    pixels = spaces.Dict({"pixels": spaces.Box(0, 255, (64, 64, 9), np.uint8), "skill": spaces.Box(-1, 1, (2,))})
    frames = FrameStackReplayBuffer(2_000, pixels, spaces.Box(-1, 1, (2,), np.float32), device="cpu",
                                    n_envs=N_ENVS)
    rng = np.random.default_rng(4)
    stack = rng.integers(0, 256, (N_ENVS, 64, 64, 9), dtype=np.uint8)  # 3 frames, oldest first
    skill = rng.uniform(-1, 1, (N_ENVS, 2)).astype(np.float32)
    for _ in range(150):
        new = rng.integers(0, 256, (N_ENVS, 64, 64, 3), dtype=np.uint8)
        next_stack = np.concatenate([stack[..., 3:], new], axis=-1)
        frames.add({"pixels": stack, "skill": skill}, {"pixels": next_stack, "skill": skill},
                   rng.uniform(-1, 1, (N_ENVS, 2)).astype(np.float32), rng.standard_normal(N_ENVS),
                   np.zeros(N_ENVS, bool), [{}] * N_ENVS)
        stack = next_stack
    _save(frames, tmp_path / "frames")
    loaded = replay_segments.load_replay(tmp_path / "frames", "cpu")
    _assert_same(frames, loaded)
    assert isinstance(loaded, FrameStackReplayBuffer)


def test_a_buffer_pickled_whole_still_loads(tmp_path):
    buffer = _state_buffer(20_000)
    _fill(buffer, 100, np.random.default_rng(5))
    save_to_pkl(tmp_path / replay_segments.META, buffer)
    _assert_same(buffer, replay_segments.load_replay(tmp_path, "cpu"))


@pytest.mark.parametrize("size", [1, 7])
def test_small_arrays_stay_in_the_pickle(tmp_path, size):
    buffer = _state_buffer(size * N_ENVS)
    _fill(buffer, size, np.random.default_rng(6))
    assert _save(buffer, tmp_path / "a") == {}
    loaded = replay_segments.load_replay(tmp_path / "a", "cpu")
    np.testing.assert_array_equal(loaded.observations, buffer.observations)
