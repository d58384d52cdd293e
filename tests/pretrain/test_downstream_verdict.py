"""Verdicts over seeds of the downstream campaign, its sweep file, and the sweep through Ray."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pretrain.config import ConfigError
from pretrain.downstream.runs import RunSpec
from pretrain.downstream.sweep import read_sweep_file, select
from pretrain.downstream.verdict import gather, interval, verdicts, write_summary
from tests.benchmark_scripts import benchmark_script
from tests.pretrain.helpers import fake_ray_tune

ROOT = Path(__file__).resolve().parents[2]


def downstream_cli():
    return benchmark_script("downstream")


def write_run(folder: Path, task: str, agent: str, seed: int, final: float, protocol: str | None = None,
              untrained: float = 0.0) -> None:
    row = {"task": task, "agent": agent, "protocol": protocol, "seed": seed, "finished": True,
           "final": {"mean": final, "returns": [final], "steps": 1000}}
    if protocol:
        row.update(points=[(0, untrained), (1000, final)], untrained_controller={"mean": untrained})
    name = f"{task}-{agent}-{protocol}-seed={seed}" if protocol else f"{task}-{agent}-seed={seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(row))


def test_interval_is_the_student_t_interval_of_the_mean():
    result = interval([1.0, 2.0, 3.0, 4.0])
    # mean 2.5, sample std 1.291, t(0.975, 3) = 3.182: half-width 3.182 * 1.291 / 2 = 2.054
    assert result["mean"] == 2.5 and result["high"] - 2.5 == pytest.approx(2.054, abs=1e-3)
    assert interval([5.0]) == {"mean": 5.0, "low": 5.0, "high": 5.0, "values": [5.0], "seeds": 1}


def test_verdicts_compare_unpaired_and_paired_and_measure_the_distance_to_the_better_reference(tmp_path):
    runs = tmp_path / "runs"
    trained = [5.0, 6.0, 5.5, 6.5]
    for seed, value in enumerate(trained):
        write_run(runs, "ant_multigoals", "controller", seed, value, "paper", untrained=value - 1.0)
        # Random skills overlap the trained controller unpaired, but every seed is 0.5 below it: paired above 0.
        write_run(runs, "ant_multigoals", "random", seed, value - 0.5 + (0.01 * seed))
        write_run(runs, "ant_multigoals", "untrained", seed, 1.0 + 0.1 * seed)
        write_run(runs, "ant_multigoals", "zero_shot", seed, 6.0)
        write_run(runs, "ant_multigoals", "lookahead", seed, 7.0 + 0.1 * seed)
    entry = verdicts(gather([runs]))["ant_multigoals"]["paper"]
    assert entry["trained"]["mean"] == pytest.approx(5.75)
    random = entry["against"]["random"]
    assert not random["separated"] and random["paired_separated"]
    assert random["paired_difference"]["mean"] == pytest.approx(0.5 - 0.015)
    assert entry["against"]["untrained"]["separated"] and entry["against"]["untrained"]["paired_separated"]
    assert entry["against"]["untrained_controller"]["paired_difference"]["mean"] == pytest.approx(1.0)
    best = entry["best_reference"]
    assert best["name"] == "lookahead" and best["ratio"] == pytest.approx(5.75 / 7.15)
    assert best["within_20_percent"] is True  # 0.804
    # The distance to the zero-shot reference (issue 41): zero_shot is the only one run here, 0.25 above on average.
    zero_shot = entry["zero_shot_reference"]
    assert zero_shot["name"] == "zero_shot" and zero_shot["ratio"] == pytest.approx(5.75 / 6.0)
    assert zero_shot["paired_difference"]["mean"] == pytest.approx(-0.25)
    assert entry["targets"] == {"above_random_skills": False, "above_untrained_skills": True,
                                "within_20_percent_of_the_better_reference": True}
    assert "flat" not in entry["against"]  # not run: not judged


def test_one_seed_of_a_trained_controller_separates_from_nothing(tmp_path):
    # A pilot's single seed far above 8 seeds of random skills: one value is no interval, so no target is met by it.
    runs = tmp_path / "runs"
    write_run(runs, "ant_multigoals", "controller", 0, 4.7, "paper", untrained=3.4)
    for seed in range(8):
        write_run(runs, "ant_multigoals", "random", seed, 2.8 + 0.05 * seed)
    entry = verdicts(gather([runs]))["ant_multigoals"]["paper"]
    assert entry["trained"]["seeds"] == 1 and entry["against"]["random"]["other"]["high"] < 4.7
    assert entry["against"]["random"]["separated"] is False
    assert entry["targets"]["above_random_skills"] is False
    # and the table does not print the single value as an interval of zero width
    row = next(line for line in write_summary([runs], tmp_path / "out")["table"].splitlines()
               if line.startswith("| ant_multigoals | paper |"))
    assert "| 4.70 (1 seed) at " in row and "(4.70-4.70)" not in row


def test_a_variant_protocol_is_compared_with_the_papers_paired_by_seed(tmp_path):
    """An ablation's question is whether it beats the paper's protocol: unpaired the intervals overlap here, paired by
    seed every seed is 1.0 to 1.3 above."""
    runs = tmp_path / "runs"
    paper = [3.0, 6.0, 4.0, 7.0]
    for seed, value in enumerate(paper):
        write_run(runs, "cheetah_goal", "controller", seed, value, "paper")
        write_run(runs, "cheetah_goal", "controller", seed, value + 1.0 + 0.1 * seed, "paper_task_view")
        write_run(runs, "cheetah_goal", "controller", seed, value - 2.0 - 0.1 * seed, "paper_ten_passes")
    verdict = verdicts(gather([runs]))["cheetah_goal"]
    assert "against_default" not in verdict["paper"]
    better = verdict["paper_task_view"]["against_default"]
    assert not better["separated"] and better["paired_separated"]
    assert better["paired_difference"]["mean"] == pytest.approx(1.15)
    worse = verdict["paper_ten_passes"]["against_default"]
    assert not worse["paired_separated"] and worse["paired_difference"]["high"] < 0
    text = write_summary([runs], tmp_path / "out")["table"]
    assert "| cheetah_goal | paper_task_view | 6.15 (" in text and "over 4 seeds **>0** |" in text
    assert "| cheetah_goal | paper_ten_passes | 2.85 (" in text and "over 4 seeds **<0** |" in text
    # One seed is no interval: below, but not marked so.
    write_run(runs, "cheetah_goal", "controller", 0, 1.0, "pilot")
    text = write_summary([runs], tmp_path / "out")["table"]
    assert "| cheetah_goal | pilot | 1.00 (1 seed) | 5.00 (" in text and "over 1 seed |" in text


def test_the_summary_reads_the_v03_benchmarks_files_as_protocol_v03(tmp_path):
    old = {"task": "cheetah_goal", "agent": "hierarchical", "seed": 0, "points": [[0, 2.0], [102400, 7.0]],
           "episodes": [50, 50]}
    (tmp_path / "cheetah_goal-hierarchical-s0.json").write_text(json.dumps(old))
    (tmp_path / "cheetah_goal-flat-s0.json").write_text(json.dumps({**old, "agent": "flat", "points": [[0, 0.0]]}))
    results = gather([tmp_path])
    assert set(results["cheetah_goal"]) == {"controller/v0.3", "flat/v0.3"}
    entry = verdicts(results)["cheetah_goal"]["v0.3"]
    assert entry["trained"]["mean"] == 7.0 and entry["steps"] == [102400]
    assert entry["against"]["untrained_controller"]["other"]["mean"] == 2.0
    summary = write_summary([tmp_path], tmp_path / "out")
    assert "| cheetah_goal | v0.3 | 1 | 7.00" in summary["table"]
    assert (tmp_path / "out" / "figure.png").stat().st_size > 0


SWEEP = """
seeds: [0, 1]
tasks: {ant_multigoals: 5000, cheetah_goal: 6000}
agents: {controller: [paper], references: [random, lookahead]}
eval_every: 2500
"""


def test_a_sweep_file_lists_references_first_then_learned_runs_seed_by_seed(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    specs = read_sweep_file(path)
    assert [s.name for s in specs[:2]] == ["ant_multigoals-random-seed=0", "ant_multigoals-lookahead-seed=0"]
    assert all(s.agent in ("random", "lookahead") for s in specs[:8]) and len(specs) == 12
    learned = specs[8:]
    assert [(s.task, s.seed, s.steps) for s in learned] == [("ant_multigoals", 0, 5000), ("cheetah_goal", 0, 6000),
                                                             ("ant_multigoals", 1, 5000), ("cheetah_goal", 1, 6000)]
    small = read_sweep_file(path, {"steps": 100, "final_episodes": 3, "eval_every": 50, "eval_episodes": None})
    assert {s.steps for s in small if s.protocol} == {100} and {s.final_episodes for s in small} == {3}
    assert read_sweep_file(ROOT / "benchmarks" / "downstream.yaml")  # the campaign's file reads



def test_only_adds_up_names_of_one_kind_and_narrows_down_across_kinds():
    specs = read_sweep_file(ROOT / "benchmarks" / "downstream.yaml")

    def names(only):
        return {spec.name.rsplit("-seed=", 1)[0] for spec in select(specs, only)}

    assert names(["controller", "paper"]) == {f"{t}-controller-paper" for t in
                                              ("ant_multigoals", "cheetah_goal", "cheetah_hurdle", "quadruped_goal")}
    assert names(["controller", "flat", "cheetah_goal"]) == {"cheetah_goal-controller-paper",
                                                             "cheetah_goal-controller-v0.3", "cheetah_goal-flat-paper"}
    assert names(["random", "untrained", "ant_multigoals"]) == {"ant_multigoals-random", "ant_multigoals-untrained"}
    with pytest.raises(ConfigError, match="'contoller' is no task, agent or protocol"):
        select(specs, ["contoller"])
    with pytest.raises(ConfigError, match="selects no run"):
        select(specs, ["random", "paper"])  # a reference controller has no protocol


def test_the_sweep_command_adds_up_a_repeated_only_and_seeds(monkeypatch):
    cli = downstream_cli()
    seen = {}
    monkeypatch.setattr(cli, "_sweep", lambda args: seen.update(only=args.only, seeds=args.seeds) or 0)
    assert cli.main(["sweep", "f.yaml", "--run-root", "r", "--only", "v0.3", "--only", "cheetah_goal", "cheetah_hurdle",
                     "--seeds", "0", "--seeds", "1"]) == 0
    assert seen == {"only": ["v0.3", "cheetah_goal", "cheetah_hurdle"], "seeds": [0, 1]}


@pytest.mark.parametrize("max_concurrent", [None, 1])
def test_the_downstream_sweep_tells_ray_tune_its_most_runs_at_once(tmp_path, monkeypatch, max_concurrent):
    """A sweep sharing a cluster keeps its share only if Tune itself is told (Ray gives a freed CPU to any sweep)."""
    from pretrain.downstream import sweep as downstream_sweep

    seen, lines = fake_ray_tune(monkeypatch), []
    specs = [RunSpec("cheetah_hurdle", "random", seed) for seed in (0, 1, 2)]
    downstream_sweep._fit(specs, tmp_path, 1, None, lines.append, str(tmp_path), max_concurrent)
    assert seen == {"max_concurrent_trials": max_concurrent}
    assert lines == [f"running 3 run(s), {max_concurrent or 2} at a time"]


def test_the_downstream_sweep_refuses_a_bad_max_concurrent_in_one_line(tmp_path, capsys):
    cli = downstream_cli()
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: [0]\ntasks: {cheetah_hurdle: 200}\nagents: {references: [random]}\n")
    assert cli.main(["sweep", str(path), "--run-root", str(tmp_path / "root"), "--max-concurrent", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--max-concurrent (the most runs of this sweep at once) must be an integer >= 1" in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "root").exists()


def test_a_stopped_downstream_sweep_exits_as_the_signal_and_prints_a_resume_line_the_shell_reads(
        tmp_path, capsys, monkeypatch):
    """A queue tells a stop from failed runs by the exit status (SIGTERM: 143), and the resume line must survive a
    run root with a space in it."""
    import shlex
    import signal

    from pretrain.downstream import sweep as downstream_sweep
    from pretrain.sweep.ray_runner import SweepInterrupted

    def stopped(*args, **kwargs):
        raise SweepInterrupted("SIGTERM")

    monkeypatch.setattr(downstream_sweep, "sweep", stopped)
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: [0]\ntasks: {cheetah_hurdle: 200}\nagents: {references: [random]}\n")
    argv = ["sweep", str(path), "--run-root", str(tmp_path / "my runs"), "--only", "random"]
    assert downstream_cli().main(argv) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert "stopped by SIGTERM" in err, err
    resume = err.split("when you run: ", 1)[1].strip()
    assert shlex.split(resume)[2:] == argv


@pytest.mark.parametrize(("text", "message"), [
    ("seeds: [0]\ntasks: {ant: 10}\nagents: {controller: [paper]}", "unknown task 'ant'"),
    ("seeds: [0]\ntasks: {ant_multigoals: 10}\nagents: {controller: [paper2]}", "agents.controller must list some"),
    ("seeds: [0, 0]\ntasks: {ant_multigoals: 10}\nagents: {controller: [paper]}", "distinct integers"),
    ("seeds: [0]\ntasks: {ant_multigoals: 10}\nagents: {flat: [paper]}\nepochs: 3", "unknown key 'epochs'"),
    ("seeds: [0]\ntasks: {ant_multigoals: -1}\nagents: {flat: [paper]}", "tasks.ant_multigoals must be a positive"),
])
def test_bad_sweep_files_are_one_clear_error(tmp_path, text, message):
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_sweep_file(path)


def test_a_reference_run_takes_no_budget():
    with pytest.raises(ValueError, match="is not trained: give no protocol or steps"):
        RunSpec("ant_multigoals", "lookahead", 0, "paper")
    with pytest.raises(ValueError, match="needs steps > 0"):
        RunSpec("ant_multigoals", "controller", 0, "paper")


@pytest.mark.slow
def test_the_sweep_runs_through_ray_and_a_second_call_runs_only_what_is_not_finished(tmp_path):
    """Tiny budgets: two reference runs and one learned run; then again with a learned run added. The first call runs
    one at a time (``--max-concurrent 1``), as a sweep sharing a cluster with another does."""
    path = tmp_path / "sweep.yaml"
    path.write_text("seeds: [0]\ntasks: {cheetah_hurdle: 200}\nagents: {controller: [v0.3], references: [random]}\n"
                    "eval_every: 100\neval_episodes: 1\nfinal_episodes: 2\n")
    root = tmp_path / "root"
    command = [sys.executable, str(ROOT / "benchmarks" / "downstream.py"), "sweep", str(path), "--run-root", str(root)]
    first = subprocess.run([*command, "--max-concurrent", "1"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "2 run(s)" in first.stdout and "0 finished, 2 to run" in first.stdout and "1 at a time" in first.stdout
    runs = sorted(p.name for p in (root / "runs").glob("*.json"))
    assert runs == ["cheetah_hurdle-controller-v0.3-seed=0.json", "cheetah_hurdle-random-seed=0.json"]
    # One after the other: the later run began (its end less its seconds) after the earlier one ended.
    ends = sorted((p.stat().st_mtime, json.loads(p.read_text())["seconds"]) for p in (root / "runs").glob("*.json"))
    assert ends[1][0] - ends[1][1] >= ends[0][0] - 0.05, ends
    before = {p: p.stat().st_mtime_ns for p in (root / "runs").glob("*.json")}
    path.write_text(path.read_text().replace("agents: {controller: [v0.3]", "agents: {controller: [v0.3, paper]"))
    second = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "2 finished, 1 to run" in second.stdout
    assert {p: p.stat().st_mtime_ns for p in before} == before  # finished runs untouched
    row = json.loads((root / "runs" / "cheetah_hurdle-controller-paper-seed=0.json").read_text())
    assert row["finished"] and row["algorithm"] == "PPO" and len(row["final"]["returns"]) == 2


def test_the_estimate_counts_the_k10_variants_transitions_in_its_own_episodes():
    """K = 10: 200,000 controller steps in 2 M low-level steps, learning after 10,000, then 100 updates (the bundled
    skills' setting) per epoch of 8 episodes of 20 skill steps."""
    spec = RunSpec("ant_multigoals", "controller", 0, protocol="paper_k10", steps=2_000_000, eval_every=100_000)
    costs = {"skill_env_step": 0.0, "sac_paper_k10_update": 1.0}
    assert downstream_cli()._run_seconds(spec, costs) == pytest.approx((200_000 - 10_000) * 100 / (8 * 20))


def test_the_estimate_counts_each_ablations_ppo_steps_from_its_own_measured_update():
    """``paper_task_view`` makes the paper's 10 minibatch steps per epoch, ``paper_ten_passes`` v0.3's 20."""
    cli = downstream_cli()
    specs = {spec.protocol: spec for spec in read_sweep_file(ROOT / "benchmarks" / "downstream_ablation.yaml")
             if spec.seed == 0}
    epochs = 2_000_000 / (64 * 200)
    costs = {"skill_env_step": 0.0, "ppo_paper_task_view_minibatch_step": 1.0,
             "ppo_paper_ten_passes_minibatch_step": 1.0}
    assert cli._run_seconds(specs["paper_task_view"], costs) == pytest.approx(10 * epochs)
    assert cli._run_seconds(specs["paper_ten_passes"], costs) == pytest.approx(20 * epochs)
