"""Downstream tasks over frozen skills: learned controllers against the reference controllers, random and untrained
skills and flat SAC, over seeds (issue 41; the protocol and agents: ``pretrain/downstream/``).

    # the campaign: a resumable sweep of seeds x tasks x agents through Ray (the same command again resumes it)
    python benchmarks/downstream.py sweep benchmarks/downstream.yaml --run-root runs/downstream
    # the verdicts, table and figure from its run files (any time, also while it runs)
    python benchmarks/downstream.py summary runs/downstream/runs --out benchmarks/results/downstream/paper
    # one run without Ray
    python benchmarks/downstream.py run ant_multigoals controller --protocol paper --seed 0 --steps 2000000 --out DIR
    # a smoke test of the sweep at tiny budgets
    python benchmarks/downstream.py sweep benchmarks/downstream.yaml --run-root /tmp/ds --seeds 0 --steps 5000 \\
        --eval-every 2500 --eval-episodes 2 --final-episodes 2

metra-gym 0.3's results (its own script, commit ee038de; run files in ``results/downstream/curves``, read as
protocol ``v0.3``) are re-gathered with ``summary benchmarks/results/downstream/curves --out
benchmarks/results/downstream``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _sweep(args: argparse.Namespace) -> int:
    from pretrain.downstream.sweep import read_sweep_file, sweep
    from pretrain.run.config import ConfigError
    from pretrain.sweep.ray_runner import SweepInterrupted

    command = " ".join(["python", *sys.argv])
    try:
        specs = read_sweep_file(args.sweep_file, {"steps": args.steps, "eval_every": args.eval_every,
                                                  "eval_episodes": args.eval_episodes,
                                                  "final_episodes": args.final_episodes})
        if args.seeds is not None:
            specs = [spec for spec in specs if spec.seed in args.seeds]
        if args.only:
            specs = [spec for spec in specs if {spec.task, spec.agent, str(spec.protocol)} & set(args.only)]
        if not specs:
            raise ConfigError("--seeds / --only select no run of the sweep file")
        outcomes = sweep(specs, args.run_root, args.cpus_per_run, args.address,
                         echo=lambda line: print(line, flush=True))
    except ConfigError as error:
        print(f"downstream: {error}", file=sys.stderr)
        return 2
    except SweepInterrupted as stop:
        print(f"downstream: sweep stopped by {stop.signal_name}; finished runs are kept, unfinished ones start again "
              f"when you run: {command}", file=sys.stderr)
        return 130
    for outcome in outcomes:
        print(f"{outcome.name}: {outcome.outcome}" + (f" ({outcome.error})" if outcome.error else ""))
    failed = [o for o in outcomes if o.outcome == "failed"]
    if failed:
        print(f"downstream: {len(failed)} of {len(outcomes)} run(s) failed; fix the cause, then run the same command "
              f"again: {command}", file=sys.stderr)
        return 1
    return 0


def _summary(args: argparse.Namespace) -> int:
    from pretrain.downstream.verdict import write_summary

    try:
        summary = write_summary(args.runs, args.out)
    except FileNotFoundError as error:
        print(f"downstream: {error}", file=sys.stderr)
        return 2
    print(summary["table"])
    print(f"wrote {args.out / 'downstream.json'}, table.md and figure.png")
    return 0


def _run(args: argparse.Namespace) -> int:
    from pretrain.downstream.runs import RunSpec, run

    learned = args.agent in ("controller", "flat")
    spec = RunSpec(args.task, args.agent, args.seed, args.protocol if learned else None,
                   args.steps if learned else 0, args.eval_every if learned else 0, args.eval_episodes,
                   args.final_episodes, args.checkpoint)
    row = run(spec, args.out)
    print(f"{spec.name}: return {row['final']['mean']:.2f} ({row['seconds']} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    from pretrain.downstream.protocol import DEFAULT_PROTOCOL, PROTOCOLS, TASKS
    from pretrain.downstream.runs import AGENTS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    sweep = commands.add_parser("sweep", help="the runs of a sweep file through Ray; again to resume")
    sweep.add_argument("sweep_file", type=Path)
    sweep.add_argument("--run-root", type=Path, required=True, help="its run files go to RUN_ROOT/runs/")
    sweep.add_argument("--cpus-per-run", type=int, default=1)
    sweep.add_argument("--address", help="a Ray cluster to join (default: Ray on this machine)")
    sweep.add_argument("--seeds", type=int, nargs="+", help="only these seeds of the file")
    sweep.add_argument("--only", nargs="+", help="only runs of these tasks, agents or protocols")
    for flag, what in (("--steps", "every task's budget of low-level steps"), ("--eval-every", "low-level steps"),
                       ("--eval-episodes", "episodes"), ("--final-episodes", "episodes")):
        sweep.add_argument(flag, type=int, help=f"replaces the file's ({what})")
    sweep.set_defaults(handler=_sweep)

    summary = commands.add_parser("summary", help="verdicts, table and figure from run files")
    summary.add_argument("runs", type=Path, nargs="+", help="folders of run files (a sweep's RUN_ROOT/runs)")
    summary.add_argument("--out", type=Path, required=True)
    summary.set_defaults(handler=_summary)

    one = commands.add_parser("run", help="one run, without Ray")
    one.add_argument("task", choices=sorted(TASKS))
    one.add_argument("agent", choices=AGENTS)
    one.add_argument("--protocol", choices=sorted(PROTOCOLS), default=DEFAULT_PROTOCOL)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--steps", type=int, default=2_000_000, help="low-level steps (learned agents)")
    one.add_argument("--eval-every", type=int, default=100_000)
    one.add_argument("--eval-episodes", type=int, default=10)
    one.add_argument("--final-episodes", type=int, default=50)
    one.add_argument("--checkpoint", help="skills other than the task's bundled ones")
    one.add_argument("--out", type=Path, required=True)
    one.set_defaults(handler=_run)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
