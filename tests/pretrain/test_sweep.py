"""Sweeps: trials as ordinary run folders, resumable across sessions, bad input refused before any trial starts,
interrupts that say how to resume and leave nothing of Ray behind, and the summary over seeds.

The tests marked ``slow`` start Ray (about a minute each on a busy 2-core machine); the others do not."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from pretrain.cli import main
from pretrain.config import ConfigError, load_config
from pretrain.run.trainer import train
from pretrain.sweep import leave_out, sweep
from pretrain.sweep.ray_runner import trial_errors
from pretrain.sweep.summary import plot, summarize, table, write_summary
from pretrain.sweep.sweep_file import read_sweep_file
from pretrain.sweep.trials import RESUME, PlannedTrial, Trial, grid_trials, parse_grid, plan, setting, trial_name
from pretrain.sweep.watchdog import Watchdog, alive, descendants, process_tree
from tests.benchmark_scripts import benchmark_script
from tests.pretrain.helpers import fake_ray_tune

ROOT = Path(__file__).resolve().parents[2]
TINY = ["learning_starts=200", "net_width=16", "n_envs=2", "eval_every=1", "eval_skills=4", "save_every=1",
        "gradient_steps=10", "save_replay_buffer=true"]
SWEEP_FILE = """\
seeds: [0, 1, 2]
config: point_mass
epochs: {point_mass: 2}
set: {learning_starts: 200, net_width: 16, n_envs: 2, eval_every: 1, eval_skills: 4, save_every: 1,
      gradient_steps: 10}
methods:
  metra: {}
"""


def cli(tmp_path: Path, *args: str) -> list[str]:
    return ["sweep", "--config", "point_mass", "--run-root", str(tmp_path / "sweep"), *args]


def closed_port() -> int:
    """A local TCP port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- bad input: one clear line each, before any trial starts (no Ray, nothing written) ---------------------------


@pytest.mark.parametrize("args, message", [
    (["--seeds", "0", "0"], "--seeds lists 0 twice"),
    (["--grid", "seed=3,4"], "give seeds with --seeds"),
    (["--grid", "gradient_steps=5", "--grid", "gradient_steps=6"], "--grid gradient_steps is given twice"),
    (["--grid", "gradient_steps=5,5"], "--grid gradient_steps lists 5 twice"),
    (["--grid", "learning_rate=1e-4,0.0001"], "are the same run (equal configs)"),
    (["--set", "torch_threads=2"], "--cpus-per-run sets it"),
    (["--grid", "algo=metra,lsd", "--set", "dual_slack=0.001"], "dual_slack, an option of algo metra"),
    (["--grid", "gradient_step=10"], "unknown config key 'gradient_step'"),
    (["--cpus-per-run", "0"], "--cpus-per-run (the CPUs of each run) must be an integer >= 1, got 0"),
    (["--max-concurrent", "0"], "--max-concurrent (the most runs of this sweep at once) must be an integer >= 1"),
    # What a trial would fail on only once Ray had started it, checked for every trial as `train` checks a run.
    (["--grid", "env_id=metra/PointMass-v0,metra/Nope-v0"],
     "trial env_id=metra_Nope-v0-seed=0: unknown environment id 'metra/Nope-v0'"),
    (["--grid", "net_width=16,32", "--set", "buffer_size=1000000000000000"], "trial net_width=16-seed=0: this run "
                                                                               "needs at least"),
    (["--grid", "env_kwargs={bogus: 0}"], "cannot build 'metra/PointMass-v0' with this config"),
    (["--grid", "encoder_channels=[8,8"], "--grid 'encoder_channels=[8,8': the values are not a comma-separated "
                                          "YAML list"),
])
def test_bad_sweeps_fail_in_one_line_before_anything_starts(tmp_path, capsys, args, message):
    code = main(cli(tmp_path, *args))
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "sweep").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer of a machine without CUDA")
def test_a_device_this_machine_lacks_is_refused_before_ray_starts(tmp_path, capsys):
    assert main(cli(tmp_path, "--seeds", "0", "1", "--set", "device=cuda")) == 2
    err = capsys.readouterr().err
    assert "trial seed=0: device='cuda' but this machine has no CUDA GPU" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "sweep").exists()


def test_grid_values_may_be_lists_mappings_and_quoted_strings():
    grid = parse_grid(["encoder_channels=[8,8,8,8],[16, 16, 16, 16]", "env_kwargs={obs_type: pixels},{}",
                       "env_id='a,b',c"])
    assert grid == {"encoder_channels": [[8] * 4, [16] * 4], "env_kwargs": [{"obs_type": "pixels"}, {}],
                    "env_id": ["a,b", "c"]}
    assert parse_grid(["gradient_steps=5, 6", "learning_rate=1e-4,4e-4", "phi_width=null,8"]) == {
        "gradient_steps": [5, 6], "learning_rate": ["1e-4", "4e-4"], "phi_width": [None, 8]}  # as before
    trials = grid_trials("point_mass_pixels", [0], parse_grid(["encoder_channels=[8,8,8,8],[16,16,16,16]"]))
    assert [t.name for t in trials] == ["encoder_channels=_8,8,8,8_-seed=0", "encoder_channels=_16,16,16,16_-seed=0"]
    assert [t.config(1).encoder_channels for t in trials] == [[8] * 4, [16] * 4]
    # Each value reaches its trial's config as it was parsed (null is None, not the string "None").
    trials = grid_trials("point_mass", [0], parse_grid(["phi_width=null,8"]))
    assert [t.config(1).phi_width for t in trials] == [None, 8]
    # Scalar values keep the folder names of earlier sweeps (which a restarted sweep resumes).
    assert trial_name({"learning_rate": "1e-4", "seed": 0}) == "learning_rate=1e-4-seed=0"


@pytest.mark.parametrize("case", ["unreachable cluster", "more CPUs than the machine"])
def test_sweeps_that_could_never_run_end_at_once(tmp_path, capsys, case):
    extra = (["--address", f"127.0.0.1:{closed_port()}"] if case == "unreachable cluster"
             else ["--cpus-per-run", str(len(os.sched_getaffinity(0)) + 1)])
    start = time.monotonic()
    code = main(cli(tmp_path, *extra))
    err = capsys.readouterr().err
    assert time.monotonic() - start < 30  # was: no answer after 150 s
    expected = "cannot reach a Ray cluster" if case == "unreachable cluster" else "CPU(s) of this machine"
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "sweep").exists()


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        time.sleep(0.25)
    raise AssertionError(f"the test's Ray head did not listen on {port}")


@pytest.mark.slow
def test_a_cluster_that_disagrees_on_token_authentication_is_one_clear_error_before_any_trial():
    """The 00:30 failure of 2026-12-01: a cluster started before ~/.ray/auth_token existed (no token auth) and a
    sweep that joins it with the token on; the cluster ended every trial's actor at once. A real head, of its own:
    its own HOME, temp folder and port (the machine's ``ray_current_cluster`` is not touched)."""
    ray_cli = str(Path(sys.executable).with_name("ray"))
    home = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths have a length limit
    port = closed_port()
    env = {**os.environ, "HOME": str(home)}
    head = subprocess.Popen([ray_cli, "start", "--head", f"--port={port}", f"--temp-dir={home}/ray", "--num-cpus=1",
                             "--include-dashboard=false", "--block"], env={**env, "RAY_AUTH_MODE": "disabled"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    join = f"from pretrain.sweep.ray_runner import start_ray; print(start_ray('127.0.0.1:{port}', 1))"
    try:
        subprocess.run([ray_cli, "get-auth-token", "--generate"], env=env, capture_output=True, check=True)
        _wait_for_port(port, head)
        runs = {mode: subprocess.run([sys.executable, "-c", join], env={**env, "RAY_AUTH_MODE": mode},
                                     capture_output=True, text=True, timeout=180) for mode in ("token", "disabled")}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)
    assert runs["token"].returncode != 0 and "token authentication" in runs["token"].stderr, runs["token"].stderr
    assert "ended this sweep's first actor" in runs["token"].stderr
    assert runs["disabled"].returncode == 0 and runs["disabled"].stdout.strip() == "1", runs["disabled"].stderr


def test_a_trial_ray_ended_before_it_started_counts_as_failed_not_finished():
    """Tune's result of a trial whose actor never ran has no config (the downstream sweep's TypeError of 00:30)."""
    results = [SimpleNamespace(config={"trial": "a"}, error=None), SimpleNamespace(config=None, error=None),
               SimpleNamespace(config={"trial": "c"}, error=RuntimeError("boom"))]
    errors = trial_errors(results, ["a", "b", "c", "d"])
    assert errors["a"] is None and isinstance(errors["c"], RuntimeError)
    assert errors["b"] is not None and errors["d"] is not None  # no result of their own: failed


def write_sweep_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("edit, message", [
    (("metra: {}", "metra: {}\n  lsdd: {}"), "unknown method: method 'lsdd'"),
    (("metra: {}", "metra: {}\n  lsd: {algo: lsd, dual_slack: 0.001}"), "method 'lsd' runs algo lsd, but gives "
                                                                        "dual_slack, an option of algo metra"),
    (("metra: {}", "metra: {}\n  lsd: {}"), None),  # legal: the label names the algo
    (("metra: {}", "metra: {}\n  cic: {}\n  lsd: {cic_knn_k: 16}"), "method 'lsd' runs algo lsd, but gives cic_knn_k"),
    (("metra: {}", "metra: {}\n  big: {algo: metra, net_width: 32}"), None),  # a variant with its algo
    (("metra: {}", "metra: {}\n  x: {algo: ppo}"), "unknown method: its algo 'ppo'"),
    (("gradient_steps: 10}", "gradient_steps: 10, dual_slack: 0.01}\n  # x"), None),  # metra only: fine
    (("metra: {}", "metra: {}\n  metra: {net_width: 8}"), "'metra' is given twice"),
    (("seeds: [0, 1, 2]", "seeds: [0, 1, 0]"), "seeds lists 0 twice"),
    (("epochs: {point_mass: 2}", "epochs: {point_mass: {lsd: 2}}"), "names method 'lsd', which `methods` does not"),
    (("epochs: {point_mass: 2}", "epochs: {ant: 2}"), "names env 'ant', which `envs` does not list"),
    (("seeds:", "seed:"), "unknown key 'seed'"),
    (("metra: {}", "metra: {seed: 4}"), "give seeds with --seeds"),
    (("metra: {}", "metra: {epochs: 4}"), "budgets go in `epochs:`"),
    (("gradient_steps: 10}", "gradient_steps: 10, algo: lsd}"), "set gives algo"),
])
def test_bad_sweep_files_fail_in_one_line_before_anything_starts(tmp_path, edit, message):
    path = write_sweep_file(tmp_path, SWEEP_FILE.replace(*edit))
    if message is None:
        assert read_sweep_file(path).trials
        return
    with pytest.raises(ConfigError) as error:
        sweep(run_root=tmp_path / "sweep", sweep_file=path)
    text = str(error.value)
    assert text.startswith(f"sweep file {path}: ") and message in text and "\n" not in text, text
    assert not (tmp_path / "sweep").exists()


def test_a_sweep_file_takes_no_config_seeds_or_grid_and_only_names_its_labels(tmp_path, capsys):
    path = write_sweep_file(tmp_path, SWEEP_FILE)
    assert main(["sweep", str(path), "--run-root", str(tmp_path / "sweep"), "--seeds", "0"]) == 2
    assert "leave out --seeds" in capsys.readouterr().err
    assert main(["sweep", str(path), "--run-root", str(tmp_path / "sweep"), "--only", "lsd"]) == 2
    assert "--only 'lsd' is neither an env nor a method" in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()


def test_the_comparison_file_gives_every_method_its_algo_budget_and_chosen_setting():
    text = yaml.safe_load((ROOT / "benchmarks" / "comparison.yaml").read_text())
    read = read_sweep_file(ROOT / "benchmarks" / "comparison.yaml")
    configs = {trial.name: trial.config(2) for trial in read.trials}
    methods = text["methods"]
    assert len(configs) == 2 * len(methods) * 2  # envs x methods x seeds
    assert {(c.env_id, c.algo) for c in configs.values()} == {
        (env, algo) for env in ("metra/Ant-v0", "metra/HalfCheetah-v0") for algo in ("metra", "lsd", "diayn", "dads",
                                                                                      "cic")}
    assert all(configs[f"{env}-{method}-seed={seed}"].epochs == epochs for env, table in text["epochs"].items()
               for method, epochs in table.items() for seed in (0, 1))
    # Seeds outermost: a sweep stopped part-way has every method of every env on seed 0 before any on seed 1.
    assert [trial.seed for trial in read.trials] == [0] * (2 * len(methods)) + [1] * (2 * len(methods))
    ant, cheetah = configs["ant-metra-seed=0"], configs["half_cheetah-metra-seed=0"]
    assert ant.seed == 0 and configs["ant-metra-seed=1"].seed == 1
    assert cheetah.discrete_skills and cheetah.epochs < ant.epochs
    # Section 2's choices: LSD at the paper's 50 gradient steps, DADS at the paper's learning rate.
    assert configs["ant-lsd_gs50-seed=0"].gradient_steps == 50
    assert configs["half_cheetah-dads_lr0.0001-seed=1"].learning_rate == 1e-4
    for name, config in configs.items():  # the shared backbone settings of the env's config, but for the choice
        env, method = name.rsplit("-seed=", 1)[0].split("-", 1)
        base = load_config(env)
        chosen = {key: value for key, value in methods[method].items() if key != "algo"}
        shared = {"net_width": base.net_width, "gradient_steps": base.gradient_steps,
                  "learning_rate": base.learning_rate, **chosen}
        assert {key: getattr(config, key) for key in shared} == shared, name
        assert config.algo == methods[method].get("algo", method), name
        assert config.epochs % config.snapshot_every == 0  # a snapshot at the end, for the held-out evaluation
    # HalfCheetah's seed 0 of LSD's chosen setting is its screen's run (a copy of the folder): the same config. DADS's
    # has its screen's settings but runs on to 1.6 M env steps (section 1: CIC to METRA's env steps, DADS to at least
    # 1.6 M, on both envs), from epoch 0: the screen's folder is gone.
    screens = {t.name: t.config(2) for t in read_sweep_file(ROOT / "benchmarks" / "comparison_screens.yaml").trials}
    lsd, dads = "half_cheetah-lsd_gs50-seed=0", "half_cheetah-dads_lr0.0001-seed=0"
    assert configs[lsd].to_dict() == screens[lsd].to_dict()
    assert {**configs[dads].to_dict(), "epochs": 0} == {**screens[dads].to_dict(), "epochs": 0}
    for env in ("ant", "half_cheetah"):
        cic, metra = configs[f"{env}-cic-seed=0"], configs[f"{env}-metra-seed=0"]
        assert cic.epochs * cic.steps_per_epoch == metra.epochs * metra.steps_per_epoch
        dads = configs[f"{env}-dads_lr0.0001-seed=0"]
        assert dads.epochs * dads.steps_per_epoch >= 1_600_000


def test_only_adds_up_labels_of_one_kind_and_narrows_down_across_envs_and_methods():
    def names(*only):
        trials = read_sweep_file(ROOT / "benchmarks" / "comparison.yaml", only=list(only)).trials
        return {trial.name.rsplit("-seed=", 1)[0] for trial in trials}

    assert names("ant", "cic", "dads") == {"ant-cic", "ant-dads"}  # issue 42's longer runs alone
    assert names("cic") == {"ant-cic", "half_cheetah-cic"}
    assert names("ant", "half_cheetah", "metra") == {"ant-metra", "half_cheetah-metra"}
    assert len(names("ant")) == 7
    assert names("ant", "metra", "cic", "dads_lr0.0001", "lsd_gs50") == {
        "ant-metra", "ant-cic", "ant-dads_lr0.0001", "ant-lsd_gs50"}  # section 1's runs on Ant


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "benchmarks").glob("*.yaml")
                                         if p.read_text().startswith("#") and "\nmethods:" in p.read_text()))
def test_every_campaign_sweep_file_reads_and_its_trials_build_their_configs(name):
    """A campaign's sweep file is read when a session starts it, hours after it was written: a bad label or key
    must fail here first."""
    read = read_sweep_file(ROOT / "benchmarks" / name)
    assert read.trials and all(trial.config(1).epochs > 0 for trial in read.trials)


def test_the_exploration_file_runs_every_method_an_idle_hour_past_equal_env_steps_beside_the_comparisons_metra():
    read = read_sweep_file(ROOT / "benchmarks" / "exploration.yaml")
    configs = {trial.name: trial.config(2) for trial in read.trials}
    methods = ("metra", "icm", "lbs", "rnd", "apt", "disagreement", "aps")
    assert {(c.algo, c.seed) for c in configs.values()} == {(algo, seed) for algo in methods for seed in (0, 1)}
    for config in configs.values():
        # Equal env steps: every run has a snapshot at 1.6 M steps; the budget: 1 idle hour, to a snapshot interval.
        assert config.epochs * config.steps_per_epoch >= 1_600_000 and 1_600_000 % (
            config.snapshot_every * config.steps_per_epoch) == 0
        hours = config.epochs * read.epoch_seconds[("ant", config.algo)] / 3600
        assert abs(hours - 1) <= config.snapshot_every * read.epoch_seconds[("ant", config.algo)] / 3600, config.algo
    comparison = {trial.name: trial.config(2) for trial in read_sweep_file(ROOT / "benchmarks" / "comparison.yaml").trials}
    for seed in (0, 1):  # the same METRA runs as the comparison's (which run on to their own budget)
        ours, theirs = configs[f"ant-metra-seed={seed}"], comparison[f"ant-metra-seed={seed}"]
        assert {**ours.to_dict(), "epochs": 0} == {**theirs.to_dict(), "epochs": 0} and theirs.epochs >= ours.epochs
    assert set(read.epoch_seconds) == {("ant", method) for method in methods}


def tiny_run(run_dir: Path, seed: int, epochs: int, *settings: str) -> list[dict]:
    config = load_config("point_mass", [*TINY, f"epochs={epochs}", f"seed={seed}", "torch_threads=1", *settings])
    return train(config, run_dir, verbose=0).history


def test_a_sweep_may_not_resume_a_run_under_a_setting_a_resumed_run_may_not_change(tmp_path, capsys):
    tiny_run(tmp_path / "sweep" / "seed=0", 0, 1)
    before = (tmp_path / "sweep" / "seed=0" / "config.yaml").read_text()
    args = cli(tmp_path, "--seeds", "0", *[a for s in [*TINY, "epochs=2", "net_width=32"] for a in ("--set", s)])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "trial seed=0: its run folder" in err and "net_width=16 (the sweep now gives 32)" in err
    assert "a resumed run may change only" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "sweep" / "seed=0" / "config.yaml").read_text() == before
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["seed=0"]


def test_a_sweep_resumes_a_run_that_fitted_its_normaliser_itself_but_not_one_given_other_statistics(tmp_path):
    # The run fits the normaliser's statistics at its start and saves them in its config.yaml; the sweep's config
    # leaves them None (humanoid_state, quadruped_state: a sweep of them could not be resumed before).
    tiny_run(tmp_path / "seed=0", 0, 1, "normalizer=fitted")
    saved = yaml.safe_load((tmp_path / "seed=0" / "config.yaml").read_text())["normalizer_stats"]
    trial = Trial("seed=0", "point_mass", (*TINY, "epochs=2", "normalizer=fitted"), "point_mass", "metra", 0)
    [planned] = plan([trial], tmp_path, 1)
    assert (planned.state, planned.epoch) == (RESUME, 1)
    other = {"mean": [m + 1.0 for m in saved["mean"]], "std": saved["std"]}
    given = Trial("seed=0", "point_mass", (*trial.overrides, setting("normalizer_stats", other)), "point_mass",
                  "metra", 0)
    with pytest.raises(ConfigError, match="was trained with normalizer_stats="):
        plan([given], tmp_path, 1)


# --- the summary over seeds ------------------------------------------------------------------------------------------


def test_summary_gives_mean_and_spread_over_seeds_at_the_end_all_seeds_reached(tmp_path):
    trials = [Trial(f"m-seed={s}", "point_mass", ("epochs=4",), "point_mass", "m", s) for s in (0, 1, 2)]
    coverage = {0: [4, 10, 20], 1: [4, 14, 30], 2: [4, 12]}  # seed 2 has not reached epoch 4 yet
    for seed, values in coverage.items():
        rows = [{"epoch": 2 * i, "env_steps": 200 * i, "wall_clock_s": 36.0 * i, "policy_coverage": v,
                 "total_coverage": 10 * v} for i, v in enumerate(values)]
        (tmp_path / f"m-seed={seed}" / "eval").mkdir(parents=True)
        (tmp_path / f"m-seed={seed}" / "eval" / "coverage.json").write_text(json.dumps(rows))
    summary = summarize(trials, tmp_path, {("point_mass", "m"): 1.8})
    group = summary["groups"][0]
    assert group["finished_seeds"] == 2
    assert group["final"]["epoch"] == 2 and group["final"]["values"] == [10, 14, 12]
    assert group["final"]["mean"] == 12.0 and group["final"]["std"] == 2.0
    assert (group["final"]["min"], group["final"]["max"]) == (10, 14)
    last = group["curve"][-1]
    assert (last["epoch"], last["n"], last["mean"], last["hours"]) == (4, 2, 25.0, 0.002)  # 4 x 1.8 s
    total = group["total_curve"][-2]  # the total coverage (the exploration methods' measure), over the same seeds
    assert (total["epoch"], total["n"], total["mean"], total["min"], total["max"]) == (2, 3, 120.0, 100, 140)
    out = write_summary(summary, tmp_path / "summary")
    assert "12.0 ± 2.0 (10, 14, 12)" in (out / "table.md").read_text()
    # total coverage where every seed got (the paper's ranking of the exploration methods) beside policy coverage
    assert group["final"]["total"]["values"] == [100, 140, 120]
    assert "| 12.0 ± 2.0 (10, 14, 12) | 120.0 ± 20.0 (100, 140, 120) |" in (out / "table.md").read_text()
    assert (out / "figure.png").stat().st_size > 1000 and json.loads((out / "summary.json").read_text())["groups"]
    assert (out / "total_coverage.png").stat().st_size > 1000



def test_the_figures_draw_the_held_out_end_on_policy_coverage_curves_only(tmp_path, monkeypatch):
    """A group's held-out coverage at its runs' ends (benchmarks/comparison.py's ``held_out``) is a dot at those ends
    on the training and the held-out policy coverage figures, never on the total coverage figure."""
    import matplotlib.axes

    dots = []
    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", lambda ax, x, y, **kw: dots.append((x, y, kw["yerr"])))
    curve = [{"epoch": e, "env_steps": 1600 * e, "hours": e / 2000, "mean": m, "min": m - 9, "max": m + 9, "n": 2}
             for e, m in ((250, 40), (1000, 300))]
    group = {"env": "ant", "method": "metra", "seeds": [0, 1], "finished_seeds": 2, "curve": curve,
             "held_out_curve": curve, "total_curve": curve, "final": {"env_steps": 1.6e6, "hours": 0.5},
             "held_out": {"mean": 1123.0, "std": 59.4, "env_steps": 3.12e6, "hours": 1.0}}
    summary = {"groups": [group], "hours": "idle estimate"}
    ends = [(3.12, 1123.0, 59.4), (1.0, 1123.0, 59.4)]  # per env step (millions) and per hour
    plot(summary, tmp_path / "held_out.png", "held_out_curve", "held out", held_out_ends=True)
    assert dots == ends
    dots.clear()
    plot(summary, tmp_path / "figure.png")
    assert dots == ends
    dots.clear()
    plot(summary, tmp_path / "total.png", "total_curve", "total coverage")
    assert dots == [] and (tmp_path / "total.png").stat().st_size > 1000


def test_summary_reads_the_kept_rows_of_a_run_whose_folder_is_behind_and_else_the_folder(tmp_path):
    trials = [Trial(f"m-seed={s}", "point_mass", ("epochs=2",), "point_mass", "m", s) for s in (0, 1)]
    on_disk = [{"epoch": 0, "env_steps": 0, "policy_coverage": 4}, {"epoch": 2, "env_steps": 400, "policy_coverage": 9}]
    for seed, rows in ((0, on_disk[:1]), (1, on_disk)):  # seed 0 started afresh: its folder is behind its kept rows
        (tmp_path / f"m-seed={seed}" / "eval").mkdir(parents=True)
        (tmp_path / f"m-seed={seed}" / "eval" / "coverage.json").write_text(json.dumps(rows))
    kept = [{"epoch": 0, "env_steps": 0, "policy_coverage": 4}, {"epoch": 2, "env_steps": 400, "policy_coverage": 7}]
    stale = [{"epoch": 2, "env_steps": 400, "policy_coverage": 99}]  # seed 1's folder wins over kept rows
    summary = summarize(trials, tmp_path, {("point_mass", "m"): 1.8}, landed={"m-seed=0": kept, "m-seed=1": stale})
    group = summary["groups"][0]
    assert [run["source"] for run in group["runs"]] == ["landed", "run folder"]
    assert group["finished_seeds"] == 2 and group["final"]["values"] == [7, 9]
    assert group["total_curve"] == []  # rows without total coverage (older runs) give no such curve
    assert "total" not in group["final"] and "total coverage" not in table(summary)  # nor such a column
    # without the kept rows, seed 0 has not finished
    assert summarize(trials, tmp_path, {("point_mass", "m"): 1.8})["groups"][0]["finished_seeds"] == 1


def test_summary_reads_each_run_from_the_run_root_where_it_got_furthest(tmp_path):
    """Two sweeps of one sweep file side by side need two roots (a root takes one sweep at a time); a partial copy
    of a run left in the other root must not hide it."""
    trials = [Trial(f"m-seed={s}", "point_mass", ("epochs=2",), "point_mass", "m", s) for s in (0, 1, 2)]
    first, second = tmp_path / "a", tmp_path / "b"
    for root, seed, epochs, value in ((first, 0, 2, 5), (second, 0, 2, 99),  # as far in both: the first root's
                                      (first, 1, 1, 3), (second, 1, 2, 9), (second, 2, 2, 7)):
        (root / f"m-seed={seed}" / "eval").mkdir(parents=True)
        rows = [{"epoch": epoch, "env_steps": 200 * epoch, "policy_coverage": value} for epoch in range(epochs + 1)]
        (root / f"m-seed={seed}" / "eval" / "coverage.json").write_text(json.dumps(rows))
    group = summarize(trials, [first, second], {("point_mass", "m"): 1.8})["groups"][0]
    assert [run["run_dir"] for run in group["runs"]] == [str(first / "m-seed=0"), str(second / "m-seed=1"),
                                                         str(second / "m-seed=2")]
    assert group["finished_seeds"] == 3 and group["final"]["values"] == [5, 9, 7]
    assert summarize(trials, first, {("point_mass", "m"): 1.8})["groups"][0]["finished_seeds"] == 1


# --- nothing outlives the sweep --------------------------------------------------------------------------------------


DRIVER = """
import subprocess, sys, time
from pretrain.sweep.watchdog import Watchdog
watchdog = Watchdog()
# A child that starts a process and dies, leaving it to init, as Ray's raylet leaves its agents when it is killed.
subprocess.Popen([sys.executable, "-c", "import subprocess, time; print(subprocess.Popen(['sleep', '300']).pid, "
                  "flush=True); time.sleep(1)"]).wait()
time.sleep(300)
"""


def test_the_watchdog_ends_what_the_sweep_started_after_a_sigkill():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        sleeper = int(driver.stdout.readline())
        orphan = {sleeper: process_tree()[sleeper][1]}
        deadline = time.monotonic() + 30
        while sleeper in descendants(driver.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the sleeper has left the sweep's tree
        assert sleeper not in descendants(driver.pid) and alive(orphan)
    finally:
        driver.kill()
        driver.wait()
    deadline = time.monotonic() + 10
    while alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(orphan)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "the orphaned process outlived the killed sweep"


def test_the_watchdog_leaves_alone_what_ran_before_it(tmp_path):
    before = subprocess.Popen(["sleep", "60"])
    try:
        watchdog = Watchdog([tmp_path / "scratch"])
        (tmp_path / "scratch").mkdir()
        watchdog.close()
        assert before.poll() is None and not (tmp_path / "scratch").exists()
    finally:
        before.kill()
        before.wait()


# --- with Ray -------------------------------------------------------------------------------------------------------


def folder_files(folder: Path) -> dict[str, int]:
    """Every file below ``folder`` with its modification time (ns)."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_restarted_sweep_resumes_unfinished_trials_skips_finished_ones_and_reports_a_failure(tmp_path, capsys):
    path = write_sweep_file(tmp_path, SWEEP_FILE)
    root = tmp_path / "sweep"
    settings = ["epochs=2"]
    tiny_run(root / "point_mass-metra-seed=0", 0, 2, *settings)  # finished
    finished = folder_files(root / "point_mass-metra-seed=0")
    tiny_run(root / "point_mass-metra-seed=1", 1, 1)  # stopped after epoch 1 of 2
    tiny_run(root / "point_mass-metra-seed=2", 2, 1)  # its model changed after it was written: must fail alone
    model = root / "point_mass-metra-seed=2" / "run_state" / "latest" / "model.zip"
    data = bytearray(model.read_bytes())
    data[-100] ^= 0xFF
    model.write_bytes(bytes(data))

    code = main(["sweep", str(path), "--run-root", str(root)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "3 trial(s) in" in out and "1 finished, 2 to resume, 0 new" in out
    assert "point_mass-metra-seed=0: already finished, epoch 2" in out
    assert "point_mass-metra-seed=1: finished, epoch 2" in out
    assert "point_mass-metra-seed=2: failed" in out and "changed after it was written" in out
    assert "1 of 3 trial(s) failed" in err and f"metra-pretrain sweep {path} --run-root {root}" in err
    assert (root / "point_mass-metra-seed=2" / "sweep_error.txt").is_file()
    assert folder_files(root / "point_mass-metra-seed=0") == finished  # not run again: not a file touched
    # The resumed trial is the run made without a stop.
    resumed = json.loads((root / "point_mass-metra-seed=1" / "eval" / "coverage.json").read_text())
    direct = tiny_run(tmp_path / "direct", 1, 2)
    assert [r["policy_coverage"] for r in resumed] == [r["policy_coverage"] for r in direct]
    assert [r["epoch"] for r in resumed] == [0, 1, 2]
    summary = json.loads((root / "summary" / "summary.json").read_text())
    assert summary["groups"][0]["finished_seeds"] == 2 and (root / "summary" / "figure.png").is_file()


@pytest.mark.parametrize(("max_concurrent", "at_once"), [(None, 2), (1, 1), (5, 2)])
def test_max_concurrent_reaches_ray_tune_and_bounds_the_trials_at_once(tmp_path, monkeypatch, max_concurrent, at_once):
    """Two sweeps on one cluster keep their share only if Tune itself is told (Ray gives a freed CPU to any sweep)."""
    from pretrain.sweep import ray_runner

    seen, lines = fake_ray_tune(monkeypatch), []
    pending = {name: PlannedTrial(Trial(name, "point_mass", [], "point_mass", "metra", 0), load_config("point_mass"),
                                  tmp_path / name, "new") for name in ("a", "b", "c")}
    ray_runner._fit(pending, 1, None, lines.append, str(tmp_path), max_concurrent)
    assert seen == {"max_concurrent_trials": max_concurrent}
    assert lines[0] == f"running 3 trial(s), {at_once} at a time (1 CPU(s) each)"


def test_skip_leaves_out_the_trials_it_names_and_refuses_a_name_no_trial_has(tmp_path, capsys, monkeypatch):
    """--skip: runs finished on another machine (landed, their folders gone) are left out of the plan, a name of a
    trial that --only left out is no mistake, and a name of no trial of the sweep is one clear error."""
    from pretrain.sweep import ray_runner

    planned = []
    monkeypatch.setattr(ray_runner, "_fit", lambda pending, *args, **kwargs: planned.extend(pending) or {})
    path = write_sweep_file(tmp_path, SWEEP_FILE)
    root = tmp_path / "sweep"
    assert main(["sweep", str(path), "--run-root", str(root), "--skip", "point_mass-metra-seed=1",
                 "--skip", "point_mass-metra-seed=2"]) == 0
    assert planned == ["point_mass-metra-seed=0"]
    assert "sweep of 1 trial(s)" in capsys.readouterr().out
    only = read_sweep_file(ROOT / "benchmarks" / "comparison.yaml", only=["ant", "cic"]).trials
    every = read_sweep_file(ROOT / "benchmarks" / "comparison.yaml").trials
    assert [t.name for t in leave_out(only, ["ant-cic-seed=0", "half_cheetah-metra-seed=0"], every)] == [
        "ant-cic-seed=1"]
    assert main(["sweep", str(path), "--run-root", str(tmp_path / "other"), "--skip", "point_mass-metra-seed=9"]) == 2
    err = capsys.readouterr().err
    assert "--skip point_mass-metra-seed=9: no trial of this sweep has that name" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "other").exists()


def test_a_sweep_whose_every_trial_is_skipped_runs_nothing_and_keeps_the_summary_there(tmp_path, capsys, monkeypatch):
    """On a new machine where every trial of a sweep has landed: no Ray, no crash on an empty figure (2026-12-01),
    and the summary of the earlier sweeps in the run root is not overwritten with nothing."""
    from pretrain.sweep import ray_runner

    monkeypatch.setattr(ray_runner, "_fit", lambda *args, **kwargs: pytest.fail("nothing was to run"))
    path = write_sweep_file(tmp_path, SWEEP_FILE)
    root = tmp_path / "sweep"
    (root / "summary").mkdir(parents=True)
    (root / "summary" / "summary.json").write_text('{"groups": ["earlier"]}')
    skip = [arg for seed in range(3) for arg in ("--skip", f"point_mass-metra-seed={seed}")]
    assert main(["sweep", str(path), "--run-root", str(root), *skip]) == 0
    assert "--skip leaves out every trial of this sweep; nothing to run" in capsys.readouterr().out
    assert (root / "summary" / "summary.json").read_text() == '{"groups": ["earlier"]}'


def test_the_resume_line_of_a_sweep_keeps_its_share_of_the_cluster(tmp_path, capsys, monkeypatch):
    from pretrain import sweep as sweep_package
    from pretrain.sweep.ray_runner import SweepInterrupted

    def stopped(*args, **kwargs):
        assert kwargs["max_concurrent"] == 1
        raise SweepInterrupted("SIGTERM")

    monkeypatch.setattr(sweep_package, "sweep", stopped)
    assert main(cli(tmp_path, "--max-concurrent", "1", "--address", "auto", "--skip", "seed=1")) == 128 + signal.SIGTERM
    assert "--skip seed=1 --address auto --max-concurrent 1" in capsys.readouterr().err


def test_the_sweeps_signal_handlers_survive_ray_starting():
    """``ray.init`` sets a SIGTERM handler that exits 1 (the sweep's would be lost for the seconds Ray takes to
    start), and at its end the C++ core worker's failure-signal handler: the first is kept out, and the sweep's
    handlers are installed again after the second."""
    utils = pytest.importorskip("ray._private.utils")
    from pretrain.sweep.ray_runner import _signal_handlers_kept, _StopOnSignal

    def before(signum, frame):  # the program's own handler, from before the sweep
        pass

    previous = signal.signal(signal.SIGTERM, before)
    try:
        with _StopOnSignal() as stop:
            with _signal_handlers_kept():
                utils.set_sigterm_handler(lambda signum, frame: sys.exit(signum))  # what ray.init does first
                assert signal.getsignal(signal.SIGTERM) == stop._handle
                signal.signal(signal.SIGTERM, signal.SIG_DFL)  # what the core worker's handler does to Python's
                signal.signal(signal.SIGINT, signal.SIG_DFL)
            assert signal.getsignal(signal.SIGTERM) == stop._handle
            assert signal.getsignal(signal.SIGINT) == stop._handle
        assert signal.getsignal(signal.SIGTERM) is before  # restored: the program's, not Ray's
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("failures", [2, 3])
def test_ray_that_does_not_start_in_time_is_tried_again_then_one_clear_error(monkeypatch, failures):
    """Ray's node gives up after a fixed 30 s when the machine is busy (seen under `nice -n 19` beside two training
    runs): the sweep tries again, and after the last try says what happened and what to do."""
    ray = pytest.importorskip("ray")
    from pretrain.sweep import ray_runner

    calls = []

    def init(**kwargs):
        calls.append(kwargs["address"])
        if calls.count("local") <= failures:
            raise Exception("The current node timed out during startup. This could happen because some of the "
                            "raylet failed to startup or the GCS has become overloaded.")

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    if failures < ray_runner.RAY_START_ATTEMPTS:
        assert ray_runner.start_ray(None, 1) == ray_runner.available_cpus()
        assert calls == ["local", "shutdown", "local", "shutdown", "local"]
    else:
        with pytest.raises(ConfigError, match=r"Ray's node did not start .* 3 times: this machine is busy .*nothing "
                                              r"of the sweep ran\. Run the same command again"):
            ray_runner.start_ray(None, 1)
        assert calls.count("local") == 3


def ray_processes_of(pid: int) -> dict[int, int]:
    return {p: start for p, start in descendants(pid).items()}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_an_interrupted_sweep_says_how_to_resume_and_leaves_nothing_of_ray(tmp_path, sig):
    root = tmp_path / "sweep"
    args = [sys.executable, "-m", "pretrain", *cli(tmp_path, "--seeds", "0"),
            *[a for s in [*TINY, "epochs=100000"] for a in ("--set", s)]]
    sweep_process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 240
        while not (root / "seed=0" / "run_state" / "latest").is_dir() and time.monotonic() < deadline:
            assert sweep_process.poll() is None, sweep_process.communicate()
            seen.update(ray_processes_of(sweep_process.pid))
            time.sleep(0.5)
        seen.update(ray_processes_of(sweep_process.pid))
        assert (root / "seed=0" / "run_state" / "latest").is_dir(), "the trial did not start within 240 s"
        sweep_process.send_signal(sig)
        out, err = sweep_process.communicate(timeout=120)
    finally:
        if sweep_process.poll() is None:
            sweep_process.kill()
    if sig != signal.SIGKILL:  # the README's promise: 128 + the signal's number, and the command that resumes
        assert sweep_process.returncode == 128 + sig, err
        assert f"stopped by {sig.name}" in err and f"metra-pretrain sweep --run-root {root} --config point_mass" in err
        assert "Tuner.restore" not in out + err and "finished, epoch" not in out
        assert "SIGTERM received" not in err and "Traceback" not in err, err  # not Ray's C++ dump
    deadline = time.monotonic() + 20
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = alive(seen)
    names = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:80] for pid in left}
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert len(seen) >= 3 and not left, f"outlived the sweep: {names}"


def test_a_cli_run_is_continued_by_the_sweep_and_a_sweep_trial_by_the_cli(tmp_path):
    """The CLI and the sweep train the same run folder (tests/pretrain/algorithms/test_algorithm.py: a CLI run
    continued in Python): a run the CLI started and the sweep finished equals a run made in one go."""
    from pretrain.cli import main

    common = [*TINY, "epochs=2"]
    settings = [*common, "torch_threads=1"]  # what the sweep sets with cpus_per_run=1
    trial = tmp_path / "sweep" / "seed=0"
    assert main(["train", "--no-progress", "--config", "point_mass", "--run-dir", str(trial),
                 *(f"--set={item}" for item in [*settings, "epochs=1"])]) == 0
    result = sweep("point_mass", tmp_path / "sweep", seeds=[0], overrides=common)
    assert [(o.name, o.outcome, o.epoch) for o in result.outcomes] == [("seed=0", "finished", 2)]
    train(load_config("point_mass", [*settings, "seed=0"]), tmp_path / "direct", verbose=0)
    made = json.loads((tmp_path / "direct" / "eval" / "coverage.json").read_text())
    swept = json.loads((trial / "eval" / "coverage.json").read_text())
    assert [r["policy_coverage"] for r in swept] == [r["policy_coverage"] for r in made]
    assert main(["train", "--no-progress", "--resume", str(trial), "--set", "epochs=3"]) == 0
    assert json.loads((trial / "eval" / "coverage.json").read_text())[-1]["epoch"] == 3


@pytest.mark.parametrize(("settings", "cpus", "threads"), [
    (("collector=sequential",), 2, 2),
    (("collector=overlapped",), 2, 1),  # the learner's thread and the worker's process: the two CPUs reserved
    (("collector=overlapped", "collector_workers=2"), 4, 2),
    (("collector=overlapped",), 1, 1),
])
def test_a_trials_torch_threads_leave_the_overlapped_collectors_cores_free(settings, cpus, threads):
    trial = Trial(name="t", config_name="ant", overrides=settings, env="ant", method="metra", seed=0)
    assert trial.config(cpus).torch_threads == threads


def test_a_rerun_in_a_group_carried_from_an_earlier_summary_is_measured_and_kept(tmp_path, monkeypatch):
    """benchmarks/comparison.py: a group whose earlier runs' folders are gone keeps the earlier summary's numbers
    until it finishes as many runs again; a run re-run meanwhile is still evaluated held out (its end and its
    snapshots along the run) and kept beside the results, so that its numbers outlive its folder too."""
    comparison = benchmark_script("comparison", monkeypatch)
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({
        "seeds": [0, 1], "envs": {"pm": "point_mass"}, "epochs": {"pm": {"metra": 2}},
        "epoch_seconds": {"pm": {"metra": 1.8}},
        "set": {"snapshot_every": 1, "learning_starts": 100, "net_width": 16,
                "save_replay_buffer": False}, "methods": {"metra": {}}}))
    trials = {t.name: t for t in read_sweep_file(sweep_file).trials}
    runs, out = tmp_path / "runs", tmp_path / "results"
    monkeypatch.setattr(sys, "argv", ["comparison.py", "--sweep-file", str(sweep_file), "--run-root", str(runs),
                                      "--out", str(out), "--goals", "0", "--held-out-every", "1"])
    for name, trial in trials.items():
        train(trial.config(1), runs / name, verbose=0)
    comparison.main()  # both seeds finished: the earlier summary
    earlier = json.loads((out / "summary.json").read_text())["groups"][0]
    assert earlier["finished_seeds"] == 2 and "carried" not in earlier
    # A new machine: the run folders gone, with nothing kept of them (as before runs were kept); seed 0 runs again.
    shutil.rmtree(runs)
    shutil.rmtree(out / "finished_runs")
    shutil.rmtree(out / "held_out_snapshots")
    train(trials["pm-metra-seed=0"].config(1), runs / "pm-metra-seed=0", verbose=0)
    summary = json.loads((out / "summary.json").read_text())  # as if measured with zero-shot goals before
    summary["groups"][0]["goal_distance"] = {"values": [1.0, 2.0], "mean": 1.5}
    (out / "summary.json").write_text(json.dumps(summary))
    earlier = summary["groups"][0]
    comparison.main()  # --goals 0: no zero-shot rows, though the carried group holds distances
    assert "Zero-shot goal reaching" not in (out / "table.md").read_text()
    group = json.loads((out / "summary.json").read_text())["groups"][0]
    assert group["held_out"] == earlier["held_out"] and "carried" in group  # the ends stay the earlier summary's
    assert "re-run since (pm-metra-seed=0)" in group["carried"]
    assert [point["epoch"] for point in group["held_out_curve"]] == [1, 2]  # the re-run's snapshots, held out
    kept_end = json.loads((out / "finished_runs" / "pm-metra-seed=0.json").read_text())["held_out"]
    kept_along = json.loads((out / "held_out_snapshots" / "pm-metra-seed=0.json").read_text())["points"]
    assert kept_end["epoch"] == 2 and kept_end["held_out_policy_coverage"] >= 1
    assert [point["epoch"] for point in kept_along] == [1, 2]
    assert kept_along[-1]["held_out_policy_coverage"] == kept_end["held_out_policy_coverage"]


def test_the_comparison_names_the_runs_landed_at_their_budget_for_the_sweeps_skip(tmp_path, monkeypatch, capsys):
    """benchmarks/comparison.py --landed: the trials whose kept record reaches the sweep file's budget (a record of a
    shorter budget, as before a run was extended, and a trial with none are not), one a line for campaign.sh."""
    comparison = benchmark_script("comparison", monkeypatch)
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({
        "seeds": [0, 1], "envs": {"pm": "point_mass"}, "epochs": {"pm": {"metra": 4, "lsd": 4}},
        "methods": {"metra": {}, "lsd": {"algo": "lsd"}}}))
    kept = tmp_path / "results" / "finished_runs"
    kept.mkdir(parents=True)
    for name, last in (("pm-metra-seed=0", 4), ("pm-metra-seed=1", 5), ("pm-lsd-seed=0", 3)):
        (kept / f"{name}.json").write_text(json.dumps({"history": [{"epoch": 0}, {"epoch": last}]}))
    monkeypatch.setattr(sys, "argv", ["comparison.py", "--sweep-file", str(sweep_file), "--out",
                                      str(tmp_path / "results"), "--landed"])
    comparison.main()
    assert capsys.readouterr().out.split() == ["pm-metra-seed=0", "pm-metra-seed=1"]


def test_the_comparison_ranks_methods_at_equal_env_steps_and_by_total_coverage():
    """benchmarks/comparison.py beside its end-of-run ranking: the methods at one snapshot epoch (equal env steps),
    naming those whose budget ends before it and those not evaluated there yet; and by total coverage at the end of
    the groups whose seeds have all finished (the exploration methods' measure), naming the others."""
    comparison = benchmark_script("comparison")

    def group(method, curve, total=None, finished=2):
        points = [{"epoch": epoch, "env_steps": epoch * 1600, "mean": mean, "values": values}
                  for epoch, mean, values in curve]
        final = {"hours": 1.0, **({"total": {"mean": total}} if total else {})}
        return {"env": "ant", "method": method, "held_out_curve": points, "final": final, "seeds": [0, 1],
                "finished_seeds": finished}

    summary = {"groups": [group("metra", [(250, 40, [30, 50]), (1000, 300, [290, 310])], total=3200),
                          group("lsd", [(1000, 6, [6])], finished=1, total=5000),
                          group("dads", [(250, 20, [20, 20])], total=140),
                          group("icm", [], total=900), group("diayn", [])]}
    budgets = {("ant", method): 1000 for method in ("metra", "lsd", "icm", "diayn")} | {("ant", "dads"): 350}
    assert comparison.ordering_at(summary, 1000, budgets) == [
        "- ant (held out, epoch 1000 = 1.6 M env steps): metra (300, 2 seeds) > lsd (6, 1 seed); "
        "its budget ends before: dads; no snapshot there evaluated (yet): icm, diayn"]
    assert comparison.total_ordering(summary) == [
        "- ant: metra (3200 at 1.00 h) > icm (900 at 1.00 h) > dads (140 at 1.00 h); not logged by their runs: diayn; "
        "not finished: lsd"]
