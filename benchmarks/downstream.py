"""Downstream tasks over frozen skills: learned controllers against the reference controllers, random and untrained
skills and flat SAC, over seeds (issue 41; the protocol and agents: ``pretrain/downstream/``).

    # the campaign: a resumable sweep of seeds x tasks x agents through Ray (the same command again resumes it)
    python benchmarks/downstream.py sweep benchmarks/downstream.yaml --run-root runs/downstream
    # the verdicts, table and figure from its run files (any time, also while it runs) and the landed ones
    python benchmarks/downstream.py summary runs/downstream/runs benchmarks/results/downstream/paper/runs \
        --out benchmarks/results/downstream/paper
    # land the finished run files (small JSON) so that a new machine does not run them again ...
    grep -l '"finished": true' runs/downstream/runs/*.json | xargs cp -t benchmarks/results/downstream/paper/runs/
    # ... and on a new machine, before the sweep: the sweep skips a finished run file of the same settings
    mkdir -p runs/downstream/runs && cp benchmarks/results/downstream/paper/runs/*.json runs/downstream/runs/
    # one run without Ray
    python benchmarks/downstream.py run ant_multigoals controller --protocol paper --seed 0 --steps 2000000 --out DIR
    # reference controllers choosing skills at another protocol's K (one JSON file; not run files)
    python benchmarks/downstream.py references ant_multigoals --protocol paper_k10 --agents zero_shot lookahead \
        --out benchmarks/results/downstream/paper_k10/references_ant_multigoals.json
    #   (a run stopped part-way goes on from its last evaluation when the same command runs again: DIR/run_states)
    # a smoke test of the sweep at tiny budgets
    python benchmarks/downstream.py sweep benchmarks/downstream.yaml --run-root /tmp/ds --seeds 0 --steps 5000 \\
        --eval-every 2500 --eval-episodes 2 --final-episodes 2

metra-gym 0.3's results (its own script, commit ee038de; run files in ``results/downstream/curves``, read as
protocol ``v0.3``) are re-gathered with ``summary benchmarks/results/downstream/curves --out
benchmarks/results/downstream``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def _sweep(args: argparse.Namespace) -> int:
    from pretrain.config import ConfigError
    from pretrain.downstream.sweep import read_sweep_file, select, sweep
    from pretrain.sweep.ray_runner import SweepInterrupted

    command = args.command_line
    try:
        specs = read_sweep_file(args.sweep_file, {"steps": args.steps, "eval_every": args.eval_every,
                                                  "eval_episodes": args.eval_episodes,
                                                  "final_episodes": args.final_episodes})
        if args.seeds is not None:
            specs = [spec for spec in specs if spec.seed in args.seeds]
        if args.only and specs:
            specs = select(specs, args.only)
        if not specs:
            raise ConfigError("--seeds / --only select no run of the sweep file")
        outcomes = sweep(specs, args.run_root, args.cpus_per_run, args.address,
                         echo=lambda line: print(line, flush=True), max_concurrent=args.max_concurrent)
    except ConfigError as error:
        print(f"downstream: {error}", file=sys.stderr)
        return 2
    except SweepInterrupted as stop:
        print(f"downstream: sweep stopped by {stop.signal_name}; finished runs are kept, unfinished learned ones go on "
              f"from their last evaluation when you run: {command}", file=sys.stderr)
        return stop.exit_status
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
    from pretrain.run.run_state import ResumeError

    learned = args.agent in ("controller", "flat")
    spec = RunSpec(args.task, args.agent, args.seed, args.protocol if learned else None,
                   args.steps if learned else 0, args.eval_every if learned else 0, args.eval_episodes,
                   args.final_episodes, args.checkpoint)
    try:
        row = run(spec, args.out, states=args.out / "run_states")  # the same command again resumes a stopped run
    except ResumeError as error:  # another process is training this run
        print(f"downstream: {error}", file=sys.stderr)
        return 2
    print(f"{spec.name}: return {row['final']['mean']:.2f} ({row['seconds']} s)")
    return 0


def _references(args: argparse.Namespace) -> int:
    """Reference controllers choosing skills at a protocol's K, per seed on the run files' 50 episodes: one JSON file
    (a reference run file has no protocol, so these are not run files)."""
    import tempfile

    import numpy as np

    from pretrain.downstream.protocol import episode_shape
    from pretrain.downstream.reference import reference_returns
    from pretrain.downstream.runs import write_atomic
    from pretrain.downstream.verdict import interval

    k, skills_per_episode = episode_shape(args.task, args.protocol)
    row = {"task": args.task, "protocol": args.protocol, "skill_steps": k, "skills_per_episode": skills_per_episode,
           "final_episodes": args.final_episodes, "command": args.command_line, "agents": {}}
    with tempfile.TemporaryDirectory() as cache:  # untrained skills, if asked for
        for agent in args.agents:
            means = [float(np.mean(reference_returns(args.task, agent, seed, args.final_episodes, Path(cache),
                                                     protocol_name=args.protocol))) for seed in args.seeds]
            row["agents"][agent] = {**interval(means), "seeds": args.seeds}
            print(f"{agent} at K = {k}: {row['agents'][agent]['mean']:.2f} over seeds {args.seeds}", flush=True)
    write_atomic(args.out, row)
    print(f"wrote {args.out}")
    return 0


def _measure(task_name: str, clock, protocols: list[str]) -> dict[str, float]:
    """CPU seconds of the parts a downstream run is made of, on one thread, for one task: a low-level step of the
    controller's skill env (random skills) and of the flat env (random actions), an update of the controller's
    learner under each of ``protocols`` and of flat SAC, an episode of each reference controller."""
    import gymnasium as gym

    from pretrain.downstream.protocol import controller_env, flat_agent, hierarchical_agent, task
    from pretrain.downstream.reference import reference_returns

    def per_step(env, episodes: int) -> float:
        """CPU seconds per low-level step over ``episodes`` episodes of random actions."""
        env.action_space.seed(0)
        steps, start = 0, clock()
        for seed in range(episodes):
            env.reset(seed=seed)
            done = False
            while not done:
                _, _, terminated, truncated, info = env.step(env.action_space.sample())
                steps, done = steps + info.get("skill_steps", 1), terminated or truncated
        return (clock() - start) / steps

    def timed(function, *args, **kwargs) -> float:
        start = clock()
        function(*args, **kwargs)
        return clock() - start

    costs = {"skill_env_step": per_step(controller_env(task_name), 4),
             "flat_env_step": per_step(gym.make(task(task_name).low_level_id), 4)}
    discrete = isinstance(controller_env(task_name).action_space, gym.spaces.Discrete)
    for protocol_name in protocols:
        if discrete:  # PPO: one rollout, then its update (every pass over it)
            agent = hierarchical_agent(task_name, 0, protocol_name=protocol_name)
            agent.learn(agent.n_steps)
            minibatches = agent.n_epochs * agent.n_steps // agent.batch_size
            costs[f"ppo_{protocol_name}_minibatch_step"] = timed(agent.train) / minibatches
        else:
            agent = hierarchical_agent(task_name, 0, protocol_name=protocol_name, learning_starts=300)
            agent.learn(400)  # a buffer to sample from
            costs[f"sac_{protocol_name}_update"] = timed(agent.train, gradient_steps=50, batch_size=256) / 50
    flat = flat_agent(task_name, 0, "paper", learning_starts=300)
    flat.learn(400)
    costs["flat_update"] = timed(flat.train, gradient_steps=50, batch_size=256) / 50
    for name in ("random", "zero_shot", "zero_shot_every_step", "lookahead", "lookahead_two"):
        costs[f"{name}_episode"] = timed(reference_returns, task_name, name, 0, 2, cache=None) / 2
    costs["untrained_episode"] = costs["random_episode"]  # random skills over networks of the same size
    costs["lookahead_foresight_episode"] = costs["lookahead_episode"]  # the same simulations
    return costs


def _run_seconds(spec, costs: dict[str, float]) -> float:
    """The CPU seconds of a run from the measured parts (see ``estimate``)."""
    from metra_gym.registration import EPISODE_STEPS as episode_steps  # low-level (DMC: policy) steps, K x 8
    from pretrain.downstream.protocol import (
        PPO_EPISODES_PER_EPOCH,
        PPO_GRADIENT_STEPS_PER_EPOCH,
        PPO_MINIBATCH,
        SACSettings,
        checkpoint_config,
        episode_shape,
        protocol,
    )

    if spec.protocol is None:
        return spec.final_episodes * costs[f"{spec.agent}_episode"]
    evaluations = spec.steps // spec.eval_every * spec.eval_episodes + 2 * spec.final_episodes
    settings = SACSettings.of_checkpoint(checkpoint_config(spec.task, spec.checkpoint))
    if spec.agent == "flat":
        updates = max(0, spec.steps - settings.learning_starts) * settings.gradient_steps / (
            settings.episodes_per_epoch * episode_steps)
        if protocol(spec.protocol).flat == "every_step":
            updates = max(0, spec.steps - 10_000)
        return (spec.steps + evaluations * episode_steps) * costs["flat_env_step"] + updates * costs["flat_update"]
    k, skills_per_episode = episode_shape(spec.task, spec.protocol)
    transitions = spec.steps / k
    collect = (spec.steps + evaluations * episode_steps) * costs["skill_env_step"]
    ppo, sac = f"ppo_{spec.protocol}_minibatch_step", f"sac_{spec.protocol}_update"
    if ppo in costs:
        epochs = spec.steps / (PPO_EPISODES_PER_EPOCH * episode_steps)
        ten_passes = 10 * PPO_EPISODES_PER_EPOCH * skills_per_episode // PPO_MINIBATCH  # ``ten_pass_ppo``'s steps
        steps_per_epoch = PPO_GRADIENT_STEPS_PER_EPOCH if protocol(spec.protocol).ppo == "paper" else ten_passes
        return collect + epochs * steps_per_epoch * costs[ppo]
    if protocol(spec.protocol).sac == "pretraining":
        updates = max(0.0, transitions - settings.learning_starts) * settings.gradient_steps / (
            settings.episodes_per_epoch * skills_per_episode)
    else:
        updates = max(0.0, transitions - 100) * 4
    return collect + updates * costs[sac]


def _estimate(args: argparse.Namespace) -> int:
    """Idle CPU-hours of a sweep file's runs, from the CPU seconds of their parts measured here on one thread."""
    import json
    import time

    import torch

    from pretrain.downstream.sweep import read_sweep_file

    torch.set_num_threads(1)
    specs = read_sweep_file(args.sweep_file)
    costs = {name: _measure(name, time.process_time, sorted({spec.protocol for spec in specs if spec.task == name
                                                             and spec.agent == "controller" and spec.protocol}))
             for name in dict.fromkeys(spec.task for spec in specs)}
    per_run: dict[str, float] = {}
    for spec in specs:
        label = f"{spec.task} {spec.agent}" + (f" {spec.protocol}" if spec.protocol else "")
        per_run[label] = _run_seconds(spec, costs[spec.task]) / 3600
    seeds = len({spec.seed for spec in specs})
    total = sum(per_run.values()) * seeds
    result = {"sweep_file": str(args.sweep_file), "clock": "process CPU seconds, one torch thread",
              "costs_s": {t: {k: round(v, 6) for k, v in c.items()} for t, c in costs.items()},
              "hours_per_run": {k: round(v, 3) for k, v in per_run.items()}, "seeds": seeds,
              "runs": len(specs), "total_cpu_hours": round(total, 1)}
    for label, hours in per_run.items():
        print(f"{label:45s} {hours:6.2f} h per seed")
    print(f"{len(specs)} runs, {seeds} seeds: {total:.1f} idle CPU-hours")
    if args.out:
        from measurements import append_measurement

        append_measurement(args.out, "idle CPU-hours of the downstream campaign, from the CPU seconds of its parts "
                           "(python benchmarks/downstream.py estimate SWEEP_FILE)", result)
    else:
        print(json.dumps(result["costs_s"], indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    from pretrain.downstream.protocol import DEFAULT_PROTOCOL, PROTOCOLS, TASKS
    from pretrain.downstream.reference import REFERENCES
    from pretrain.downstream.runs import AGENTS
    from pretrain.sweep.ray_runner import ADDRESS_HELP, MAX_CONCURRENT_HELP

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    sweep = commands.add_parser("sweep", help="the runs of a sweep file through Ray; again to resume")
    sweep.add_argument("sweep_file", type=Path)
    sweep.add_argument("--run-root", type=Path, required=True, help="its run files go to RUN_ROOT/runs/")
    sweep.add_argument("--cpus-per-run", type=int, default=1)
    sweep.add_argument("--address", help=ADDRESS_HELP)
    sweep.add_argument("--max-concurrent", type=int, help=MAX_CONCURRENT_HELP)
    # extend: a repeated flag adds up, as metra-pretrain sweep's --only does (a plain nargs="+" would keep the last)
    sweep.add_argument("--seeds", type=int, nargs="+", action="extend", help="only these seeds of the file")
    sweep.add_argument("--only", nargs="+", action="extend", help="only runs of these tasks, agents or protocols "
                       "(names of one kind add up, kinds narrow down: `--only controller paper` is the paper's "
                       "controller alone; the flag may repeat)")
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
    references = commands.add_parser("references", help="reference controllers at a protocol's K, to one JSON file")
    references.add_argument("task", choices=sorted(TASKS))
    references.add_argument("--protocol", choices=sorted(PROTOCOLS), default=DEFAULT_PROTOCOL)
    references.add_argument("--agents", nargs="+", choices=sorted(REFERENCES), required=True)
    references.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    references.add_argument("--final-episodes", type=int, default=50)
    references.add_argument("--out", type=Path, required=True, help="the JSON file")
    references.set_defaults(handler=_references)
    estimate = commands.add_parser("estimate", help="idle CPU-hours of a sweep file's runs, from measured parts")
    estimate.add_argument("sweep_file", type=Path)
    estimate.add_argument("--out", type=Path, help="append the measurement to this JSON file")
    estimate.set_defaults(handler=_estimate)
    args = parser.parse_args(argv)
    # the command as typed, quoted for the shell, for the resume line of an interrupted sweep
    args.command_line = shlex.join(["python", *(sys.argv if argv is None else [__file__, *argv])])
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
