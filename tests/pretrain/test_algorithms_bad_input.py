"""Choosing an algorithm: unknown names, options of another algorithm, a run resumed as another algorithm. Each is
one clear error (exit code 2, one "error:" line) that writes nothing; the bundled configs run every algorithm."""

import pytest

from pretrain.cli import main
from pretrain.config import ALGORITHM_KEYS, ALGORITHMS, ConfigError, PretrainConfig, build_config, load_config
from pretrain.run.run_config import read_run_config, save_config
from pretrain.run.trainer import train

TINY = ["net_width=16", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_every=100", "eval_skills=4"]


def _run(args, capsys):
    code = main(["train", "--no-progress", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "algo=vic"], "algo must be one of metra, lsd, diayn, dads, cic, icm, lbs, rnd, apt, disagreement, aps, "
                            "got 'vic'"),
    (["--set", "algo=icm", "--set", "skill_dim=2"],
     "algo icm is an exploration method without skills (its policy is pi(a | s)): skill_dim must be 0, got 2; remove "
     "skill_dim"),
    (["--set", "skill_dim=0"],
     "algo metra learns skills: skill_dim must be >= 1, got 0 (0 is for the exploration methods icm, lbs, rnd, apt, "
     "disagreement)"),
    (["--set", "algo=disagreement", "--set", "disagreement_n_models=1"], "disagreement_n_models must be >= 2, got 1"),
    (["--set", "algo=apt", "--set", "apt_knn_k=300"], "apt_knn_k (300) must be <= batch_size (256)"),
    (["--set", "algo=aps", "--set", "aps_knn_clip=-1"], "aps_knn_clip must be a finite number in [0, inf), got -1.0"),
    (["--set", "algo=rnd", "--set", "rnd_obs_clip=0"], "rnd_obs_clip must be a finite number in (0, inf), got 0.0"),
    (["--set", "algo=lbs", "--set", "lbs_latent_dim=0"], "lbs_latent_dim must be >= 1 or null (the last hidden width)"),
    (["--set", "algo=diayn", "--set", "cic_temperature=0.2"],
     "config key 'cic_temperature' is an option of algo cic, but algo is 'diayn'; remove it, or set algo=cic"),
    (["--set", "dual_slack=0.01", "--set", "algo=lsd"], "config key 'dual_slack' is an option of algo metra, but algo is 'lsd'"),
    (["--set", "dads_alt_skills=10"], "config key 'dads_alt_skills' is an option of algo dads, but algo is 'metra'"),
    (["--set", "algo=dads", "--set", "dads_alt_skills=0"], "dads_alt_skills must be >= 1, got 0"),
    (["--set", "algo=cic", "--set", "cic_knn_k=300"], "cic_knn_k (300) must be <= batch_size (256)"),
    (["--set", "algo=cic", "--set", "cic_temperature=0"], "cic_temperature must be a finite number in (0, inf), got 0.0"),
    (["--set", "algo=cic", "--set", "cic_knn_clip=-1"], "cic_knn_clip must be a finite number in [0, inf), got -1.0"),
    (["--set", "algo=cic", "--set", "cic_knn_query=obs"],
     "cic_knn_query must be one of next_state, state (k-NN distances from g(s'), as in URLB, or from g(s), as in the "
     "CSF fork), got 'obs'"),
    (["--set", "algo=dads", "--set", "cic_knn_query=state"],
     "config key 'cic_knn_query' is an option of algo cic, but algo is 'dads'"),
    (["--set", "algo=diayn", "--set", "diayn_learn_std=maybe"], "'diayn_learn_std' must be bool"),
])
def test_a_bad_algorithm_choice_is_one_clear_error_and_writes_nothing(tmp_path, capsys, args, message):
    run = tmp_path / "run"
    code, err = _run(["--config", "point_mass", "--run-dir", str(run), *args], capsys)
    assert code == 2
    assert message in err and err.count("error:") == 1 and "Traceback" not in err
    assert not run.exists()


def test_a_config_file_for_one_algorithm_with_an_option_of_another_is_refused(tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text("env_id: metra/PointMass-v0\nnormalizer: none\nalgo: diayn\ndual_lam_init: 10.0\n")
    code, err = _run(["--config", str(config), "--run-dir", str(tmp_path / "run")], capsys)
    assert code == 2 and "config key 'dual_lam_init' is an option of algo metra, but algo is 'diayn'" in err
    assert err.count("error:") == 1 and not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["ant", "half_cheetah", "point_mass"])
def test_a_bundled_metra_config_runs_any_algorithm_with_that_algorithms_defaults(name):
    """The bundled files set METRA's keys (point_mass even to non-defaults): switching algo leaves them behind."""
    defaults = PretrainConfig()
    for algo in ALGORITHMS[1:]:
        config = load_config(name, [f"algo={algo}"])
        assert config.algo == algo
        assert all(getattr(config, key) == getattr(defaults, key) for key in ALGORITHM_KEYS["metra"])
    assert load_config("point_mass").dual_learning_rate == 0.001  # ... which METRA itself still reads
    assert load_config("point_mass", ["algo=cic", "cic_knn_k=12"]).cic_knn_k == 12


@pytest.mark.parametrize("name", ["ant", "half_cheetah", "point_mass"])
def test_a_config_switched_to_cic_takes_its_papers_skill_space_unless_the_overrides_give_one(name):
    """The bundled files set METRA's skill space; CIC's own is 64 continuous skills (URLB)."""
    config = load_config(name, ["algo=cic"])
    assert (config.skill_dim, config.discrete_skills) == (64, False)
    assert load_config(name, ["algo=cic", "skill_dim=2"]).skill_dim == 2
    assert load_config(name, ["algo=diayn"]).skill_dim == load_config(name).skill_dim  # DIAYN: the file's


def test_a_saved_config_of_every_algorithm_builds_again():
    """config.yaml lists every key, the other algorithms' at their defaults (resume, export and goal-eval read it)."""
    for algo in ALGORITHMS:
        config = load_config("point_mass", [f"algo={algo}"])
        assert build_config(config.to_dict()) == config


def test_a_run_cannot_be_resumed_as_another_algorithm(tmp_path, capsys):
    run = tmp_path / "run"
    train(load_config("point_mass", [*TINY, "algo=diayn", "epochs=1", "save_every=1"]), run, verbose=0)
    before = (run / "run_state" / "latest" / "state.json").read_text()
    code, err = _run(["--resume", str(run), "--set", "algo=lsd"], capsys)
    assert code == 2 and "cannot change algo when resuming" in err and err.count("error:") == 1
    assert (run / "run_state" / "latest" / "state.json").read_text() == before


def test_a_run_folder_whose_config_names_another_algorithms_option_is_refused(tmp_path, capsys):
    """A config.yaml edited by hand: DADS's option in a CIC run."""
    run = tmp_path / "run"
    save_config(load_config("point_mass", ["algo=cic"]), run)
    text = (run / "config.yaml").read_text().replace("dads_alt_skills: 100", "dads_alt_skills: 5")
    (run / "config.yaml").write_text(text)
    with pytest.raises(ConfigError, match="'dads_alt_skills' is an option of algo dads, but algo is 'cic'"):
        read_run_config(run)
