"""Stored results, cards and config.json files name runs and checkpoints relative to the project."""

import re
from pathlib import Path

from pretrain.project_paths import checkpoint_reference, project_path

ROOT = Path(__file__).resolve().parents[2]
ABSOLUTE = re.compile(r"(?<![\w.])/(?:work|root|home|tmp|Users)/")


def test_paths_under_the_working_directory_are_relative_and_others_are_named(tmp_path, monkeypatch):
    (tmp_path / "project" / "runs" / "ant-s0").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "project")
    assert project_path(tmp_path / "project" / "runs" / "ant-s0") == "runs/ant-s0"
    assert project_path(tmp_path / "elsewhere" / "hc-s0") == "hc-s0"
    assert checkpoint_reference(tmp_path / "project" / "runs") == "runs"
    assert checkpoint_reference("hf://org/name@v1") == "hf://org/name@v1" and checkpoint_reference("ant") == "ant"


def test_snapshots_of_two_runs_outside_the_project_keep_their_runs_names(tmp_path, monkeypatch):
    for run in ("hum-default", "hum-dmc"):
        (tmp_path / "elsewhere" / run / "snapshots" / "epoch_001400").mkdir(parents=True)
    (tmp_path / "project" / "runs" / "ant-s0" / "snapshots" / "epoch_000900").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "project")
    names = [checkpoint_reference(tmp_path / "elsewhere" / run / "snapshots" / "epoch_001400")
             for run in ("hum-default", "hum-dmc")]
    assert names == ["hum-default/snapshots/epoch_001400", "hum-dmc/snapshots/epoch_001400"]
    assert checkpoint_reference(tmp_path / "project" / "runs" / "ant-s0" / "snapshots" / "epoch_000900") == \
        "runs/ant-s0/snapshots/epoch_000900"


def test_no_stored_result_card_or_checkpoint_config_names_a_machines_absolute_folder():
    stored = [*ROOT.joinpath("benchmarks", "results").rglob("*"), *ROOT.joinpath("metra_gym", "bundled").rglob("*")]
    named = [f"{path.relative_to(ROOT)}: {match.group(0)}" for path in stored
             if path.suffix in (".json", ".md", ".csv", ".yaml", ".txt") and path.is_file()
             for match in [ABSOLUTE.search(path.read_text(errors="replace"))] if match]
    assert not named, named
