import json

from pretrain.cli import main
from pretrain.config import load_config
from pretrain.trainer import train


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
    assert "has no checkpoint to resume" in capsys.readouterr().err
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
