import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metra_gym  # noqa: F401

TASK_IDS = ["metra/AntMultiGoals-v0", "metra/HalfCheetahGoal-v0", "metra/HalfCheetahHurdle-v0",
            "metra/HalfCheetahHurdle-v1", "metra/AntMultiGoalsSkills-v0", "metra/HalfCheetahGoalSkills-v0",
            "metra/HalfCheetahHurdleSkills-v0", "metra/HalfCheetahHurdleSkills-v1"]


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_every_task_id_passes_the_checker(env_id):
    check_env(gym.make(env_id).unwrapped, skip_render_check=True)


def _teleport(env, x, y=None):
    qpos, qvel = env.data.qpos.copy(), np.zeros_like(env.data.qvel)
    qpos[0] = x
    if y is not None:
        qpos[1] = y
    env.set_state(qpos, qvel)


def test_ant_goal_reached_within_radius_pays_and_moves_on():
    env = gym.make("metra/AntMultiGoals-v0").unwrapped
    obs, _ = env.reset(seed=0)
    goal = env.goal.copy()
    np.testing.assert_allclose(obs[29:], goal - env.coordinates(), rtol=1e-5)
    assert np.all(np.abs(goal - env.coordinates()) <= 7.5)
    _teleport(env, goal[0] + 1.0, goal[1] + 1.0)  # 1.41 m from the goal: inside the 3 m radius
    obs, reward, terminated, _, info = env.step(np.zeros(8))
    assert (reward, info["goal_reached"], info["goals_done"], terminated) == (2.5, True, 1, False)
    assert not np.allclose(env.goal, goal)
    assert np.all(np.abs(env.goal - env.coordinates()) <= 7.5 + 0.1)
    np.testing.assert_allclose(obs[29:], env.goal - env.coordinates(), rtol=1e-5)


def test_ant_goal_expires_after_50_steps_and_episode_ends_after_4_goals():
    env = gym.make("metra/AntMultiGoals-v0").unwrapped
    env.reset(seed=1)
    rewards, goals_seen, terminated, steps = [], [], False, 0
    while not terminated:
        _teleport(env, env.goal[0] + 20.0, env.goal[1])  # always far from the goal
        _, reward, terminated, _, info = env.step(np.zeros(8))
        rewards.append(reward)
        goals_seen.append(info["goals_done"])
        steps += 1
    assert steps == 200 and sum(rewards) == 0.0 and goals_seen[49] == 1 and goals_seen[-1] == 4


def test_cheetah_goal_pays_10_and_terminates_within_3():
    env = gym.make("metra/HalfCheetahGoal-v0").unwrapped
    obs, _ = env.reset(seed=0)
    assert -100 <= env.goal <= 100 and obs[18] == pytest.approx(env.goal - env.data.qpos[0], abs=1e-4)
    _teleport(env, env.goal + 5.0)
    assert env.step(np.zeros(6))[1:3] == (0.0, False)
    _teleport(env, env.goal + 2.0)
    assert env.step(np.zeros(6))[1:3] == (10.0, True)


def test_hurdles_are_bodies_and_each_counts_once():
    env = gym.make("metra/HalfCheetahHurdle-v0").unwrapped
    obs, _ = env.reset(seed=0)
    hurdle = env.model.geom("hurdle0")
    assert hurdle.type[0] == mujoco.mjtGeom.mjGEOM_BOX and env.model.geom_contype[hurdle.id] == 1
    np.testing.assert_allclose(obs[18:], [5.0, 5.0 - env.data.qpos[0]], rtol=1e-4)
    _teleport(env, 5.3)
    assert env.step(np.zeros(6))[1] == 1.0  # over the first hurdle
    _teleport(env, 5.6)
    assert env.step(np.zeros(6))[1] == 0.0  # still past it: counted once
    _teleport(env, 15.5)
    obs, reward, *_ = env.step(np.zeros(6))
    assert reward == 2.0 and obs[18] == pytest.approx(20.0)  # hurdles at 10 and 15; next one at 20
    _teleport(env, 4.0)
    assert env.step(np.zeros(6))[1] == 0.0  # going back and over again earns nothing


def test_reference_hurdles_are_thin_bars_counted_at_the_back_foot():
    env = gym.make("metra/HalfCheetahHurdle-v1").unwrapped
    obs, _ = env.reset(seed=0)
    first = env.model.geom("hurdle5")  # x = -15, -13, -9, -5, -1 lie behind the start
    np.testing.assert_allclose([env.model.geom_pos[first.id][[0, 2]], env.model.geom_size[first.id][[0, 2]]],
                               [[3.0, 0.20], [0.05, 0.03]])  # a bar from 0.17 to 0.23 m
    foot = env.data.qpos[0] - env.passing_x()  # the back foot trails the root
    assert foot > 0.3 and obs[18] == pytest.approx(3.0) and obs[19] == pytest.approx(3.0 - env.passing_x(), abs=1e-4)
    _teleport(env, 3.0 + foot - 0.05)  # the root is past the bar, the back foot not yet
    assert env.step(np.zeros(6))[1] == 0.0
    _teleport(env, 3.0 + foot + 0.1)
    assert env.step(np.zeros(6))[1] == 1.0
    _teleport(env, 11.0 + foot + 0.1)
    obs, reward, *_ = env.step(np.zeros(6))
    assert reward == 2.0 and obs[18] == pytest.approx(15.0)  # the bars at 7 and 11; the next at 15
    _teleport(env, 2.0)
    assert env.step(np.zeros(6))[1] == -3.0  # going back behind them takes their points away
    _teleport(env, 40.0)
    assert env.step(np.zeros(6))[1] == 7.0  # 7 bars pay, from 3 to 27


@pytest.mark.parametrize("env_id, start", [("metra/HalfCheetahHurdle-v0", 4.0), ("metra/HalfCheetahHurdle-v1", 2.0)])
def test_cheetah_collides_with_a_hurdle_it_runs_into(env_id, start):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    _teleport(env, start)
    qvel = np.zeros_like(env.data.qvel)
    qvel[0] = 6.0  # slide forward at 6 m/s without jumping
    env.set_state(env.data.qpos.copy(), qvel)
    hurdle = min(range(env.model.ngeom), key=lambda g: abs(env.model.geom_pos[g][0] - (start + 1.0))
                 if env.model.geom(g).name.startswith("hurdle") else np.inf)  # the bar 1 m ahead
    touched = set()
    for _ in range(6):
        env.step(np.zeros(6))
        for contact in env.data.contact[: env.data.ncon]:
            if hurdle in (contact.geom1, contact.geom2):
                touched.add(env.model.geom(contact.geom1 + contact.geom2 - hurdle).name)
    assert touched & {"fshin", "ffoot", "bshin", "bfoot", "fthigh", "bthigh", "torso", "head"}


def test_skill_policy_sees_only_the_pretraining_observation(monkeypatch):
    env = gym.make("metra/AntMultiGoalsSkills-v0")
    seen = []
    policy = env.unwrapped.policy
    original = policy.fixed_skill_actor  # what the skill env runs a skill with

    def recording(z):
        act = original(z)
        return lambda obs: seen.append(np.shape(obs)) or act(obs)

    monkeypatch.setattr(policy, "fixed_skill_actor", recording)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (31,)
    env.step(np.array([1.0, 0.0], dtype=np.float32))
    assert set(seen) == {(29,)} and len(seen) == 25
