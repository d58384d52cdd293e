"""The ``metra-pretrain`` command: its ``--help`` is :data:`DESCRIPTION`, plain text."""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

DESCRIPTION = """metra-pretrain: train skills (METRA or a baseline), resume a run, export and evaluate its skills.

examples:
  metra-pretrain train --config ant --run-dir runs/ant-s0 --seed 0
  metra-pretrain train --resume runs/ant-s0                        # continue a killed run
  metra-pretrain train --resume runs/ant-s0 --set epochs=4000      # ... and train it longer
  metra-pretrain train --config point_mass --run-dir runs/pm --set net_width=128
  metra-pretrain export runs/ant-s0 skills/ant                     # pickle-free skill checkpoint
  metra-pretrain export runs/ant-s0/snapshots/epoch_001900 skills/ant --held-out eval/coverage.json  # a snapshot
  metra-pretrain export --untrained --config ant skills/untrained  # freshly initialised networks
  metra-pretrain evaluate ant --out eval/ant                       # coverage + figures of a checkpoint
  metra-pretrain goal-eval ant --goals 50 --out eval/ant-goals     # zero-shot goal reaching
  metra-pretrain sweep --config ant --seeds 0 1 --run-root runs/sweep  # seeds (and grids) through Ray Tune
  metra-pretrain sweep benchmarks/comparison.yaml --run-root runs/comparison --cpus-per-run 2   # a sweep file
"""


def _train(args: argparse.Namespace) -> int:
    from pretrain.algorithms.common.backbones import NonFiniteLossError
    from pretrain.config import ConfigError, load_config, parse_override
    from pretrain.run.run_config import read_run_config
    from pretrain.run.run_state import ResumeError, has_saved_state, run_state_dir
    from pretrain.run.signals import exit_status
    from pretrain.run.trainer import train

    run_dir = Path(args.resume or args.run_dir or ".")
    resume_hint = f"resume with: metra-pretrain train --resume {shlex.quote(str(run_dir))}"
    try:
        overrides = list(args.set or [])
        if args.seed is not None:
            overrides.append(f"seed={args.seed}")
        if args.resume:
            given = [option for option, value in (("--config", args.config), ("--run-dir", args.run_dir)) if value]
            if given:
                from pretrain.run.run_config import RESUMABLE_KEYS

                raise ConfigError(f"--resume takes the run folder and its config from {run_dir}; leave out "
                                  f"{' and '.join(given)} (a resumed run may change {', '.join(sorted(RESUMABLE_KEYS))}"
                                  " with --set KEY=VALUE), or start a new run with --config and --run-dir")
            # The clear error for a folder without a run comes before any config error (train() recovers the state
            # once it holds the run folder's lock).
            run_state_dir(run_dir, recover=False, resume=True)
            config = read_run_config(run_dir, dict(parse_override(item) for item in overrides))
        else:
            if not args.run_dir:
                raise ConfigError("give --run-dir for a new run, or --resume RUN_DIR to continue one")
            config = load_config(args.config or "ant", overrides)
        with warnings.catch_warnings():
            warnings.showwarning = _resume_warnings_as_lines(warnings.showwarning)
            result = train(config, run_dir, resume=bool(args.resume), progress_bar=not args.no_progress)
    except (ConfigError, ResumeError) as error:
        return _fail(error)
    except NonFiniteLossError as error:
        print(f"metra-pretrain: stopped: {error}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:  # before training started (signals during training stop it after the epoch)
        kept = (f"the last saved run state is kept ({resume_hint})" if has_saved_state(run_dir)
                else "no run state was saved; run the same command again to start the run")
        print(f"metra-pretrain: interrupted; {kept}", file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a folder made read-only under a running run, ...
        if has_saved_state(run_dir):
            then = f"the last saved run state is kept. Free space or fix permissions, then {resume_hint}"
        else:  # (--resume needs a saved state) a folder whose first save did not finish starts afresh
            then = ("no run state was saved. Free space or fix permissions, then run the same command again (it "
                    "starts the run afresh), or choose another --run-dir")
        print(f"metra-pretrain: error: cannot write the run ({error.strerror or error}: {error.filename or run_dir}); "
              f"{then}", file=sys.stderr)
        return 2
    if result.stopped_by:
        print(f"metra-pretrain: {result.stopped_by}: stopped after saving epoch {result.epoch}; {resume_hint}",
              file=sys.stderr)
        return exit_status(result.stopped_by)
    if result.history:
        last = result.history[-1]
        coverage = (f"policy coverage {last['policy_coverage']} bins" if last["policy_coverage"] is not None
                    else str(last.get("coverage")))
        print(f"done: epoch {last['epoch']}, {coverage}; results in {run_dir}")
    return 0


def _resume_warnings_as_lines(show: Callable[..., None]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints a :class:`ResumeWarning` as one line of the command's own and hands
    other warnings to ``show``."""
    from pretrain.run.run_state import ResumeWarning

    def show_line(message, category, *args, **kwargs) -> None:
        if issubclass(category, ResumeWarning):
            print(f"metra-pretrain: warning: {message}", file=sys.stderr, flush=True)
        else:
            show(message, category, *args, **kwargs)

    return show_line


def _fail(error: Exception | str) -> int:
    print(f"metra-pretrain: error: {error}", file=sys.stderr)
    return 2


def _export(args: argparse.Namespace) -> int:
    from metra_gym.skill_checkpoint.format import CheckpointError
    from pretrain.config import ConfigError, load_config
    from pretrain.export import export_checkpoint, export_run, export_untrained
    from pretrain.run.run_state import ResumeError

    try:
        if args.untrained:
            if len(args.paths) != 1:
                raise ConfigError("export --untrained takes one folder: metra-pretrain export --untrained "
                                  "--config ant OUT_DIR")
            out = export_untrained(load_config(args.config, args.set), args.paths[0], force=args.force,
                                   figures=args.figure or ())
            source = f"untrained {args.config} networks"
        else:
            if len(args.paths) != 2:
                raise ConfigError("export takes a run folder and a checkpoint folder: metra-pretrain export RUN_DIR "
                                  "OUT_DIR (or --untrained --config NAME OUT_DIR)")
            source = args.paths[0]
            if (Path(source) / "model.safetensors").is_file():  # a skill checkpoint (a snapshot), not a run folder
                out = export_checkpoint(source, args.paths[1], force=args.force, command=args.command_line,
                                        held_out=args.held_out, goals=args.goals, figures=args.figure or ())
            else:
                out = export_run(source, args.paths[1], force=args.force, command=args.command_line,
                                 held_out=args.held_out, goals=args.goals, figures=args.figure or ())
    except (ConfigError, ResumeError, CheckpointError) as error:
        return _fail(error)
    except OSError as error:
        where = error.filename or (args.paths[-1] if args.paths else "")
        return _fail(f"cannot write the checkpoint ({error.strerror or error}: {where}); nothing was written")
    print(f"exported {source} to {out}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from metra_gym.skill_checkpoint.format import CheckpointError
    from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint

    try:
        result = evaluate_checkpoint(args.checkpoint, args.out, n_skills=args.skills, seed=args.seed,
                                     revision=args.revision)
    except (CheckpointError, ValueError) as error:
        print(f"metra-pretrain: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk, a folder made read-only during the evaluation, ...
        return _fail(f"cannot write the results ({error.strerror or error}: {error.filename or args.out})")
    tasks = f", {result['tasks_achieved']} of {len(result['tasks'])} tasks achieved" if "tasks" in result else ""
    training = result.get("training_tasks")
    if training:  # a run's snapshot or export on an environment with tasks: the run's queue and total task coverage
        tasks += (f" (training up to this checkpoint: {training['queue_tasks_achieved']} by the last 100,000 "
                  f"transitions, {training['total_tasks_achieved']} by any)")
    print(f"{args.checkpoint}: policy coverage {result['policy_coverage']} bins{tasks} "
          f"({args.skills} deterministic skills x {result['steps']} steps); figures and coverage.json in {args.out}")
    return 0


def _goal_eval(args: argparse.Namespace) -> int:
    from metra_gym.skill_checkpoint.format import CheckpointError
    from pretrain.evaluation.goal_reaching import goal_eval

    try:
        result = goal_eval(args.checkpoint, args.out, n_goals=args.goals, seed=args.seed,
                           baseline=not args.no_baseline, baseline_checkpoint=args.baseline)
    except (CheckpointError, ValueError) as error:
        print(f"metra-pretrain: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk, a folder made read-only during the evaluation, ...
        return _fail(f"cannot write the results ({error.strerror or error}: {error.filename or args.out})")
    for name in ("trained", "untrained"):
        if name in result and "reached" in result[name]:  # the tasks' goal states (Kitchen)
            print(f"{name:9s}: {result[name]['reached']} of {len(result[name]['tasks'])} task goals reached")
        elif name in result:
            low, high = result[name]["ci95"]
            print(f"{name:9s}: final distance {result[name]['mean']:.2f} (95 % interval {low:.2f}-{high:.2f}) "
                  f"over {args.goals} goals")
            near = result["within_reach"].get(name, {})
            if near.get("mean") is not None:
                print(f"{'':9s}  {near['mean']:.2f} over the {result['within_reach']['n_goals']} goals within the "
                      "skills' reach")
    plot = "" if "reached" in result["trained"] else " and goal_paths.png"
    print(f"results{plot} in {args.out}")
    return 0


def _sweep_command(args: argparse.Namespace) -> str:
    """The command line of this sweep, as the user runs it again to resume."""
    words = ["metra-pretrain", "sweep", *([args.sweep_file] if args.sweep_file else []), "--run-root", args.run_root]
    if args.config:
        words += ["--config", args.config]
    if args.seeds is not None:
        words += ["--seeds", *map(str, args.seeds)]
    for option, values in (("--grid", args.grid), ("--set", args.set), ("--only", args.only), ("--skip", args.skip)):
        for value in values or []:
            words += [option, value]
    if args.cpus_per_run != 1:
        words += ["--cpus-per-run", str(args.cpus_per_run)]
    if args.address:
        words += ["--address", args.address]
    if args.max_concurrent is not None:
        words += ["--max-concurrent", str(args.max_concurrent)]
    return shlex.join(words)


def _sweep(args: argparse.Namespace) -> int:
    from pretrain.config import ConfigError
    from pretrain.sweep import SweepInterrupted, parse_grid, sweep

    try:
        if args.sweep_file:
            given = [option for option, value in (("--config", args.config), ("--seeds", args.seeds),
                                                  ("--grid", args.grid)) if value]
            if given:
                raise ConfigError(f"the sweep file {args.sweep_file} gives the configs, seeds and methods; leave out "
                                  f"{' and '.join(given)} (--set KEY=VALUE applies to every trial)")
        result = sweep(args.config or "ant", args.run_root, args.seeds, parse_grid(args.grid or []), args.set,
                       cpus_per_run=args.cpus_per_run, address=args.address, sweep_file=args.sweep_file,
                       only=args.only, echo=lambda line: print(line, flush=True),
                       max_concurrent=args.max_concurrent, skip=args.skip)
    except ConfigError as error:
        return _fail(error)
    except SweepInterrupted as stop:
        print(f"metra-pretrain: sweep stopped by {stop.signal_name}; finished trials are kept and each unfinished "
              "one resumes from its last saved run state when you run the same command again:\n  "
              f"{_sweep_command(args)}", file=sys.stderr)
        return stop.exit_status
    except KeyboardInterrupt:  # before any trial started (while the run folders were checked)
        print(f"metra-pretrain: sweep interrupted before any trial started; to run it: {_sweep_command(args)}",
              file=sys.stderr)
        return 130
    if result.summary_dir is None:  # --skip left out every trial
        return 0
    for outcome in result.outcomes:
        line = f"{outcome.name}: {outcome.outcome}, epoch {outcome.epoch}, policy coverage {outcome.policy_coverage}"
        print(line + (f"; {outcome.error}" if outcome.error else ""))
    print(f"run folders in {args.run_root}; summary over seeds in {result.summary_dir}")
    if result.failed:
        print(f"metra-pretrain: {len(result.failed)} of {len(result.outcomes)} trial(s) failed (the others are "
              f"done); fix the cause, then run the same command again: {_sweep_command(args)}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    from pretrain.config import builtin_configs
    from pretrain.sweep.ray_runner import ADDRESS_HELP, MAX_CONCURRENT_HELP

    parser = argparse.ArgumentParser(prog="metra-pretrain", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train skills in a run folder (or --resume a run)")
    train.add_argument("--config", help=f"bundled config {builtin_configs()} or a YAML file (default: ant)")
    train.add_argument("--run-dir", help="the run folder: run state, evaluations, snapshots, TensorBoard logs")
    train.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last saved run state")
    train.add_argument("--seed", type=int, help="random seed (default: the config's)")
    train.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config key (repeatable)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    train.set_defaults(func=_train)

    export = commands.add_parser("export", help="write a run's skills as a pickle-free checkpoint folder")
    export.add_argument("paths", nargs="+", metavar="[RUN_DIR | SNAPSHOT] OUT_DIR",
                        help="the run folder (its latest run state is exported), or a snapshot of it "
                             "(RUN_DIR/snapshots/epoch_*, copied with the results given), and the checkpoint folder "
                             "to write (config.json, model.safetensors, README.md)")
    export.add_argument("--untrained", action="store_true",
                        help="write freshly initialised networks of --config instead (the baseline of evaluations)")
    export.add_argument("--config", default="ant", help="with --untrained: the config whose networks to initialise")
    export.add_argument("--set", action="append", metavar="KEY=VALUE", help="with --untrained: override a config key")
    export.add_argument("--force", action="store_true", help="replace a non-empty OUT_DIR")
    export.add_argument("--held-out", metavar="COVERAGE_JSON",
                        help="record a held-out evaluation (the coverage.json of metra-pretrain evaluate)")
    export.add_argument("--goals", metavar="GOAL_JSON",
                        help="record zero-shot results (the goal_reaching.json of metra-pretrain goal-eval)")
    export.add_argument("--figure", nargs=2, action="append", metavar=("PNG", "CAPTION"),
                        help="a figure for the model card, copied beside it (repeatable; for example the tasks.png "
                             "of metra-pretrain evaluate and what it shows). An export of a checkpoint keeps its "
                             "figures; to drop one, delete its file first")
    export.add_argument("--command-line", help="the training command to record in the model card")
    export.set_defaults(func=_export)

    sweep = commands.add_parser("sweep", help="many runs (seeds x a grid, or a sweep file) through Ray Tune",
                                description="Many runs through Ray Tune, one run folder each. Running the same "
                                            "command again resumes the sweep: finished runs are kept, unfinished "
                                            "ones resume from their run state.")
    sweep.add_argument("sweep_file", nargs="?", help="a sweep file (YAML: seeds, envs, epochs, methods); see "
                                                     "benchmarks/comparison.yaml")
    sweep.add_argument("--run-root", required=True, help="folder for the runs (one run folder per trial)")
    sweep.add_argument("--config", help=f"without a sweep file: bundled config {builtin_configs()} or a YAML file "
                                        "(default: ant)")
    sweep.add_argument("--seeds", type=int, nargs="+", help="without a sweep file: the seeds (default: 0 1)")
    sweep.add_argument("--grid", action="append", metavar="KEY=V1,V2", help="values to try for a key (repeatable)")
    sweep.add_argument("--set", action="append", metavar="KEY=VALUE", help="override for every run (repeatable)")
    sweep.add_argument("--only", action="append", metavar="LABEL", help="with a sweep file: run only this env or "
                                                                         "method (repeatable: envs add up, methods add "
                                                                         "up, the two narrow down)")
    sweep.add_argument("--skip", action="append", metavar="TRIAL", help="leave out this trial (its run folder's name; "
                                                                         "repeatable): a run finished elsewhere whose "
                                                                         "results are kept")
    sweep.add_argument("--cpus-per-run", type=int, default=1, help="CPUs per run: its torch threads, less one per overlapped-collector worker")
    sweep.add_argument("--address", help=ADDRESS_HELP)
    sweep.add_argument("--max-concurrent", type=int, help=MAX_CONCURRENT_HELP)
    sweep.set_defaults(func=_sweep)

    evaluate = commands.add_parser("evaluate", help="policy coverage and figures of a skill checkpoint")
    evaluate.add_argument("checkpoint", nargs="?", default="ant", help="bundled name, folder or Hub repo")
    evaluate.add_argument("--out", default="eval_out", help="folder for coverage.json and the figures")
    evaluate.add_argument("--skills", type=int, default=48)
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--revision", help="Hub revision")
    evaluate.set_defaults(func=_evaluate)

    goals = commands.add_parser("goal-eval", help="zero-shot goal reaching of a checkpoint vs an untrained one")
    goals.add_argument("checkpoint", nargs="?", default="ant", help="bundled name, folder or Hub repo")
    goals.add_argument("--out", default="goal_eval_out")
    goals.add_argument("--goals", type=int, default=50)
    goals.add_argument("--seed", type=int, default=0)
    goals.add_argument("--baseline", help="the untrained checkpoint to compare with (metra-pretrain export "
                                          "--untrained); default: one initialised with --seed")
    goals.add_argument("--no-baseline", action="store_true", help="skip the untrained checkpoint")
    goals.set_defaults(func=_goal_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    # A Ctrl-C while a command loads what it needs (seconds of torch and Stable-Baselines3) is this one line, not a
    # traceback of whatever was being imported; the commands answer one while they run.
    try:
        from metra_gym.envs.mujoco_gl import MujocoGLError

        args = build_parser().parse_args(argv)
        try:
            return args.func(args)
        except MujocoGLError as error:  # any command that builds a MuJoCo environment
            return _fail(error)
    except KeyboardInterrupt:  # where the command has no answer of its own
        print("metra-pretrain: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
