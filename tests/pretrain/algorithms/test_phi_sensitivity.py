"""The phi diagnostic of state DMC runs: how much phi depends on each observation group (``phi/sensitivity_<group>``
in TensorBoard), which tells what METRA's representation reads of a body (issue: Humanoid)."""

import subprocess
import sys

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.lsd import LSDLearner
from pretrain.algorithms.metra import METRALearner


def test_sensitivity_is_the_norm_of_phis_jacobian_on_each_group():
    learner = METRALearner(obs_dim=4, skill_dim=2, discrete_skills=False, phi_net_arch=[8])
    learner.phi = nn.Linear(4, 2, bias=False)
    learner.phi.weight.data = th.tensor([[1.0, 2.0, 0.0, 0.0], [0.0, 3.0, 0.0, 4.0]])
    groups = {"first": (0, 1), "second": (1, 2), "unread": (2, 3), "last_two": (2, 4)}
    out = learner.input_sensitivity(th.randn(5, 4), groups)
    np.testing.assert_allclose([out[name].item() for name in groups], [1.0, np.sqrt(13.0), 0.0, 4.0], rtol=1e-6)


def test_sensitivity_of_a_nonlinear_phi_averages_the_per_state_jacobians():
    learner = METRALearner(obs_dim=2, skill_dim=1, discrete_skills=False, phi_net_arch=[8])
    learner.phi = nn.Sequential(nn.Linear(2, 1, bias=False), nn.Tanh())
    learner.phi[0].weight.data = th.tensor([[1.0, 0.0]])
    obs = th.tensor([[0.0, 5.0], [1.0, -3.0]])
    out = learner.input_sensitivity(obs, {"x": (0, 1), "y": (1, 2)})
    expected = np.mean(1 - np.tanh([0.0, 1.0]) ** 2)  # d tanh(x) / dx at each state
    assert out["x"].item() == pytest.approx(expected) and out["y"].item() == 0.0


def test_lsds_spectral_normalisation_is_left_as_it_was():
    learner = LSDLearner(obs_dim=3, skill_dim=2, discrete_skills=False, phi_net_arch=[8])
    before = {k: v.clone() for k, v in learner.state_dict().items()}
    learner.input_sensitivity(th.randn(4, 3), {"all": (0, 3)})
    after = learner.state_dict()
    assert all(th.equal(before[k], after[k]) for k in before)  # no power iteration ran
    assert learner.trained_phi.training


pytest.importorskip("dm_control")


def test_a_state_humanoid_run_logs_phis_sensitivity_to_each_body_group(tmp_path):
    run = tmp_path / "run"
    overrides = ["epochs=1", "n_envs=1", "episode_steps=20", "eval_skills=1", "learning_starts=10",
                 "gradient_steps=2", "net_width=16", "batch_size=8", "snapshot_every=0", "collector=sequential"]
    out = subprocess.run([sys.executable, "-m", "pretrain", "train", "--config", "humanoid_state", "--run-dir",
                          str(run), "--no-progress"] + [a for o in overrides for a in ("--set", o)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(next((run / "tb").iterdir()))).Reload()
    groups = ["torso_xy", "joint_angles", "head_height", "extremities", "torso_vertical", "com_velocity", "velocity"]
    logged = {name: events.Scalars(f"phi/sensitivity_{name}")[-1].value for name in groups}
    assert all(np.isfinite(value) and value > 0 for value in logged.values()), logged
