"""An algorithm is a folder (here: a module outside the package) plus one registry row: a toy skill learner, added
with nothing else changed, trains, resumes exactly, exports and evaluates like the bundled ones."""

import json
import textwrap

import pytest

import pretrain
from pretrain.config import AlgorithmEntry
from pretrain.config.registry import REGISTRY
from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint
from tests.pretrain.run.test_run_state import _assert_same_training

TOY = textwrap.dedent('''
    """A toy skill learner: phi's steps along z, kept short by a penalty on their length."""

    from typing import Any

    import torch as th

    from metra_gym.networks import PhiNetwork
    from pretrain.algorithms.common.algorithm import SkillAlgorithm
    from pretrain.algorithms.common.backbones import SkillSAC
    from pretrain.algorithms.common.phi_learner import PhiLearner


    class ToyLearner(PhiLearner):
        def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, toy_net_arch: list[int] | None = None,
                     toy_learning_rate: float = 1e-3, optimizer_kwargs: dict[str, Any] | None = None) -> None:
            super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
            self.phi = PhiNetwork(obs_dim, skill_dim, list(toy_net_arch or [32]))
            self.phi_optimizer = th.optim.Adam(self.phi.parameters(), lr=toy_learning_rate, **self.optimizer_kwargs)

        @property
        def trained_phi(self):
            return self.phi

        def update(self, obs, next_obs, z, dones=None):
            delta = self.phi_step(obs, next_obs)
            loss = -(self.directional_reward(delta, z) - delta.pow(2).sum(dim=1)).mean()
            self.descend(self.phi_optimizer, loss)
            return {"toy/phi_loss": loss}


    class TOY(SkillAlgorithm, SkillSAC):
        algo = "toy"
        learner_class = ToyLearner
''')
SETTINGS = ["algo=toy", "net_width=32", "n_envs=2", "learning_starts=200", "torch_threads=1", "eval_every=1",
            "eval_skills=4", "save_every=2"]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toy_skills.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(REGISTRY, "toy", AlgorithmEntry(("toy_net_arch", "toy_learning_rate"), module="toy_skills"))


def test_a_toy_algorithm_added_with_one_row_trains_resumes_exports_and_evaluates(toy, tmp_path):
    cls = pretrain.algorithm_class("toy")
    assert cls.__name__ == "TOY" and "toy_net_arch" in str(cls.__signature__)
    pretrain.train(pretrain.load_config("point_mass", [*SETTINGS, "epochs=4"]), tmp_path / "straight", verbose=0)
    pretrain.train(pretrain.load_config("point_mass", [*SETTINGS, "epochs=2"]), tmp_path / "split", verbose=0)
    result = pretrain.train(pretrain.read_run_config(tmp_path / "split", {"epochs": 4}), tmp_path / "split",
                            resume=True, verbose=0)
    assert [row["epoch"] for row in result.history] == [0, 1, 2, 3, 4]
    _assert_same_training(tmp_path / "straight", tmp_path / "split", cls)

    skills = pretrain.export_run(tmp_path / "split", tmp_path / "skills")
    config = json.loads((skills / "config.json").read_text())
    assert config["provenance"]["algorithm"] == "TOY on SAC (metra-gym)" and config["phi_hidden"] == [32, 32]
    evaluation = evaluate_checkpoint(str(skills), tmp_path / "eval", n_skills=4)
    assert evaluation["policy_coverage"] >= 1 and (tmp_path / "eval" / "coverage.json").is_file()
