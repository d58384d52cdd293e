import pickle
from collections import deque

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import SAC
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import DummyVecEnv

from pretrain.algorithms.common.pixel_encoder import PixelFeaturesExtractor
from pretrain.algorithms.common.pixel_replay import FrameStackReplayBuffer

H = W = 10
STACK, SKILL_DIM, ACTION_DIM, N_ENVS = 3, 2, 2, 2


def frame(env: int, episode: int, step: int) -> np.ndarray:
    """A (H, W, 3) frame that encodes (step, episode, env) and whose rows differ (so a transpose shows)."""
    out = np.empty((H, W, 3), np.uint8)
    out[..., 0] = step % 256
    out[..., 1] = episode % 256
    out[..., 2] = (env * 64 + np.arange(H)[:, None] + step // 256) % 256
    return out


class Generator:
    """n_envs frame-stacking environments (the first frame repeated at reset, oldest frame first, channels-last)
    stepped as SB3 would hand them to ``add``; returns the ground truth of every transition, keyed by a unique
    id written into the action."""

    def __init__(self, seed: int, max_length: int, channels_first: bool, truncate_prob: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.max_length, self.channels_first, self.truncate_prob = max_length, channels_first, truncate_prob
        self.episode = [0] * N_ENVS
        self.uid = 0
        self.truth: dict[int, dict] = {}
        self.stacks: list = [None] * N_ENVS
        self.steps, self.lengths, self.skills = [0] * N_ENVS, [0] * N_ENVS, [None] * N_ENVS
        for env in range(N_ENVS):
            self._reset(env)

    def _reset(self, env: int) -> None:
        self.stacks[env] = deque([frame(env, self.episode[env], 0)] * STACK, maxlen=STACK)
        self.steps[env], self.lengths[env] = 0, int(self.rng.integers(1, self.max_length + 1))
        self.skills[env] = self._skill(env)

    def _skill(self, env: int) -> np.ndarray:
        """A vector entry that changes every step, so that obs and next_obs entries differ."""
        return np.array([self.episode[env] + 1000 * env, self.steps[env]], np.float32)

    def _obs(self, stacks) -> np.ndarray:
        images = np.stack([np.concatenate(list(s), axis=-1) for s in stacks])  # (n_envs, H, W, 9)
        return images.transpose(0, 3, 1, 2).copy() if self.channels_first else images

    def step(self, buffer: FrameStackReplayBuffer, dict_obs: bool) -> None:
        obs_pixels, obs_skill = self._obs(self.stacks), np.stack(self.skills)
        actions = np.zeros((N_ENVS, ACTION_DIM), np.float32)
        rewards, dones, infos = np.zeros(N_ENVS, np.float32), np.zeros(N_ENVS, bool), []
        next_stacks = []
        for env in range(N_ENVS):
            self.steps[env] += 1
            self.stacks[env].append(frame(env, self.episode[env], self.steps[env]))
            next_stacks.append(list(self.stacks[env]))
            dones[env] = self.steps[env] == self.lengths[env]
            truncated = bool(dones[env] and self.rng.random() < self.truncate_prob)
            infos.append({"TimeLimit.truncated": truncated})
            actions[env] = [self.uid, -self.uid]
            rewards[env] = 0.5 * self.uid
            self.truth[self.uid] = {"env": env}
            self.uid += 1
        next_pixels = self._obs(next_stacks)  # terminal observations where done, as SB3 passes them
        next_skill = np.stack([self._skill(env) for env in range(N_ENVS)])
        self.skills = list(next_skill)
        for env in range(N_ENVS):
            self.truth[int(actions[env, 0])].update(
                obs=obs_pixels[env].copy(), next_obs=next_pixels[env].copy(), skill=obs_skill[env].copy(),
                next_skill=next_skill[env].copy(), done=bool(dones[env]), timeout=infos[env]["TimeLimit.truncated"],
                reward=float(rewards[env]), episode=self.episode[env])
        if dict_obs:
            buffer.add({"pixels": obs_pixels, "skill": obs_skill}, {"pixels": next_pixels, "skill": next_skill},
                       actions, rewards, dones, infos)
        else:
            buffer.add(obs_pixels, next_pixels, actions, rewards, dones, infos)
        for env in range(N_ENVS):
            if dones[env]:
                self.episode[env] += 1
                self._reset(env)


def make_spaces(channels_first: bool, dict_obs: bool):
    image = spaces.Box(0, 255, (3 * STACK, H, W) if channels_first else (H, W, 3 * STACK), np.uint8)
    obs_space = spaces.Dict({"pixels": image, "skill": spaces.Box(-np.inf, np.inf, (SKILL_DIM,), np.float32)}) \
        if dict_obs else image
    return obs_space, spaces.Box(-1e9, 1e9, (ACTION_DIM,), np.float32)


def fill(buffer_size=100, steps=230, max_length=14, channels_first=False, dict_obs=True, seed=0, **kwargs):
    obs_space, action_space = make_spaces(channels_first, dict_obs)
    buffer = FrameStackReplayBuffer(buffer_size, obs_space, action_space, device="cpu", n_envs=N_ENVS, **kwargs)
    generator = Generator(seed, max_length, channels_first)
    for _ in range(steps):
        generator.step(buffer, dict_obs)
    return buffer, generator


def all_sampleable(buffer: FrameStackReplayBuffer):
    counts = buffer.n_sampleable_per_env()
    slots, envs = [], []
    for env, count in enumerate(counts):
        ages = np.arange(count)
        slots.append((buffer.pos - 1 - ages) % buffer.buffer_size)
        envs.append(np.full(count, env))
    return np.concatenate(slots), np.concatenate(envs)


def check_samples(samples, generator: Generator, dict_obs: bool, handle_timeout: bool = True) -> list[int]:
    """Every sampled transition equals what the environment produced, exactly; returns the sampled ids."""
    obs = samples.observations["pixels"] if dict_obs else samples.observations
    next_obs = samples.next_observations["pixels"] if dict_obs else samples.next_observations
    assert obs.dtype == next_obs.dtype == th.uint8
    uids = samples.actions[:, 0].numpy().astype(int).tolist()
    for row, uid in enumerate(uids):
        truth = generator.truth[uid]
        np.testing.assert_array_equal(obs[row].numpy(), truth["obs"], err_msg=f"obs of transition {uid}")
        np.testing.assert_array_equal(next_obs[row].numpy(), truth["next_obs"], err_msg=f"next_obs of {uid}")
        assert samples.actions[row, 1].item() == -uid
        assert samples.rewards[row, 0].item() == truth["reward"]
        expected_done = truth["done"] and not (handle_timeout and truth["timeout"])
        assert samples.dones[row, 0].item() == float(expected_done)
        if dict_obs:
            np.testing.assert_array_equal(samples.observations["skill"][row].numpy(), truth["skill"])
            np.testing.assert_array_equal(samples.next_observations["skill"][row].numpy(), truth["next_skill"])
    return uids


def frames_of(stacked: np.ndarray, channels_first: bool) -> np.ndarray:
    return stacked.reshape(STACK, 3, H, W) if channels_first else np.moveaxis(stacked.reshape(H, W, STACK, 3), 2, 0)


@pytest.mark.parametrize("channels_first", [False, True])
@pytest.mark.parametrize("dict_obs", [True, False])
def test_round_trip_exact_across_wrap_around(channels_first, dict_obs):
    """n_envs = 2, episodes of 1..14 steps, 230 steps into 50 slots per env (wrapped 4 times): every sampleable
    transition (all of them: the frame ring is ample) rebuilds exactly, and those are the 50 newest per env."""
    buffer, generator = fill(channels_first=channels_first, dict_obs=dict_obs, min_episode_length=2)
    assert buffer.full and buffer.channels_first == channels_first
    assert buffer.n_sampleable() == 100
    slots, envs = all_sampleable(buffer)
    samples = buffer._get_samples(slots, env_indices=envs)
    assert isinstance(samples, DictReplayBufferSamples if dict_obs else ReplayBufferSamples)
    uids = check_samples(samples, generator, dict_obs)
    for env in range(N_ENVS):
        newest = sorted(u for u, t in generator.truth.items() if t["env"] == env)[-buffer.buffer_size:]
        assert sorted(u for u, e in zip(uids, envs) if e == env) == newest
    # sample(): only those, uniformly-ish, and exact
    np.random.seed(0)
    sampled = check_samples(buffer.sample(400), generator, dict_obs)
    assert set(sampled) <= set(uids) and len(set(sampled)) > 80
    # stacks never mix episodes or environments: one (episode, env) per stack; the newest frame is the step's
    obs = samples.observations["pixels"] if dict_obs else samples.observations
    for row, uid in enumerate(uids):
        frames = frames_of(obs[row].numpy(), channels_first)
        channel = (lambda f, c: f[c]) if channels_first else (lambda f, c: f[..., c])
        assert len({int(channel(f, 1).flat[0]) for f in frames}) == 1
        assert {int(channel(f, 2).flat[0]) // 64 for f in frames} == {generator.truth[uid]["env"]}
        assert int(channel(frames[0], 1).flat[0]) == generator.truth[uid]["episode"] % 256


def test_episode_starts_repeat_the_first_frame_and_terminal_next_obs_is_kept():
    buffer, generator = fill(steps=60, buffer_size=200, max_length=5)
    slots, envs = all_sampleable(buffer)
    samples = buffer._get_samples(slots, env_indices=envs)
    uids = check_samples(samples, generator, True)
    starts = [row for row, u in enumerate(uids) if generator.truth[u]["obs"][..., -3].max() == 0]  # newest: step 0
    ends = [row for row, u in enumerate(uids) if generator.truth[u]["done"]]
    assert starts and ends
    for row in starts:  # first frame repeated: all three frames equal
        frames = frames_of(samples.observations["pixels"][row].numpy(), False)
        assert (frames == frames[0]).all()
    for row in ends:  # the terminal frame (one step after the observation's newest) ends next_obs
        obs, next_obs = (x["pixels"][row].numpy() for x in (samples.observations, samples.next_observations))
        assert int(next_obs[0, 0, -3]) == int(obs[0, 0, -3]) + 1
        assert int(next_obs[0, 0, -2]) == int(obs[0, 0, -2])  # same episode


def test_handle_timeout_termination_false_keeps_timeouts_as_dones():
    buffer, generator = fill(steps=80, handle_timeout_termination=False, min_episode_length=2)
    slots, envs = all_sampleable(buffer)
    samples = buffer._get_samples(slots, env_indices=envs)
    check_samples(samples, generator, True, handle_timeout=False)
    assert any(generator.truth[u]["timeout"] for u in samples.actions[:, 0].numpy().astype(int))


def test_short_episodes_never_sample_overwritten_frames():
    """A frame ring too small for episodes this short: the oldest transitions become unsampleable (never wrong)."""
    buffer, generator = fill(steps=230, max_length=3, min_episode_length=100)
    assert buffer.frames_per_env == 50 + 3 * 1 + 3 + 1
    counts = buffer.n_sampleable_per_env()
    assert 0 < counts.min() and counts.max() < 50
    slots, envs = all_sampleable(buffer)
    uids = check_samples(buffer._get_samples(slots, env_indices=envs), generator, True)
    for env in range(N_ENVS):  # the sampleable ones are the newest
        newest = sorted(u for u, t in generator.truth.items() if t["env"] == env)[-counts[env]:]
        assert sorted(u for u, e in zip(uids, envs) if e == env) == newest
    np.random.seed(1)
    assert set(check_samples(buffer.sample(300), generator, True)) <= set(uids)
    # one transition older is really broken: asking for it raises
    env = 0
    older = np.array([(buffer.pos - 1 - counts[env]) % buffer.buffer_size])
    with pytest.raises(ValueError, match="overwritten"):
        buffer._get_samples(older, env_indices=np.array([env]))


def test_not_a_frame_stack_raises():
    obs_space, action_space = make_spaces(False, False)
    buffer = FrameStackReplayBuffer(10, obs_space, action_space, device="cpu", n_envs=1)
    obs = np.zeros((1, H, W, 9), np.uint8)
    next_obs = np.full((1, H, W, 9), 7, np.uint8)  # older frames of next_obs are not the obs's newer ones
    with pytest.raises(ValueError, match="frame-stacked"):
        buffer.add(obs, next_obs, np.zeros((1, 2)), np.zeros(1), np.zeros(1), [{}])


def test_pickles_through_sb3_save_util(tmp_path):
    buffer, generator = fill(steps=130, min_episode_length=2)
    clone = pickle.loads(pickle.dumps(buffer))
    save_to_pkl(tmp_path / "buffer.pkl", buffer)
    loaded = load_from_pkl(tmp_path / "buffer.pkl")
    for other in (clone, loaded):
        np.testing.assert_array_equal(other.frames, buffer.frames)
        assert (other.pos, other.full, other.n_sampleable()) == (buffer.pos, buffer.full, buffer.n_sampleable())
        np.random.seed(3)
        check_samples(other.sample(64), generator, True)
    # and it keeps working after loading
    generator.step(loaded, True)
    np.random.seed(4)
    check_samples(loaded.sample(64), generator, True)


def test_memory_3e5_transitions_is_about_one_frame_each():
    obs_space = spaces.Dict({"pixels": spaces.Box(0, 255, (9, 64, 64), np.uint8),
                             "skill": spaces.Box(-1, 1, (16,), np.float32)})
    action_space = spaces.Box(-1, 1, (21,), np.float32)
    for n_envs in (1, 8):
        memory = FrameStackReplayBuffer.memory_bytes(300_000, obs_space, action_space, n_envs=n_envs)
        per_transition = memory["total"] / 300_000
        frame = 64 * 64 * 3
        assert frame < per_transition < 1.04 * frame + 300, per_transition
        assert memory["total"] <= 4e9
    small = FrameStackReplayBuffer(100, obs_space, action_space, device="cpu", n_envs=2)
    assert small.nbytes == FrameStackReplayBuffer.memory_bytes(100, obs_space, action_space, n_envs=2)["total"]


class TinyPixelEnv(gym.Env):
    """Random 24 x 24 RGB frames stacked 3 deep (channels-last, first frame repeated at reset), with a skill."""

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({"pixels": spaces.Box(0, 255, (24, 24, 9), np.uint8),
                                              "skill": spaces.Box(-1, 1, (2,), np.float32)})
        self.action_space = spaces.Box(-1, 1, (2,), np.float32)

    def _obs(self):
        return {"pixels": np.concatenate(list(self.frames), axis=-1), "skill": self.skill}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.skill = 0, self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.frames = deque([self.np_random.integers(0, 256, (24, 24, 3), dtype=np.uint8)] * 3, maxlen=3)
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.frames.append(self.np_random.integers(0, 256, (24, 24, 3), dtype=np.uint8))
        return self._obs(), 0.0, False, self.t >= 7, {}


def test_sac_trains_with_the_buffer_and_the_pixel_extractor():
    """SB3 wraps the channels-last env in VecTransposeImage; the buffer and the extractor take that layout."""
    env = DummyVecEnv([TinyPixelEnv, TinyPixelEnv])
    model = SAC("MultiInputPolicy", env, buffer_size=60, learning_starts=50, batch_size=8, gradient_steps=1,
                replay_buffer_class=FrameStackReplayBuffer, replay_buffer_kwargs={"min_episode_length": 7}, seed=0,
                device="cpu",
                policy_kwargs={"features_extractor_class": PixelFeaturesExtractor, "net_arch": [16, 16],
                               "features_extractor_kwargs": {"channels": (8, 16, 16)}})
    model.learn(70)
    buffer = model.replay_buffer
    assert isinstance(buffer, FrameStackReplayBuffer) and buffer.channels_first and buffer.full
    assert buffer.n_sampleable() == 60
    samples = buffer.sample(8)
    assert samples.observations["pixels"].shape == (8, 9, 24, 24)
    assert model.actor.features_extractor.features_dim == 16 + 2
