"""The task metrics (METRA's Kitchen metrics: how many tasks the evaluation rollouts achieve (policy coverage), the
most recent 100,000 training transitions (queue coverage) and any training transition (total coverage)) in the
rollouts, the coverage tracker, the collector, the training's evaluation CSV and TensorBoard, ``metra-pretrain
evaluate`` and zero-shot goal reaching on task goals."""

import csv
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.run.callbacks import TrainingCoverage, training_task_metrics
from pretrain.run.collector import Batch
from pretrain.run.coverage import CoverageTracker, SkillRollouts


class _Tasks(gym.Env):
    """A 1-d walker with three tasks: "Left" holds while x <= -2, "Right" while x >= 3, "One" while x is 1 (the
    skill is the step)."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = 0.0
        return np.zeros(1, np.float32), self._info()

    def _info(self):
        return {"coordinates": np.array([self.x]), TASK_SUCCESS_KEY: {"Left": self.x <= -2, "Right": self.x >= 3,
                                                                      "One": abs(self.x - 1) < 0.1}}

    def step(self, action):
        self.x += float(action[0])
        return np.array([self.x], np.float32), 0.0, False, False, self._info()


def _walk(obs, skills):
    return skills  # each skill is its own constant action


def test_rollouts_count_a_task_any_rollout_achieves_at_any_step():
    rollouts = SkillRollouts(_Tasks, 2, steps=3)
    rollouts.run(_walk, np.array([[-1.0], [0.5]]))
    assert rollouts.task_names == ["Left", "Right", "One"] and rollouts.task_flags.shape == (2, 4, 3)
    # x: 0, -1, -2, -3 and 0, 0.5, 1, 1.5 (at 1 for one step only: achieved all the same)
    assert rollouts.achieved_tasks() == {"Left": True, "Right": False, "One": True}
    rollouts.run(_walk, np.array([[1.0], [-0.5]]))  # x reaches 3 (at the last step) and -1.5
    assert rollouts.achieved_tasks() == {"Left": False, "Right": True, "One": True}
    assert rollouts.tasks_by_rollout() == [["Right", "One"], []]  # the second rollout: 0, -0.5, -1, -1.5
    rollouts.run(_walk, np.array([[-0.5], [-0.5]]))
    assert sum(rollouts.achieved_tasks().values()) == 0


def test_rollouts_of_an_environment_without_tasks_report_none():
    from metra_gym.envs.point_mass import make_point_mass

    rollouts = SkillRollouts(make_point_mass, 2, steps=2)
    rollouts.run(lambda obs, skills: np.zeros((len(obs), 2), np.float32), np.zeros((2, 2)))
    assert rollouts.achieved_tasks() is None and rollouts.task_flags is None and rollouts.tasks_by_rollout() is None
    rollouts.close()


def _flags(*rows):
    return np.array(rows, dtype=bool)


def test_tracker_counts_queue_tasks_over_the_last_transitions_and_total_tasks_over_all():
    tracker = CoverageTracker(1, queue_size=3, task_names=["Left", "Right", "One"])
    tracker.add(np.zeros((2, 1)), _flags([1, 0, 0], [0, 0, 0]))
    assert tracker.queue_tasks() == {"Left": True, "Right": False, "One": False}
    tracker.add(np.zeros((2, 1)), _flags([0, 0, 1], [0, 0, 0]))  # the queue of 3 has dropped the first transition
    assert tracker.queue_tasks() == {"Left": False, "Right": False, "One": True}
    assert tracker.total_tasks_achieved() == {"Left": True, "Right": False, "One": True}
    assert training_task_metrics(tracker) == {"queue_tasks_achieved": 1, "total_tasks_achieved": 2,
                                              "queue_tasks": "One", "total_tasks": "Left;One"}
    tracker.add(np.zeros((5, 1)), _flags(*[[0, 1, 0]] + [[0, 0, 0]] * 4))  # more than the queue at once
    assert tracker.queue_tasks() == {"Left": False, "Right": False, "One": False}
    assert tracker.total_tasks_achieved() == {"Left": True, "Right": True, "One": True}


def test_tracker_state_round_trips_and_refuses_a_state_without_its_tasks():
    tracker = CoverageTracker(1, queue_size=4, task_names=["Left", "Right"])
    tracker.add(np.arange(3.0).reshape(3, 1), _flags([0, 1], [0, 0], [0, 0]))
    state = {key: np.asarray(value) for key, value in tracker.state().items()}
    restored = CoverageTracker(1, queue_size=4, task_names=["Left", "Right"])
    restored.load_state(state)
    assert (restored.queue_tasks(), restored.total_tasks_achieved(), restored.total_coverage()) == \
        (tracker.queue_tasks(), tracker.total_tasks_achieved(), 3)
    plain = CoverageTracker(1, queue_size=4)
    plain.add(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="Kitchen run state saved before.*not comparable: start a new run"):
        restored.load_state({key: np.asarray(value) for key, value in plain.state().items()})
    with pytest.raises(ValueError, match="pass each transition's flags"):
        restored.add(np.zeros((1, 1)))


def test_training_coverage_feeds_each_transitions_task_flags():
    tracker = CoverageTracker(1, task_names=["Left", "Right", "One"])
    callback = TrainingCoverage(tracker)
    env = _Tasks()
    env.reset()
    for action in (-1.0, -1.0, 4.0):  # x: -1, -2 (Left), 2
        _, _, _, _, info = env.step(np.array([action]))
        callback.update_locals({"infos": [info]})
        callback._on_step()  # (SB3's on_step also counts the model's timesteps: there is no model here)
    assert tracker.total_tasks_achieved() == {"Left": False, "Right": False, "One": False}  # not before the epoch ends
    callback._on_rollout_end()
    assert tracker.total_tasks_achieved() == {"Left": True, "Right": False, "One": False}


def test_the_overlapped_collectors_infos_carry_the_task_flags():
    steps, envs = 2, 3
    arrays = {key: np.zeros((steps, envs)) for key in ("rewards", "dones", "truncated")}
    batch = Batch(obs=np.zeros((steps, envs, 1)), next_obs=np.zeros((steps, envs, 1)), actions=np.zeros((steps, envs, 1)),
                  coordinates=np.arange(steps * envs, dtype=float).reshape(steps, envs, 1),
                  tasks=np.array([[[1, 0], [0, 0], [0, 1]], [[0, 0], [1, 1], [0, 0]]], dtype=bool),
                  rngs_after=[], task_names=["Left", "Right"], **arrays)
    infos = batch.infos(1)
    assert [info[TASK_SUCCESS_KEY] for info in infos] == [{"Left": False, "Right": False},
                                                          {"Left": True, "Right": True},
                                                          {"Left": False, "Right": False}]
    assert [float(info["coordinates"][0]) for info in infos] == [3.0, 4.0, 5.0]
    without = Batch(**{**batch.__dict__, "tasks": np.zeros((steps, envs, 0), dtype=bool), "task_names": []})
    assert all(TASK_SUCCESS_KEY not in info for info in without.infos(0))


pytest.importorskip("gymnasium_robotics")


@pytest.fixture(scope="module")
def untrained_kitchen(tmp_path_factory):
    from pretrain.config import load_config
    from pretrain.export import export_untrained

    out = tmp_path_factory.mktemp("kitchen") / "untrained"
    return export_untrained(load_config("kitchen_state", ["net_width=32"]), out)


def test_evaluate_reports_the_tasks_achieved(untrained_kitchen, tmp_path):
    out = subprocess.run([sys.executable, "-m", "pretrain", "evaluate", str(untrained_kitchen), "--out",
                          str(tmp_path / "eval"), "--skills", "2"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "eval" / "coverage.json").read_text())
    assert list(result["tasks"]) == ["Kettle", "Microwave", "Light Switch", "Hinge Cabinet", "Slide Cabinet",
                                     "Bottom Burner"]
    assert result["tasks_achieved"] == sum(result["tasks"].values()) and result["steps"] == 50
    assert f"{result['tasks_achieved']} of 6 tasks achieved" in out.stdout
    per_rollout = [set(row["tasks"]) for row in result["final_positions"]]
    assert len(per_rollout) == 2 and set().union(*per_rollout) == {t for t, done in result["tasks"].items() if done}
    assert (tmp_path / "eval" / "tasks.png").stat().st_size > 1000  # the skills x tasks grid


def test_goal_reaching_on_kitchen_uses_the_six_goal_states_with_a_fixed_skill(untrained_kitchen, tmp_path,
                                                                            monkeypatch):
    from metra_gym.skill_policy import SkillPolicy
    from pretrain.evaluation import goal_reaching

    calls = []
    original = SkillPolicy.goal_skill

    def counted(self, obs, goals):
        calls.append(np.array(goals))
        return original(self, obs, goals)

    monkeypatch.setattr(SkillPolicy, "goal_skill", counted)
    result = goal_reaching.goal_eval(str(untrained_kitchen), tmp_path / "goals", baseline=False)
    assert len(calls) == 1 and calls[0].shape == (6, 62)  # once, at the first step: z stays fixed
    env = gym.make("metra/Kitchen-v0", obs_type="state").unwrapped
    expected = np.stack([env.goal_observation(task) for task in result["trained"]["tasks"]])
    env.close()
    np.testing.assert_allclose(calls[0], expected)
    trained = result["trained"]
    assert trained["reached"] == sum(trained["tasks"].values()) and len(trained["skills"]) == 6
    assert all(0 <= z < 24 for z in trained["skills"])
    assert json.loads((tmp_path / "goals" / "goal_reaching.json").read_text())["trained"]["reached"] == \
        trained["reached"]


def test_a_snapshot_exported_with_its_kitchen_results_cards_the_tasks_not_bins(untrained_kitchen, tmp_path, capsys):
    """``metra-pretrain export SNAPSHOT OUT --held-out --goals`` copies the weights unchanged and records what
    Kitchen is measured by: the tasks the held-out rollouts achieved and the goal states reached zero-shot."""
    from metra_gym.skill_checkpoint.format import read_config
    from pretrain.cli import main
    from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint
    from pretrain.evaluation.goal_reaching import goal_eval

    held = evaluate_checkpoint(str(untrained_kitchen), tmp_path / "held_out", n_skills=2, seed=1000)
    goals = goal_eval(str(untrained_kitchen), tmp_path / "goals", seed=1000, baseline_checkpoint=str(untrained_kitchen))
    coverage, goal_file = tmp_path / "held_out" / "coverage.json", tmp_path / "goals" / "goal_reaching.json"
    out = tmp_path / "bundle"
    assert main(["export", str(untrained_kitchen), str(out), "--held-out", str(coverage), "--goals", str(goal_file),
                 "--command-line", "metra-pretrain train --config kitchen_state"]) == 0
    source, written = read_config(untrained_kitchen), read_config(out)
    assert written["weights_sha256"] == source["weights_sha256"]
    provenance = written["provenance"]
    achieved = [task for task, done in held["tasks"].items() if done]
    assert provenance["held_out_coverage"]["tasks"] == achieved and provenance["held_out_coverage"]["n_tasks"] == 6
    assert provenance["zero_shot"]["reached"] == goals["trained"]["reached"]
    assert provenance["zero_shot"]["untrained_reached"] == goals["untrained"]["reached"]  # the same networks
    card = (out / "README.md").read_text()
    assert f"| {held['tasks_achieved']} of 6 (" in card and "the 6 tasks' goal states" in card
    assert "type: tasks_achieved" in card  # the model-index result is the task count
    assert "1 m bins" not in card and "metra-pretrain train --config kitchen_state" in card
    # An evaluation of other networks is refused, and nothing is written.
    other = json.loads(coverage.read_text())
    other["provenance"]["epochs"] = 12345
    (tmp_path / "other.json").write_text(json.dumps(other))
    capsys.readouterr()
    assert main(["export", str(untrained_kitchen), str(tmp_path / "refused"), "--held-out",
                 str(tmp_path / "other.json")]) == 2
    assert "evaluated epochs 12345" in capsys.readouterr().err and not (tmp_path / "refused").exists()


@pytest.mark.parametrize("collector", ["sequential", "overlapped"])
def test_a_tiny_kitchen_state_run_logs_the_tasks_achieved(tmp_path, collector):
    """Three epochs of 2 x 50 steps through the CLI: the evaluation CSV and TensorBoard hold tasks_achieved, and
    TensorBoard the losses of every epoch (an overlapped collector once left TensorBoard empty)."""
    run = tmp_path / "run"
    overrides = ["epochs=3", "n_envs=2", "eval_skills=2", "eval_every=1", "learning_starts=100", "gradient_steps=5",
                 f"collector={collector}", "net_width=32", "batch_size=32", "snapshot_every=0", "save_every=3"]
    out = subprocess.run([sys.executable, "-m", "pretrain", "train", "--config", "kitchen_state", "--run-dir",
                          str(run), "--no-progress"] + [a for o in overrides for a in ("--set", o)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = list(csv.DictReader((run / "eval" / "coverage.csv").open()))
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2, 3]
    assert all(0 <= int(r["tasks_achieved"]) <= 6 for r in rows)
    for row in rows:  # the three metrics, each with the names of its tasks; the total never shrinks
        for count, names in (("tasks_achieved", "tasks"), ("queue_tasks_achieved", "queue_tasks"),
                             ("total_tasks_achieved", "total_tasks")):
            assert int(row[count]) == len([n for n in row[names].split(";") if n])
        assert set(row["queue_tasks"].split(";")) <= set(row["total_tasks"].split(";"))
    totals = [int(r["total_tasks_achieved"]) for r in rows]
    assert totals == sorted(totals)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((run / "tb").iterdir()))).Reload()
    logged = events.Scalars("eval/tasks_achieved")
    assert [e.step // 100 for e in logged] == [0, 1, 2, 3]  # each evaluation at its env step (2 x 50 per epoch)
    assert [int(e.value) for e in logged] == [int(r["tasks_achieved"]) for r in rows]
    for key in ("queue_tasks_achieved", "total_tasks_achieved"):
        assert [int(e.value) for e in events.Scalars(f"eval/{key}")] == [int(r[key]) for r in rows]
    assert len(events.Scalars("train/actor_loss")) >= 2  # the epochs that trained (learning_starts = 1 epoch)
