"""Multi-seed runs through Ray Tune: each trial is an ordinary run folder, equal to the same run made directly."""

import json

import pytest

from pretrain.run.config import ConfigError, load_config
from pretrain.run.trainer import train
from pretrain.sweep import sweep

SETTINGS = ["epochs=2", "learning_starts=200", "net_width=16", "n_envs=2", "eval_every=1", "eval_skills=4"]


def test_sweep_runs_each_seed_as_a_run_folder_equal_to_a_direct_run(tmp_path):
    rows = sweep("point_mass", tmp_path / "sweep", seeds=[0, 1], grid={"gradient_steps": [10]}, overrides=SETTINGS)
    assert sorted((r["seed"], r["epoch"]) for r in rows) == [(0, 2), (1, 2)]
    for seed in (0, 1):
        folder = tmp_path / "sweep" / f"gradient_steps=10-seed={seed}"
        assert (folder / "run_state" / "latest" / "state.json").is_file()
        direct = tmp_path / f"direct-{seed}"
        train(load_config("point_mass", [*SETTINGS, "gradient_steps=10", f"seed={seed}", "torch_threads=1"]),
              direct, verbose=0)
        swept = json.loads((folder / "eval" / "coverage.json").read_text())
        made = json.loads((direct / "eval" / "coverage.json").read_text())
        assert [r["policy_coverage"] for r in swept] == [r["policy_coverage"] for r in made]


def test_a_bad_grid_fails_before_ray_starts(tmp_path):
    with pytest.raises(ConfigError, match="unknown config key 'gradient_step'"):
        sweep("point_mass", tmp_path / "sweep", seeds=[0], grid={"gradient_step": [10]}, overrides=SETTINGS)
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("cpus", [0, -2])
def test_cpus_per_run_below_one_names_the_option(tmp_path, capsys, cpus):
    from pretrain.cli import main

    code = main(["sweep", "--config", "point_mass", "--run-root", str(tmp_path / "sweep"), "--cpus-per-run", str(cpus)])
    err = capsys.readouterr().err
    assert code == 2 and f"--cpus-per-run (CPUs and torch threads of each run) must be an integer >= 1, got {cpus}" in err
    assert "torch_threads" not in err.split("(")[0] and not (tmp_path / "sweep").exists()


def test_a_cli_run_is_continued_by_the_sweep_and_a_sweep_trial_by_the_cli(tmp_path):
    """The CLI and the sweep train the same run folder (tests/pretrain/algorithms/test_algorithm.py: a CLI run
    continued in Python): a run the CLI started and the sweep finished equals a run made in one go."""
    from pretrain.cli import main

    settings = [*SETTINGS, "torch_threads=1"]  # what the sweep sets with cpus_per_run=1
    trial = tmp_path / "sweep" / "seed=0"
    assert main(["train", "--no-progress", "--config", "point_mass", "--run-dir", str(trial),
                 *(f"--set={item}" for item in [*settings, "epochs=1"])]) == 0
    rows = sweep("point_mass", tmp_path / "sweep", seeds=[0], overrides=SETTINGS)
    assert [(r["seed"], r["epoch"]) for r in rows] == [(0, 2)]
    train(load_config("point_mass", [*settings, "seed=0"]), tmp_path / "direct", verbose=0)
    made = json.loads((tmp_path / "direct" / "eval" / "coverage.json").read_text())
    swept = json.loads((trial / "eval" / "coverage.json").read_text())
    assert [r["policy_coverage"] for r in swept] == [r["policy_coverage"] for r in made]
    assert main(["train", "--no-progress", "--resume", str(trial), "--set", "epochs=3"]) == 0
    assert json.loads((trial / "eval" / "coverage.json").read_text())[-1]["epoch"] == 3
