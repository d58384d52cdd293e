import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th
from stable_baselines3 import SAC

from pretrain.algorithms.common.backbones import NonFiniteLossError
from pretrain.cli import main
from tests.pretrain.helpers import tiny_model

ROOT = Path(__file__).resolve().parents[2]


def _run(args, capsys):
    code = main(["train", "--no-progress", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "env_id=metra/Antt-v0"], "unknown environment id 'metra/Antt-v0'"),
    (["--set", "skill_dim=-1"], "skill_dim must be an integer >= 1 (0: no skill, for the exploration methods), got -1"),
    (["--set", "discrete_skills=true", "--set", "skill_dim=1"], "discrete skills need skill_dim >= 2"),
    (["--set", "epoch=10"], "unknown config key 'epoch'; did you mean 'epochs'?"),
    (["--set", "epochs"], "must look like key=value"),
    (["--set", "n_envs=two"], "'n_envs' must be int"),
    (["--config", "cheetah"], "unknown config 'cheetah'"),
    (["--config", "/dev/null"], "config '/dev/null' is empty; give a YAML mapping of config keys to values"),
    (["--set", "env_id="], "config key 'env_id' must be str, got nothing (null); give a value or leave the key out"),
    (["--set", "env_id=''"], "env_id must be a Gymnasium environment id (e.g. metra/Ant-v0, or package.module:Env-v0), "
                             "got ''"),
    (["--set", "epochs="], "config key 'epochs' must be int, got nothing (null)"),
    (["--set", "learning_rate=-1"], "learning_rate must be a finite number in (0, inf), got -1.0"),
    (["--set", "learning_rate=nan"], "learning_rate must be a finite number in (0, inf), got nan"),
    (["--set", "gamma=2"], "gamma must be a finite number in (0, 1], got 2.0"),
    (["--set", "tau=-0.5"], "tau must be a finite number in (0, 1], got -0.5"),
    (["--set", "dual_slack=-1"], "dual_slack must be a finite number in [0, inf), got -1.0"),
    (["--set", "alpha_init=0"], "alpha_init must be a finite number in (0, inf), got 0.0"),
    (["--set", "learning_starts=-5"], "learning_starts must be >= 0, got -5"),
    (["--set", "env_kwargs=[1, 2]"], "config key 'env_kwargs' must be a mapping of keyword arguments"),
    (["--seed", "-1"], "seed must be an integer in [0, 2**32 - 1], got -1"),
    (["--set", "seed=4294967296"], "seed must be an integer in [0, 2**32 - 1], got 4294967296"),
    (["--set", "buffer_size=1"], "buffer_size must hold at least one epoch (400 transitions)"),
    (["--set", "n_envs=100000"], "n_envs must be <= 256"),
    (["--set", "device=banana"], "device must be cpu, cuda, cuda:N or auto, got 'banana'"),
    pytest.param(["--set", "device=cuda"], "this machine has no CUDA GPU; use device=cpu",
                 marks=pytest.mark.skipif(th.cuda.is_available(), reason="the answer of a machine without CUDA")),
    (["--set", "backbone=ppo"], "backbone must be one of sac, crossq, tqc, got 'ppo'"),
    (["--set", "algo=vic"], "algo must be one of metra"),
    (["--set", "discrete_skills=false_"], "'discrete_skills' must be bool"),
    (["--set", "env_id=CartPole-v1", "--set", "normalizer=none"], "has Discrete(2) actions"),
    (["--set", "env_id=Pendulum-v1", "--set", "normalizer=none", "--set", "coordinates=[5]"],
     "coordinates [5] are outside the 3-d observation of Pendulum-v1; give indices in [0, 3) or info keys"),
    (["--set", "env_id=Pendulum-v1", "--set", "normalizer=none", "--set", "coordinates=[x_position]"],
     "coordinates name info keys ['x_position'] that Pendulum-v1 does not give; its info has []"),
    (["--set", "coordinates=[0, x]"], "coordinates must be a list of observation indices (e.g. [0, 1]) or of info"),
    (["--set", "env_id=no_such_package_xyz.envs:Robot-v0"],
     "cannot import the module 'no_such_package_xyz.envs' (ModuleNotFoundError"),
    (["--set", "env_id=json:NotRegistered-v0"], "unknown environment id 'json:NotRegistered-v0'"),
    (["--set", "normalizer=fitted", "--set", "normalizer_stats={mean: [0, 0, 0], std: [1, 1, 1]}"],
     "normalizer_stats were fitted on 3-d observations, but metra/PointMass-v0 with these env_kwargs gives 2-d"),
    (["--set", "normalizer_stats={mean: [0, 0], std: [1, 1]}"], "normalizer_stats are read only with normalizer: fitted"),
    (["--set", "normalizer=antt"], "normalizer must be one of none, fitted, ant, half_cheetah, got 'antt'"),
    (["--set", "normalizer=fitted", "--set", "normalizer_min_std=0"],
     "normalizer_min_std must be a finite number in (0, inf) or null, got 0.0"),
    (["--set", "normalizer=fitted", "--set", "normalizer_min_std=nan"], "normalizer_min_std must be a finite number"),
    (["--set", "normalizer_min_std=0.01"], "normalizer_min_std is read only with normalizer: fitted (normalizer is 'none')"),
    (["--set", "normalizer=fitted", "--set", "normalizer_min_std=small"], "'normalizer_min_std' must be a number"),
    (["--set", "learning_rate=true"], "config key 'learning_rate' must be a number, got True"),
    (["--set", "backbone=crossq", "--set", "tau=0.01"], "tau (0.01) is the rate of the target networks' updates, and "
                                                         "backbone crossq has no target networks; remove tau"),
    (["--set", "buffer_size=1000000000000"], "this run needs at least 48,428.8 GiB of memory (replay buffer 48,428.8 "
                                             "GiB, networks with their optimiser state 0.0 GiB), but this machine has"),
    (["--set", "net_width=10000000"], "GiB), but this machine has"),
])
def test_bad_config_is_one_clear_error_and_writes_nothing(tmp_path, capsys, args, message):
    run = tmp_path / "run"
    code, err = _run(["--config", "point_mass", "--run-dir", str(run), *args], capsys)
    assert code == 2
    assert message in err and err.count("error:") == 1
    assert not run.exists()


def test_yaml_syntax_error_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("epochs: [1, 2\n")
    code, err = _run(["--config", str(bad), "--run-dir", str(tmp_path / "run")], capsys)
    assert code == 2 and "is not valid YAML" in err and err.count("error:") == 1 and "Traceback" not in err


def test_resume_with_a_bad_value_leaves_the_run_state_alone(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--no-progress", "--config", "point_mass", "--run-dir", str(run), "--set", "epochs=1",
                 "--set", "learning_starts=100", "--set", "net_width=16", "--set", "torch_threads=1"]) == 0
    capsys.readouterr()
    before = (run / "run_state" / "latest" / "state.json").read_text()
    code, err = _run(["--resume", str(run), "--set", "learning_rate=-1"], capsys)
    assert code == 2 and "learning_rate must be a finite number" in err
    assert (run / "run_state" / "latest" / "state.json").read_text() == before


def test_resume_rejects_a_sac_zip_a_plain_sac_run_and_an_empty_folder(tmp_path, capsys):
    sac = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]})
    sac.save(tmp_path / "sac.zip")
    code, err = _run(["--resume", str(tmp_path / "sac.zip")], capsys)
    assert code == 2 and "expects the run folder" in err and "SB3 .zip is a model" in err

    fake_run = tmp_path / "sac_run" / "run_state" / "latest"
    fake_run.mkdir(parents=True)
    sac.save(fake_run / "model.zip")
    size = (fake_run / "model.zip").stat().st_size  # a complete run state holding a plain SAC model
    (fake_run / "state.json").write_text(json.dumps({"epoch": 1, "files": {"model.zip": {"bytes": size}}}))
    code, err = _run(["--resume", str(tmp_path / "sac_run")], capsys)
    assert code == 2 and "plain SB3 model without a skill learner" in err

    code, err = _run(["--resume", str(tmp_path)], capsys)
    assert code == 2 and "has no run state to resume" in err


def test_new_run_refuses_to_overwrite_an_existing_run(tmp_path, capsys):
    (tmp_path / "run_state" / "latest").mkdir(parents=True)
    (tmp_path / "run_state" / "latest" / "state.json").write_text("{}")  # a save finished here once
    code, err = _run(["--config", "point_mass", "--run-dir", str(tmp_path)], capsys)
    assert code == 2 and "already holds a run; continue it with --resume" in err


def test_non_finite_loss_names_the_quantity(tmp_path):
    model, _ = tiny_model(tmp_path, learning_starts=100)
    with th.no_grad():
        for p in model.skill_learner.phi.parameters():
            p.fill_(float("nan"))
    with pytest.raises(NonFiniteLossError, match="metra/phi_loss became nan at gradient step 1; training stopped. The last saved run state is kept"):
        model.learn(800)


def test_cli_stops_on_non_finite_loss_and_keeps_the_checkpoint(tmp_path):
    """A learning rate of 1e30 blows the networks up; the run stops with exit 3 and its checkpoint stays."""
    run = tmp_path / "run"
    common = ["--no-progress", "--set", "net_width=16", "--set", "learning_starts=400", "--set", "torch_threads=1",
              "--set", "save_every=2", "--set", "eval_every=2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, "-m", "pretrain", "train", "--config", "point_mass", "--run-dir", str(run),
                            "--set", "epochs=2", *common], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    state_before = (run / "run_state" / "latest" / "state.json").read_text()
    blown = subprocess.run([sys.executable, "-m", "pretrain", "train", "--resume", str(run), "--set", "epochs=6",
                            "--set", "learning_rate=1e30", *common[1:]], env=env, capture_output=True, text=True,
                           timeout=300)
    assert blown.returncode == 3, blown.stderr
    assert "became" in blown.stderr and "training stopped" in blown.stderr
    state_after = json.loads((run / "run_state" / "latest" / "state.json").read_text())
    assert state_after["epoch"] == 2 and (run / "run_state" / "latest").is_dir()
    assert state_before == (run / "run_state" / "latest" / "state.json").read_text()
    assert np.isfinite(json.loads(state_before)["num_timesteps"])


def test_resume_refuses_to_change_what_the_saved_model_depends_on(tmp_path, capsys):
    (tmp_path / "run_state").mkdir()
    from pretrain.config import load_config
    from pretrain.run.run_config import read_run_config, save_config

    save_config(load_config("point_mass"), tmp_path)
    with pytest.raises(Exception, match="cannot change net_width, skill_dim when resuming"):
        read_run_config(tmp_path, {"net_width": 128, "skill_dim": 3, "epochs": 5})
    assert read_run_config(tmp_path, {"epochs": 5, "learning_rate": 1e-5}).learning_rate == 1e-5


@pytest.mark.parametrize(("text", "message"), [
    ("epochs: [1, 2\n", "config.yaml is not valid YAML"),
    ("- 1\n- 2\n", "config.yaml must be a mapping of config keys to values, got list"),
])
def test_resume_with_a_damaged_config_yaml_is_one_clear_error(tmp_path, text, message):
    from pretrain.config import ConfigError
    from pretrain.run.run_config import read_run_config

    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError, match="restore it, or start a new --run-dir") as error:
        read_run_config(tmp_path, {"epochs": 5})
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("command", [["evaluate", "ant", "--skills", "1"],
                                     ["goal-eval", "ant", "--goals", "2", "--no-baseline"]])
@pytest.mark.parametrize("out", ["file.txt", "file.txt/sub"])
def test_evaluation_out_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch, command, out):
    from metra_gym.skill_policy import SkillPolicy

    def no_loading(*args, **kwargs):
        raise AssertionError("the checkpoint was loaded before --out was checked")

    monkeypatch.setattr(SkillPolicy, "from_pretrained", no_loading)
    (tmp_path / "file.txt").write_text("keep")
    code = main([*command, "--out", str(tmp_path / out)])
    err = capsys.readouterr().err
    assert code == 2 and "must be a folder for the results" in err and "is a file" in err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert (tmp_path / "file.txt").read_text() == "keep"


@pytest.mark.parametrize("run_dir", ["file.txt", "file.txt/run"])
def test_a_run_dir_that_is_a_file_is_named_and_not_offered_for_resume(tmp_path, capsys, run_dir):
    (tmp_path / "file.txt").write_text("keep")
    code, err = _run(["--config", "point_mass", "--run-dir", str(tmp_path / run_dir)], capsys)
    assert code == 2 and "must be a folder for the run" in err and "is a file; choose another path" in err
    assert "--resume" not in err and err.count("error:") == 1
    assert (tmp_path / "file.txt").read_text() == "keep"


def test_a_new_run_that_fails_before_starting_leaves_no_empty_folders(tmp_path, monkeypatch):
    from pretrain.config import load_config
    from pretrain.run import trainer

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trainer, "build_model", broken)
    with pytest.raises(OSError):
        trainer.train(load_config("point_mass", ["torch_threads=1"]), tmp_path / "a" / "run", verbose=0)
    assert list(tmp_path.iterdir()) == []


def test_a_config_folder_is_not_called_missing(tmp_path, capsys):
    code, err = _run(["--config", str(tmp_path), "--run-dir", str(tmp_path / "run")], capsys)
    assert code == 2 and f"config {tmp_path} is a folder; give a YAML file" in err and "does not exist" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("extra", [["--config", "ant"], ["--run-dir", "other"], ["--config", "ant", "--run-dir", "x"]])
def test_resume_refuses_config_and_run_dir_instead_of_ignoring_them(tmp_path, capsys, extra):
    code, err = _run(["--resume", str(tmp_path), *extra], capsys)
    assert code == 2 and f"--resume takes the run folder and its config from {tmp_path}; leave out {extra[0]}" in err
    assert "--set KEY=VALUE" in err and err.count("error:") == 1


def test_the_python_api_refuses_discrete_actions_and_a_normaliser_of_another_shape():
    import gymnasium as gym

    from metra_gym.envs.normalization import ObservationNormalizer
    from pretrain.algorithms.common.normalization import NormalizeObservationPreset
    from pretrain.algorithms.metra import METRA

    with pytest.raises(ValueError, match=r"CartPole-v1 has Discrete\(2\) actions; skill discovery here trains "
                                         r"continuous \(Box\) actions"):
        METRA("MlpPolicy", "CartPole-v1")
    fitted_elsewhere = ObservationNormalizer(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="the normaliser is for 3-d observations, but the environment's are 2-d"):
        NormalizeObservationPreset(gym.make("metra/PointMass-v0"), fitted_elsewhere)
