import json

from pretrain.config import load_config
from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint
from pretrain.export import export_untrained


def test_coverage_of_a_checkpoint_without_phi_needs_no_phi(tmp_path):
    """DIAYN skills have no phi: coverage and trajectories are still computed, without the phi figure."""
    export_untrained(load_config("point_mass", ["algo=diayn"]), tmp_path / "ckpt")
    result = evaluate_checkpoint(str(tmp_path / "ckpt"), tmp_path / "out", n_skills=2, steps=5)
    assert result["policy_coverage"] >= 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["coverage.json", "trajectories.png"]
    assert json.loads((tmp_path / "out" / "coverage.json").read_text())["n_skills"] == 2
