"""Every metra env pickles and deep-copies as a fresh environment built from its constructor arguments."""

import copy
import pickle
import shutil

import gymnasium as gym
import numpy as np
import pytest

import metra_gym  # noqa: F401
from metra_gym.skill_checkpoint.hub import resolve_checkpoint
from metra_gym.skill_env import SkillEnv
from metra_gym.skill_policy import SkillPolicy


def _rollout(env, steps=3):
    obs, _ = env.reset(seed=7)
    out, rewards = [obs], []
    action_rng = np.random.default_rng(3)
    for _ in range(steps):
        space = env.action_space
        if isinstance(space, gym.spaces.Discrete):
            action = int(action_rng.integers(space.n))
        else:
            action = action_rng.uniform(-1, 1, space.shape).astype(np.float32)
        obs, reward, *_ = env.step(action)
        out.append(obs)
        rewards.append(reward)
    return np.stack(out), np.array(rewards)


def _pickled(env):
    return pickle.loads(pickle.dumps(env))


@pytest.mark.parametrize("copier", [_pickled, copy.deepcopy], ids=["pickle", "deepcopy"])
@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("metra/Ant-v0", {"reset_noise_scale": 0.2}),
    ("metra/HalfCheetah-v0", {}),
    ("metra/PointMass-v0", {"max_speed": 0.5}),
    ("metra/AntMultiGoals-v0", {"goal_range": 5.0}),
    ("metra/HalfCheetahGoal-v0", {"goal_radius": 2.0}),
    ("metra/HalfCheetahHurdle-v0", {"n_hurdles": 5}),
    ("metra/HalfCheetahHurdle-v1", {"reset_noise_scale": 0.2}),
    ("metra/HalfCheetahSkills-v0", {"skill_steps": 2}),
])
def test_round_trip_gives_the_same_environment(env_id, kwargs, copier):
    env = gym.make(env_id, **kwargs)
    clone = copier(env)
    assert clone.unwrapped is not env.unwrapped and type(clone.unwrapped) is type(env.unwrapped)
    # Constructor arguments survive: a custom argument still applies in the copy.
    for name, value in kwargs.items():
        if hasattr(env.unwrapped, name):
            assert getattr(clone.unwrapped, name) == value
    expected_obs, expected_rewards = _rollout(env)
    obs, rewards = _rollout(clone)
    np.testing.assert_array_equal(obs, expected_obs)
    np.testing.assert_array_equal(rewards, expected_rewards)


def test_skill_env_pickles_its_checkpoint_reference_not_its_tensors(tmp_path, monkeypatch):
    folder = tmp_path / "ckpt"
    shutil.copytree(resolve_checkpoint("ant"), folder)
    monkeypatch.chdir(tmp_path)
    env = SkillEnv("metra/Ant-v0", checkpoint="ckpt", skill_steps=2)  # a relative folder
    data = pickle.dumps(env)
    assert b"actor.latent" not in data and str(folder.resolve()).encode() in data
    monkeypatch.chdir("/")  # the reference is absolute: it still names the checkpoint from elsewhere
    clone = pickle.loads(data)
    assert clone.policy.reference == str(folder.resolve()) and clone.policy.source == "ckpt"
    assert clone.skill_steps == 2 and clone.policy is not env.policy
    np.testing.assert_array_equal(_rollout(clone)[0], _rollout(env)[0])
    # The copy reloads the files, verified like any load: a changed checkpoint is not silently used.
    (folder / "model.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(ValueError, match="truncated or corrupted"):
        pickle.loads(data)


def test_policy_without_a_checkpoint_pickles_its_weights():
    loaded = SkillPolicy.from_pretrained("ant")
    weights = {f"{p}.{k}": v for p, m in (("actor", loaded.actor), ("phi", loaded.phi_net))
               for k, v in m.state_dict().items()}
    policy = SkillPolicy(loaded.config, weights, source="in memory")
    clone = copy.deepcopy(policy)
    obs = np.random.default_rng(0).standard_normal((3, 29)).astype(np.float32)
    np.testing.assert_array_equal(clone.act(obs, [0.6, 0.8]), loaded.act(obs, [0.6, 0.8]))
    assert clone.source == "in memory" and clone.reference is None
