"""The run state of learned downstream runs: what a save keeps, and a run stopped part-way going on from it."""

import json

import numpy as np
import pytest
import torch
from stable_baselines3 import SAC

import pretrain.downstream.evaluation as evaluation
from pretrain.downstream import SACSettings, hierarchical_agent
from pretrain.downstream.run_state import LATEST, PREVIOUS, load_run_state, quiet_logger, save_run_state
from pretrain.downstream.runs import RunSpec, run

SETTINGS = {"seed": 0, "steps": 80}


def _trained_controller():
    agent = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)  # the paper's SAC: 8-episode epochs
    agent.set_logger(quiet_logger())
    agent.learn(80)
    assert agent._n_updates > 0
    return agent


def test_a_saved_agent_comes_back_with_its_networks_optimisers_buffer_counters_and_rngs(tmp_path):
    agent = _trained_controller()
    save_run_state(tmp_path, agent, SETTINGS, {"points": [[0, 1.0]], "seconds": 2.0})
    rng = torch.get_rng_state().clone()
    torch.manual_seed(123)  # what happens in between must not matter
    np.random.seed(123)
    fresh = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    resumed, row = load_run_state(tmp_path, fresh, SETTINGS)
    assert row == {"points": [[0, 1.0]], "seconds": 2.0}
    assert resumed.get_env() is fresh.get_env()
    assert (resumed.num_timesteps, resumed._n_updates) == (agent.num_timesteps, agent._n_updates)
    for (name, a), b in zip(agent.policy.state_dict().items(), resumed.policy.state_dict().values()):
        assert torch.equal(a, b), name
    assert torch.equal(agent.log_ent_coef, resumed.log_ent_coef)
    for optimiser in ("actor", "critic"):
        saved = getattr(agent, optimiser).optimizer.state_dict()["state"]
        loaded = getattr(resumed, optimiser).optimizer.state_dict()["state"]
        assert all(torch.equal(saved[k]["exp_avg"], loaded[k]["exp_avg"]) for k in saved)
    old, new = agent.replay_buffer, resumed.replay_buffer
    assert new.pos == old.pos == agent.num_timesteps
    np.testing.assert_array_equal(new.observations, old.observations)
    np.testing.assert_array_equal(new.actions, old.actions)
    np.testing.assert_array_equal(new.rewards, old.rewards)
    assert torch.equal(torch.get_rng_state(), rng)
    assert resumed._last_obs is None  # learn() starts the training env again from a reset


def test_a_killed_save_leaves_the_last_complete_state_and_other_settings_start_afresh(tmp_path):
    tmp_path = tmp_path / "state"
    agent = _trained_controller()
    save_run_state(tmp_path, agent, SETTINGS, {"points": [], "seconds": 1.0})
    (tmp_path / LATEST).rename(tmp_path / PREVIOUS)  # a save killed between its two renames
    (tmp_path / ".tmp-killed").mkdir()
    fresh = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    resumed, _ = load_run_state(tmp_path, fresh, SETTINGS)
    assert resumed.num_timesteps == agent.num_timesteps
    save_run_state(tmp_path, resumed, SETTINGS, {"points": [], "seconds": 1.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == [LATEST]
    (tmp_path / LATEST / "agent.zip").write_bytes(b"cut short")  # a state whose files are not all there
    assert load_run_state(tmp_path, fresh, SETTINGS) is None
    save_run_state(tmp_path, agent, SETTINGS, {"points": [], "seconds": 1.0})
    assert load_run_state(tmp_path, fresh, {**SETTINGS, "steps": 160}) is None  # another budget: not this run
    assert not tmp_path.exists()


def test_a_second_save_links_the_unchanged_replay_segments_and_a_changed_file_is_set_aside(tmp_path):
    folder = tmp_path / "state"
    agent = _trained_controller()
    save_run_state(folder, agent, SETTINGS, {})
    segments = sorted((folder / LATEST).glob("replay.*.npy"))
    assert segments
    inodes = {path.name: path.stat().st_ino for path in segments}
    save_run_state(folder, agent, SETTINGS, {})  # nothing changed: every segment is the same file
    assert {path.name: path.stat().st_ino for path in (folder / LATEST).glob("replay.*.npy")} == inodes
    segment = segments[0].name
    data = bytearray((folder / LATEST / segment).read_bytes())
    data[-1] ^= 0xFF  # same size, one stored transition's value changed: it would load without complaint
    (folder / LATEST / segment).unlink()  # (the file is a hard link: write a new one)
    (folder / LATEST / segment).write_bytes(bytes(data))
    fresh = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    with pytest.warns(RuntimeWarning, match="cannot be resumed"):
        assert load_run_state(folder, fresh, SETTINGS) is None
    assert not folder.exists() and len(list(tmp_path.glob("state.damaged-*"))) == 1  # kept for a look, not deleted


def test_an_on_policy_agent_comes_back_too(tmp_path):
    agent = hierarchical_agent("cheetah_hurdle", seed=0, n_envs=8)  # PPO over discrete skills: no replay buffer
    agent.set_logger(quiet_logger())
    agent.learn(512)
    save_run_state(tmp_path, agent, SETTINGS, {})
    resumed, _ = load_run_state(tmp_path, hierarchical_agent("cheetah_hurdle", seed=0, n_envs=8), SETTINGS)
    assert resumed.num_timesteps == 512
    for (name, a), b in zip(agent.policy.state_dict().items(), resumed.policy.state_dict().values()):
        assert torch.equal(a, b), name


class _Stop(Exception):
    """Stands for a kill in the middle of a run."""


@pytest.mark.parametrize(("task", "agent", "protocol", "steps"), [("cheetah_goal", "flat", "v0.3", 750),
                                                                  ("ant_multigoals", "controller", "paper", 4800)])
def test_a_stopped_run_goes_on_from_its_last_evaluation(tmp_path, monkeypatch, task, agent, protocol, steps):
    # The paper's controller: 8-episode epochs of 8 skills (1,600 low-level steps), here learning after 16 steps.
    small = SACSettings(learning_starts=16, net_width=64, gradient_steps=8, buffer_size=10_000)
    monkeypatch.setattr(SACSettings, "of_checkpoint", classmethod(lambda cls, config: small))
    spec = RunSpec(task, agent, 0, protocol, steps=steps, eval_every=steps // 3, eval_episodes=1, final_episodes=2)
    out, states = tmp_path / "runs", tmp_path / "states"
    returns, calls = evaluation.agent_returns, []

    def evaluate(model, env, seeds):
        calls.append((len(seeds), model.num_timesteps))
        if len(calls) == 3:  # the second evaluation in training: stopped before it ends
            raise _Stop
        return returns(model, env, seeds)

    monkeypatch.setattr(evaluation, "agent_returns", evaluate)
    with pytest.raises(_Stop):
        run(spec, out, states=states)
    before = json.loads((out / f"{spec.name}.json").read_text())
    saved_at = calls[1][1]  # the agent's steps at the first evaluation in training, where the state was saved
    assert not before["finished"] and len(before["points"]) == 2 and (states / spec.name / LATEST).is_dir()
    calls.clear()
    row = run(spec, out, states=states)
    assert row["finished"] and row["resumes"] == 1
    assert row["points"][:2] == before["points"]  # the curve so far is kept, not measured again
    assert calls[0][0] == 1 and calls[0][1] > saved_at  # no untrained evaluation: learning went on
    steps = [step for step, _ in row["points"]]
    assert steps == sorted(set(steps)) and steps[-1] >= spec.steps
    assert row["untrained_controller"] == before["untrained_controller"]
    assert [path.name for path in states.iterdir()] == [f"{spec.name}.lock"]  # the state is removed, the lock stays
    assert row["algorithm"] == "SAC"  # the class that loads it, as below
    trained = SAC.load(out / row["agent_file"])  # the trained agent is kept beside its result
    assert trained.num_timesteps * row["low_level_steps_per_agent_step"] == row["final"]["steps"]
    if protocol == "paper":  # it learned before the stop and after it
        assert trained._n_updates > 0


def test_a_run_another_process_trains_is_refused_and_left_alone(tmp_path):
    pytest.importorskip("fcntl")  # no locks without it (Windows)
    from pretrain.downstream.run_state import run_lock
    from pretrain.run.run_state import ResumeError

    spec = RunSpec("cheetah_goal", "flat", 0, "v0.3", steps=750, eval_every=250, eval_episodes=1, final_episodes=2)
    out, states = tmp_path / "runs", tmp_path / "states"
    other = run_lock(states / spec.name)  # another process training it (a lock is per open file, as across processes)
    with pytest.raises(ResumeError, match=f"the run {spec.name} is being trained by another process.*another --out"):
        run(spec, out, states=states)
    assert not out.exists() and [path.name for path in states.iterdir()] == [f"{spec.name}.lock"]
    other.release()
    assert run(spec, out, states=states)["finished"]  # once it is free, the run goes
