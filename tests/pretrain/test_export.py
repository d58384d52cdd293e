import json

import numpy as np
import pytest
import torch as th

from metra_gym.skill_policy import SkillPolicy
from pretrain.cli import main
from pretrain.run.config import load_config
from pretrain.run.trainer import train


def test_export_refuses_to_overwrite_and_rejects_a_folder_without_a_run(tmp_path, capsys):
    config = load_config("point_mass", ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1",
                                        "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    out = tmp_path / "ckpt"
    assert main(["export", str(tmp_path / "run"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    assert main(["export", str(tmp_path / "run"), str(out)]) == 2
    assert "exists and is not empty; choose another OUT_DIR or pass --force" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "run"), str(out), "--force"]) == 0
    assert main(["export", str(tmp_path / "nothing"), str(tmp_path / "other")]) == 2
    assert "has no run state to resume" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_evaluate_writes_coverage_and_figures(tmp_path, capsys):
    assert main(["evaluate", "half_cheetah", "--out", str(tmp_path), "--skills", "16"]) == 0
    result = json.loads((tmp_path / "coverage.json").read_text())
    assert result["n_skills"] == 16 and len(result["final_positions"]) == 16
    assert sorted(row["skill"] for row in result["final_positions"]) == list(range(16))
    assert result["policy_coverage"] >= 1 and (tmp_path / "trajectories.png").is_file()
    assert main(["evaluate", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown checkpoint 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(("backbone", "layers"), [("sac", 2), ("sac", 3), ("tqc", 2)])
def test_exported_policy_acts_exactly_like_the_trained_sb3_actor(tmp_path, backbone, layers):
    from pretrain.export import export_run
    from pretrain.run.config import load_config
    from pretrain.run.trainer import algorithm_class, train

    config = load_config("point_mass", ["epochs=3", "learning_starts=400", "net_width=32", "torch_threads=1",
                                        "eval_every=3", "save_every=3", f"backbone={backbone}", f"net_layers={layers}"])
    train(config, tmp_path / "run", verbose=0)
    export_run(tmp_path / "run", tmp_path / "ckpt")
    model = algorithm_class(config).load(tmp_path / "run" / "run_state" / "latest" / "model.zip", device="cpu")
    policy = SkillPolicy.from_pretrained(tmp_path / "ckpt")
    obs = np.random.default_rng(0).uniform(-5, 5, (16, 2)).astype(np.float32)
    z = np.random.default_rng(1).standard_normal((16, 2)).astype(np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    with th.no_grad():
        expected = model.actor(th.as_tensor(np.concatenate([obs, z], 1)), deterministic=True).numpy()
        expected_phi = model.skill_learner.phi(th.as_tensor(obs)).numpy()
    np.testing.assert_allclose(policy.act(obs, z), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(policy.phi(obs), expected_phi, rtol=1e-5, atol=1e-6)
    assert policy.config["provenance"]["epochs"] == 3
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert "model-index" in card and "- metra" in card and "- stable-baselines3" in card


def test_export_of_a_crossq_run_is_one_clear_error(tmp_path, capsys):
    config = load_config("point_mass", ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1",
                                        "backbone=crossq", "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt")]) == 2
    err = capsys.readouterr().err
    assert "the sac and tqc backbones" in err and err.count("error:") == 1
    assert not (tmp_path / "ckpt").exists()
