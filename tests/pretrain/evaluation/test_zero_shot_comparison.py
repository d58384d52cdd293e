"""The paper's zero-shot goal-reaching comparison on tiny checkpoints: METRA and LSD by phi, DIAYN by its q(z | g),
which its checkpoints now carry; snapshots of DIAYN runs written before that are replaced by their run state."""

import json
import shutil

import numpy as np
import pytest
import torch

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_policy import SkillPolicy
from pretrain.config import load_config
from pretrain.evaluation.goal_reaching import checkpoint_with_goal_skill, goal_eval
from pretrain.export import export_untrained
from pretrain.run.trainer import train

TINY = ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1", "save_replay_buffer=false",
        "snapshot_every=1", "eval_every=1", "save_every=1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for algo in ("metra", "lsd", "diayn"):
        train(load_config("point_mass", [f"algo={algo}", *TINY]), root / algo, verbose=0)
    return root


def test_metra_lsd_and_diayn_snapshots_reach_the_same_goals(runs, tmp_path):
    results = {}
    for algo in ("metra", "lsd", "diayn"):
        snapshot = runs / algo / "snapshots" / "epoch_000001"
        results[algo] = goal_eval(str(snapshot), tmp_path / algo, n_goals=4, seed=7, baseline=False)
    assert results["metra"]["goals"] == results["lsd"]["goals"] == results["diayn"]["goals"]  # the same goals
    for result in results.values():
        assert len(result["trained"]["distances"]) == 4 and np.isfinite(result["trained"]["mean"])


def test_diayns_goal_skill_is_the_mean_of_its_trained_discriminator(runs):
    """The exported q(z | s) is the run's discriminator (its mean network on the normalised observation)."""
    from pretrain.run.model import algorithm_class
    from pretrain.run.run_config import read_run_config
    from pretrain.run.run_state import run_state_dir

    policy = SkillPolicy.from_pretrained(str(runs / "diayn" / "snapshots" / "epoch_000001"))
    model = algorithm_class(read_run_config(runs / "diayn")).load(run_state_dir(runs / "diayn") / "model.zip",
                                                                   device="cpu")
    goals = np.random.default_rng(0).uniform(-5, 5, (6, 2))
    with torch.no_grad():
        expected = model.skill_learner.discriminator.mean_net(
            torch.as_tensor(policy.normalizer(goals))).numpy()
    np.testing.assert_allclose(policy.skill_posterior(goals), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(policy.goal_skill(np.zeros((6, 2)), goals), expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected, expected[0])  # it depends on the goal


def test_discrete_diayn_picks_the_likeliest_skill(tmp_path):
    path = export_untrained(load_config("point_mass", ["algo=diayn", "discrete_skills=true", "skill_dim=4",
                                                       "net_width=16"]), tmp_path / "skills")
    policy = SkillPolicy.from_pretrained(path)
    goals = np.random.default_rng(1).uniform(-5, 5, (8, 2))
    z = policy.goal_skill(np.zeros((8, 2)), goals)
    np.testing.assert_array_equal(z, np.eye(4)[np.argmax(policy.skill_posterior(goals), axis=1)])


def test_a_diayn_snapshot_without_its_discriminator_is_replaced_by_the_run_state_of_its_epoch(runs, tmp_path):
    """Snapshots exported before format 5 hold DIAYN's actor only; the run state of the same epoch still has q."""
    old = tmp_path / "old_snapshot"
    shutil.copytree(runs / "diayn" / "snapshots" / "epoch_000001", old)
    from safetensors.torch import load_file

    from pretrain.export import write_checkpoint

    config = json.loads((old / "config.json").read_text())
    config.pop("skill_posterior_hidden")
    config.pop("weights_sha256")
    config["format_version"] = 4
    tensors = {k: v for k, v in load_file(old / "model.safetensors").items() if not k.startswith("skill_posterior.")}
    write_checkpoint(tensors, config, old)
    with pytest.raises(CheckpointError, match="re-export the DIAYN run with this version"):
        SkillPolicy.from_pretrained(str(old)).goal_skill(np.zeros(2), np.ones(2))
    replaced = checkpoint_with_goal_skill(old, runs / "diayn", tmp_path / "exported")
    assert replaced == str(tmp_path / "exported")
    SkillPolicy.from_pretrained(replaced).require_goal_skill()
    metra = runs / "metra" / "snapshots" / "epoch_000001"
    assert checkpoint_with_goal_skill(metra, runs / "metra", tmp_path / "unused") == str(metra)
    assert not (tmp_path / "unused").exists()
    config["provenance"]["epochs"] = 0  # a snapshot of another epoch than the run state's
    write_checkpoint(tensors, config, old)
    with pytest.raises(CheckpointError, match="is not at its epoch 0"):
        checkpoint_with_goal_skill(old, runs / "diayn", tmp_path / "again")
