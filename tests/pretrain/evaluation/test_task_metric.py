"""The task metric (METRA's Kitchen metric: how many tasks the evaluation rollouts achieve) in the rollouts, the
training's evaluation CSV and TensorBoard, ``metra-pretrain evaluate`` and zero-shot goal reaching on task goals."""

import csv
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.run.coverage import SkillRollouts


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
    rollouts.run(_walk, np.array([[-0.5], [-0.5]]))
    assert sum(rollouts.achieved_tasks().values()) == 0


def test_rollouts_of_an_environment_without_tasks_report_none():
    from metra_gym.envs.point_mass import make_point_mass

    rollouts = SkillRollouts(make_point_mass, 2, steps=2)
    rollouts.run(lambda obs, skills: np.zeros((len(obs), 2), np.float32), np.zeros((2, 2)))
    assert rollouts.achieved_tasks() is None and rollouts.task_flags is None
    rollouts.close()


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
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((run / "tb").iterdir()))).Reload()
    logged = events.Scalars("eval/tasks_achieved")
    assert [e.step // 100 for e in logged] == [0, 1, 2, 3]  # each evaluation at its env step (2 x 50 per epoch)
    assert [int(e.value) for e in logged] == [int(r["tasks_achieved"]) for r in rows]
    assert len(events.Scalars("train/actor_loss")) >= 2  # the epochs that trained (learning_starts = 1 epoch)
