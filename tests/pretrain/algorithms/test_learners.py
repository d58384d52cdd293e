"""What every skill learner must do with the run machinery: save and load with its optimiser states, and resume
after a kill exactly as the straight run goes on (the learners' own maths is tested in their own files)."""

import pytest
import torch as th

from pretrain.algorithms import algorithm_class
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.config import ALGORITHMS, REGISTRY, PretrainConfig, load_config
from pretrain.run.run_config import read_run_config
from pretrain.run.trainer import train
from tests.pretrain.helpers import tiny_model
from tests.pretrain.run.test_run_state import _assert_same_training


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_a_resumed_learning_rate_reaches_the_networks_optimisers_only(algo):
    cls = algorithm_class(algo)
    learner_class, kwargs = cls.learner_class, cls.learner_kwargs(PretrainConfig(algo=algo, **REGISTRY[algo].skill_space))
    actions = {"action_dim": 2} if learner_class.uses_actions else {}  # the exploration methods that model (s, a)
    learner = learner_class(obs_dim=3, skill_dim=4, discrete_skills=False, **actions, **kwargs)
    before = {name: getattr(learner, name).param_groups[0]["lr"] for name in learner.optimizer_names}
    learner.set_learning_rate(3e-4)
    for name in learner.optimizer_names:
        expected = before[name] if name in learner.fixed_rate_optimizers else 3e-4
        assert all(group["lr"] == expected for group in getattr(learner, name).param_groups), name
    assert learner.fixed_rate_optimizers == (("dual_optimizer",) if algo == "metra" else ())  # lambda keeps its rate


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_save_load_keeps_the_learner_its_statistics_and_optimisers(tmp_path, algo):
    model, _ = tiny_model(tmp_path, algo=algo, learning_starts=100)
    model.learn(300)
    model.save(tmp_path / "m.zip")
    loaded = SkillSAC.load(tmp_path / "m.zip", device="cpu")
    assert type(loaded.skill_learner) is type(model.skill_learner)
    state = model.skill_learner.state_dict()  # networks, buffers (running statistics) and parameters
    for (key, a), b in zip(state.items(), loaded.skill_learner.state_dict().values()):
        th.testing.assert_close(a, b, rtol=0, atol=0, msg=key)
    assert model.skill_learner.optimizer_names
    for name in model.skill_learner.optimizer_names:
        saved = getattr(model.skill_learner, name).state_dict()["state"]
        restored = getattr(loaded.skill_learner, name).state_dict()["state"]
        assert saved[0]["step"] == restored[0]["step"] > 0, name
        th.testing.assert_close(saved[0]["exp_avg"], restored[0]["exp_avg"])


@pytest.mark.parametrize("algo", ALGORITHMS[1:])  # METRA: tests/pretrain/run/test_run_state.py
def test_resume_after_a_kill_equals_a_straight_run(tmp_path, algo):
    settings = [f"algo={algo}", "net_width=32", "n_envs=2", "learning_starts=100", "torch_threads=1",
                "eval_every=100", "eval_skills=4"]
    train(load_config("point_mass", [*settings, "epochs=4", "save_every=2"]), tmp_path / "straight", verbose=0)
    train(load_config("point_mass", [*settings, "epochs=2", "save_every=2"]), tmp_path / "split", verbose=0)
    train(read_run_config(tmp_path / "split", {"epochs": 4}), tmp_path / "split", resume=True, verbose=0)
    _assert_same_training(tmp_path / "straight", tmp_path / "split")
