"""The reference controllers of the downstream tasks, and the state save / restore the look-ahead plans with."""

import copy

import gymnasium as gym
import numpy as np
import pytest

from pretrain.downstream.evaluation import evaluation_seeds, run_episodes
from pretrain.downstream.reference import (
    LookAhead,
    RandomSkills,
    ZeroShot,
    best_index,
    goal_observation,
    progress,
    reference_returns,
    untrained_checkpoint,
)


def episodes(env, controller, seeds):
    return run_episodes(env, lambda obs: controller(env.unwrapped, obs), seeds, on_reset=controller.reset)


def test_the_lookahead_reaches_goals_a_skill_can_reach_and_beats_random_skills():
    """A case with a known answer: HalfCheetahGoal with goals within 15 m (radius 3) and the bundled skills, some of
    which run 15 m within 8 skills of 25 steps. Simulating every skill from the current state finds one that gets
    closer each skill step, so the look-ahead reaches every goal (return 10); random skills seldom do."""
    env = gym.make("metra/HalfCheetahGoalSkills-v0", env_kwargs={"goal_range": 15.0})
    seeds = evaluation_seeds(0, 6)
    lookahead = episodes(env, LookAhead(), seeds)
    random = episodes(env, RandomSkills(env.unwrapped), seeds)
    env.close()
    assert lookahead == [10.0] * len(seeds)
    assert np.mean(random) <= 5.0


def test_the_lookahead_ranks_by_task_reward_then_by_progress():
    """Sparse rewards tie most candidates at 0: progress decides among them, and any reward beats any progress."""
    assert best_index([(0.0, -3.0), (0.0, -1.0), (0.0, -2.0)]) == 1
    assert best_index([(0.0, 50.0), (1.0, -9.0), (0.0, 60.0)]) == 1


@pytest.mark.parametrize("foresight", [False, True])
def test_the_lookahead_sees_the_tasks_next_draw_only_with_foresight(foresight):
    """AntMultiGoals draws its next goal from the task's random generator. The look-ahead's simulations meet that
    draw only with foresight; without, every candidate of a skill step meets the same imagined one. Either way the
    task's generator is left as it was."""
    env = gym.make("metra/AntMultiGoalsSkills-v0")
    obs, _ = env.reset(seed=0)
    skill_env = env.unwrapped
    task_env = skill_env.env.unwrapped
    real_next = copy.deepcopy(task_env.np_random).random()
    seen, step = [], skill_env.step

    def recording(action):  # the draw the task would make next, as each simulation starts
        seen.append(copy.deepcopy(task_env.np_random).random())
        return step(action)

    skill_env.step = recording
    lookahead = LookAhead(n_candidates=4, foresight=foresight)
    lookahead.reset(0)
    lookahead(skill_env, obs)
    env.close()
    assert len(seen) == 4 and len(set(seen)) == 1
    assert (seen[0] == real_next) == foresight
    assert copy.deepcopy(task_env.np_random).random() == real_next


def test_a_lookahead_with_model_noise_simulates_from_perturbed_states_and_leaves_the_true_one():
    """With ``model_noise`` every simulation of a candidate starts from the true velocities plus fresh noise, the score
    is their mean, and the env is left in its true state; with none, one simulation from the exact state."""
    env = gym.make("metra/HalfCheetahHurdleSkills-v0")
    env.reset(seed=0)
    skill_env = env.unwrapped
    skill_env.step(1)
    data = skill_env.env.unwrapped.data
    true_qvel, true_qpos = data.qvel.copy(), data.qpos.copy()
    starts, scores, step = [], [], skill_env.step

    def recording(action):  # the velocities each simulation starts from, and what it scores
        starts.append(data.qvel.copy())
        out = step(action)
        scores.append(out[1])
        return out

    skill_env.step = recording
    noisy = LookAhead(model_noise=0.5, samples=3)
    reward, _ = noisy.score(skill_env, 4, future=7)
    assert len(starts) == 3
    assert all(np.abs(start - true_qvel).max() > 0.1 for start in starts)
    assert not np.array_equal(starts[0], starts[1])
    assert reward == pytest.approx(np.mean(scores))
    np.testing.assert_array_equal(data.qvel, true_qvel)
    np.testing.assert_array_equal(data.qpos, true_qpos)
    starts.clear()
    LookAhead(model_noise=0.0, samples=3).score(skill_env, 4, future=7)
    assert len(starts) == 1
    np.testing.assert_array_equal(starts[0], true_qvel)
    env.close()
    with pytest.raises(ValueError, match="model_noise >= 0"):
        LookAhead(model_noise=-1.0)


@pytest.mark.parametrize("skill_id", ["metra/AntMultiGoalsSkills-v0", "metra/HalfCheetahHurdleSkills-v0",
                                      "metra/QuadrupedGoalSkills-v0"])
def test_a_restored_state_repeats_the_same_future(skill_id):
    """Skills tried from a saved state leave no trace: after restoring, the same skills give the same observations,
    rewards and task events (AntMultiGoals draws a new goal when one is reached: its random generator is restored
    too)."""
    env = gym.make(skill_id)
    env.reset(seed=3)
    skill_env = env.unwrapped
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(5)]
    skill_env.step(actions[0])
    state = skill_env.save_state()
    first = [skill_env.step(a) for a in actions[1:]]
    skill_env.restore_state(state)
    second = [skill_env.step(a) for a in actions[1:]]
    for (obs, reward, *_, info), (obs2, reward2, *_, info2) in zip(first, second):
        np.testing.assert_array_equal(obs, obs2)
        assert reward == reward2
        np.testing.assert_array_equal(info.get("goal", 0.0), info2.get("goal", 0.0))
    env.close()


def test_the_zero_shot_goal_state_is_the_state_with_the_goals_position():
    env = gym.make("metra/AntMultiGoalsSkills-v0")
    obs, _ = env.reset(seed=0)
    skill_env = env.unwrapped
    goal_state = goal_observation(skill_env, obs)
    task_env = skill_env.env.unwrapped
    np.testing.assert_allclose(goal_state[:2], task_env.goal)
    np.testing.assert_allclose(goal_state[2:], obs[2:29])
    z = ZeroShot()(skill_env, obs)
    np.testing.assert_allclose(z, skill_env.policy.goal_skill(obs[:29], goal_state), rtol=1e-6)
    env.close()


def test_zero_shot_every_step_chooses_a_skill_every_low_level_step(monkeypatch):
    """The paper's zero-shot procedure: z re-computed every low-level step (K = 1) over the same 200 steps."""
    calls = []
    original = ZeroShot.__call__

    def counting(self, env, obs):
        calls.append(env.skill_steps)
        return original(self, env, obs)

    monkeypatch.setattr(ZeroShot, "__call__", counting)
    returns = reference_returns("cheetah_hurdle", "zero_shot_every_step", 0, 1, cache=None)
    assert len(returns) == 1 and set(calls) == {1} and len(calls) == 200
    calls.clear()
    reference_returns("cheetah_hurdle", "zero_shot", 0, 1, cache=None)
    assert set(calls) == {25} and len(calls) == 8
    calls.clear()  # at another protocol's K (paper_k10), the every-step reference unchanged
    reference_returns("cheetah_hurdle", "zero_shot", 0, 1, cache=None, protocol_name="paper_k10")
    assert set(calls) == {10} and len(calls) == 20
    calls.clear()
    reference_returns("cheetah_hurdle", "zero_shot_every_step", 0, 1, cache=None, protocol_name="paper_k10")
    assert set(calls) == {1} and len(calls) == 200


def test_untrained_skills_have_the_bundled_skills_shape_and_fresh_weights(tmp_path):
    from metra_gym.skill_policy import SkillPolicy

    path = untrained_checkpoint("cheetah_goal", 3, tmp_path)
    assert untrained_checkpoint("cheetah_goal", 3, tmp_path) == path  # written once
    untrained, trained = SkillPolicy.from_pretrained(path), SkillPolicy.from_pretrained("half_cheetah")
    assert (untrained.obs_dim, untrained.skill_dim, untrained.discrete) == (trained.obs_dim, 16, True)
    obs = np.zeros((4, 18))
    z = np.eye(16)[:4]
    assert not np.allclose(untrained.act(obs, z), trained.act(obs, z))
    other = SkillPolicy.from_pretrained(untrained_checkpoint("cheetah_goal", 4, tmp_path))
    assert not np.allclose(other.act(obs, z), untrained.act(obs, z))  # seeded by the run's seed


def test_a_two_step_lookahead_scores_a_candidate_by_its_best_follow_up_and_leaves_the_state():
    """depth=2: a candidate's score is the best (reward over both skills, progress after both) over the follow-ups,
    each run from the state after the candidate; the env is left where it was."""
    env = gym.make("metra/HalfCheetahHurdleSkills-v1")
    env.reset(seed=0)
    skill_env = env.unwrapped
    skill_env.step(3)
    data = skill_env.env.unwrapped.data
    qpos, qvel = data.qpos.copy(), data.qvel.copy()
    step = skill_env.step

    def paying(action):  # every skill pays 1 more, so that both skills' rewards count (the bars' are mostly 0)
        observation, reward, *rest = step(action)
        return (observation, reward + 1.0, *rest)

    skill_env.step = paying
    lookahead = LookAhead(depth=2)
    followers = [0, 5, 11]
    score = lookahead.score(skill_env, 7, followers=followers)
    np.testing.assert_array_equal(data.qpos, qpos)
    np.testing.assert_array_equal(data.qvel, qvel)
    by_hand, state = [], skill_env.save_state()
    for follower in followers:
        _, first, *_ = skill_env.step(7)
        _, second, *_ = skill_env.step(follower)
        by_hand.append((first + second, progress(skill_env.env.unwrapped)))
        skill_env.restore_state(state)
    assert score == pytest.approx(max(by_hand))
    assert LookAhead(depth=1).score(skill_env, 7, followers=followers) != score  # one step alone scores otherwise
    env.close()


def test_planning_two_skill_steps_ahead_clears_more_reference_hurdles_than_the_greedy_lookahead():
    """On the reference code's HalfCheetahHurdle one skill step of 25 seldom gets a bar behind the back foot, so the
    greedy look-ahead mostly breaks ties by distance; two steps ahead it sees which skills set up a jump."""
    env = gym.make("metra/HalfCheetahHurdleSkills-v1")
    seeds = evaluation_seeds(0, 3)
    greedy = episodes(env, LookAhead(), seeds)
    two = episodes(env, LookAhead(depth=2), seeds)
    env.close()
    assert sum(two) >= sum(greedy) + 3, (greedy, two)
