"""The paper's comparison (METRA, LSD, DIAYN, DADS, CIC on Ant and HalfCheetah): the summary over seeds of the
runs of ``benchmarks/comparison.yaml``, with held-out numbers at the end of each run.

The runs are trained by the sweep (``metra-pretrain sweep benchmarks/comparison.yaml --run-root runs/comparison
--cpus-per-run 2``); this script only reads their run folders, so it can run at any time, also while the sweep
runs. It writes ``summary.json``, ``figure.png`` and ``table.md`` as the sweep's own summary does
(:mod:`pretrain.sweep.summary`), and adds, for every run that kept skill snapshots (``snapshot_every``):

- held-out policy coverage of its last snapshot (48 skills and reset seeds not used in training,
  ``--held-out-seed``), as ``benchmarks/learning_speed.py`` evaluates snapshots;
- zero-shot goal reaching of that snapshot (``--goals`` goals, the same for every method) for the methods that
  define it: METRA and LSD (phi), DIAYN (q(z | g), the paper's comparison), beside what standing still at the start
  scores on the same goals;
- held-out policy coverage at equal env steps: of every run's snapshots at multiples of ``--held-out-every`` epochs
  (every method's epoch is 8 episodes of 200 steps, so equal epochs are equal env steps), over seeds in the group's
  ``held_out_curve``, drawn against env steps and idle hours in ``held_out.png`` (the paper's axis for skill
  methods is env steps) and tabled in ``table.md``. Each snapshot is evaluated once: its number is kept in
  ``OUT/held_out_snapshots/NAME.json`` with the snapshot's weights digest, and read back where the run folder is
  gone. The end-of-run numbers likewise (``OUT/finished_runs/NAME.json``): measured again only for another
  snapshot, held-out seed or number of goals.

``table.md`` ranks the methods three ways beside the paper's statement (by the sweep file's name: ``comparison`` or
``exploration``): by held-out coverage at each run's end (equal idle hours), at epoch 1,000 (1.6 M env steps, equal
env steps) and by total coverage at the end of finished runs (the exploration methods' measure).

Run states do not outlive every machine, so the results keep what the summary needs: each finished run's
evaluation rows and end-of-run numbers go to ``OUT/finished_runs/NAME.json``, read back where the run folder is
gone; a group that has finished fewer runs than the earlier ``OUT/summary.json`` had (runs gone before they were
kept this way) stays as that summary has it, while its runs re-run since are measured and kept as any other and
draw its held-out curve.

    python benchmarks/comparison.py --run-root runs/comparison --out benchmarks/results/comparison
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from learning_speed import evaluate_snapshot, held_out  # noqa: E402  (benchmarks/ is this script's folder)

from metra_gym.atomic_files import write_json_atomic, write_text_atomic  # noqa: E402
from metra_gym.skill_checkpoint.format import CheckpointError  # noqa: E402
from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED  # noqa: E402
from pretrain.project_paths import snapshot_name  # noqa: E402
from pretrain.run.run_folder import read_history  # noqa: E402
from pretrain.sweep.summary import plot, summarize, write_summary  # noqa: E402
from pretrain.sweep.summary import spread as over_seeds  # noqa: E402
from pretrain.sweep.sweep_file import read_sweep_file  # noqa: E402
from pretrain.sweep.trials import Trial  # noqa: E402

# Zero-shot goal reaching: phi's differences point at goals (METRA, LSD); DIAYN picks the skill q(z | g) finds
# likeliest (its snapshots from before format 5 lack q: the run state of the same epoch is exported instead).
GOAL_METHODS = ("metra", "lsd", "diayn")
# The paper's qualitative results (METRA, ICLR 2024), written beside ours, by the sweep file's name: the skill
# methods on state Ant and HalfCheetah, and the pure exploration methods on state Ant.
PAPER_ORDERING = {"comparison": "METRA best; LSD second on Ant; DIAYN and DADS low without an x-y prior",
                  "exploration": "METRA's total coverage far above every pure exploration method's on state Ant "
                                 "(they fail to explore it)"}
# Epochs between the snapshots evaluated held out along each run: 0.4 M env steps (1.6 M, DADS's extended budget
# and the exploration runs' equal-steps point, is the fourth).
HELD_OUT_EVERY = 250
# The equal-env-steps point the methods are also ranked at: 1.6 M env steps, which every method's budget reaches
# but DADS's at lr 4e-4 on HalfCheetah and its seed 1 on Ant (200 and 350 epochs; its lr-1e-4 runs and Ant's lr-4e-4
# seed 0 are extended to it, issue 42), a multiple of HELD_OUT_EVERY.
EQUAL_STEPS_EPOCH = 1000


def last_snapshot(run_dir: Path) -> Path | None:
    snapshots = sorted((run_dir / "snapshots").glob("epoch_*"))
    return snapshots[-1] if snapshots else None


def hours_of_epochs(run_dir: Path, seconds: float | None):
    """A run's hours at an epoch: the idle estimate (epochs x ``seconds``) where the sweep file gives one, else the
    run's own wall clock."""
    if seconds:
        def hours_of_epoch(epoch: int) -> float:
            return epoch * seconds / 3600
    else:
        rows = read_history(run_dir)
        epochs = [row["epoch"] for row in rows]
        wall = [row["wall_clock_s"] / 3600 for row in rows]

        def hours_of_epoch(epoch: int) -> float:
            return float(np.interp(epoch, epochs, wall))
    return hours_of_epoch


def end_of_run(run_dir: Path, seconds: float | None, seed: int, goals: int, has_goal_skill: bool
               ) -> dict[str, Any] | None:
    """Held-out coverage (and zero-shot goal reaching) of a run's last snapshot, or None without snapshots."""
    snapshot = last_snapshot(run_dir)
    if snapshot is None:
        return None
    hours_of_epoch = hours_of_epochs(run_dir, seconds)
    end = hours_of_epoch(int(snapshot.name.split("_")[1]))
    points = held_out(run_dir, [end], seed, hours_of_epoch)
    if not points:
        return None
    point = points[0]
    if has_goal_skill and goals:
        from pretrain.evaluation.goal_reaching import checkpoint_with_goal_skill, goal_eval

        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = checkpoint_with_goal_skill(snapshot, run_dir, Path(tmp) / "skills")
            reached = goal_eval(checkpoint, Path(tmp) / "goals", n_goals=goals, seed=seed, baseline=False)["trained"]
        point["goal_distance"] = {"mean": round(float(reached["mean"]), 2),
                                  "ci95": [round(float(v), 2) for v in reached["ci95"]], "goals": goals}
    return point


def snapshot_digest(snapshot: Path) -> str | None:
    """The sha256 of a snapshot's weights, as its config.json records it (None where it does not)."""
    try:
        return json.loads((snapshot / "config.json").read_text()).get("weights_sha256")
    except (OSError, ValueError):
        return None


def is_kept_end(earlier: dict[str, Any], snapshot: Path | None, seed: int, goals: int) -> bool:
    """Whether a kept end-of-run point is of this very snapshot (its weights digest), held-out seed and number of
    zero-shot goals (0: none wanted), so that it need not be measured again."""
    return (snapshot is not None and earlier.get("seed") == seed and earlier.get("weights_sha256") is not None
            and earlier["weights_sha256"] == snapshot_digest(snapshot)
            and (not goals or earlier.get("goal_distance", {}).get("goals") == goals))


def read_kept_points(kept: Path, seed: int, every: int) -> dict[int, dict[str, Any]]:
    """The held-out points kept for a run, by epoch, if measured with this held-out seed and interval."""
    record = json.loads(kept.read_text()) if kept.is_file() else {}
    if (record.get("seed"), record.get("every")) != (seed, every):
        return {}
    return {point["epoch"]: point for point in record.get("points", [])}


def held_out_along(run_dir: Path, seconds: float | None, seed: int, every: int, kept: Path,
                   measured: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Held-out policy coverage of a run's snapshots at multiples of ``every`` epochs, each point as
    :func:`learning_speed.held_out` gives it. A snapshot is evaluated once: ``kept`` (a JSON file) holds the points
    with each snapshot's weights digest; a kept point counts while the folder holds that same snapshot, or holds no
    snapshot as far on (a folder gone, or a run started afresh that has not caught up, as the summary reads kept
    evaluation rows). With ``seconds`` (the sweep file's idle estimate) hours are recomputed from the epoch.

    :param measured: a point of this folder measured just now (the run's end), not measured again where it is one
        of the wanted snapshots.
    """
    points = read_kept_points(kept, seed, every)
    snapshots = {int(s.name.split("_")[1]): s for s in (run_dir / "snapshots").glob("epoch_*")}
    wanted = sorted(epoch for epoch in snapshots if epoch % every == 0 and epoch > 0)
    if wanted and not (points and max(points) > wanted[-1]):
        if measured and measured.get("seed") == seed and measured.get("epoch") in wanted:
            points[measured["epoch"]] = measured
        hours_of_epoch = hours_of_epochs(run_dir, seconds)
        for epoch in wanted:
            digest, point = snapshot_digest(snapshots[epoch]), points.get(epoch)
            if point is None or digest is None or point.get("weights_sha256") != digest:
                point = {**evaluate_snapshot(snapshots[epoch], seed), "hours": hours_of_epoch(epoch),
                         "weights_sha256": digest}
                print(f"  {run_dir.name}: epoch {epoch}: {point['held_out_policy_coverage']} bins held out", flush=True)
                points[epoch] = point
        points = {epoch: points[epoch] for epoch in wanted}
        write_json_atomic(kept, {"seed": seed, "every": every, "points": list(points.values())})
    if seconds:
        for epoch, point in points.items():
            point["hours"] = epoch * seconds / 3600
    return [points[epoch] for epoch in sorted(points)]


def held_out_curve(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Over seeds, at each epoch some run has a held-out point: env steps, hours, mean, spread and the values."""
    curve = []
    for epoch in sorted({point["epoch"] for points in runs for point in points}):
        at = [point for points in runs for point in points if point["epoch"] == epoch]
        values = [point["held_out_policy_coverage"] for point in at]
        curve.append({"epoch": epoch, "env_steps": int(np.mean([point["env_steps"] for point in at])),
                      "hours": round(float(np.mean([point["hours"] for point in at])), 3), **spread(values)})
    return curve


def held_out_table(summary: dict[str, Any], every: int) -> list[str]:
    """Markdown lines: per env, held-out policy coverage at equal env steps, a column per evaluated epoch."""
    lines = []
    for env in dict.fromkeys(group["env"] for group in summary["groups"]):
        groups = [g for g in summary["groups"] if g["env"] == env and g.get("held_out_curve")]
        steps = {p["epoch"]: p["env_steps"] for g in groups for p in g["held_out_curve"]}
        if not steps:
            continue
        epochs = sorted(steps)
        lines += ["", f"Held out at equal env steps, {env} (snapshots every {every} epochs; mean (per seed)):", "",
                  "| method | " + " | ".join(f"{steps[e] / 1e6:.1f} M" for e in epochs) + " |",
                  "|---" * (len(epochs) + 1) + "|"]
        for group in groups:
            at = {p["epoch"]: p for p in group["held_out_curve"]}
            cells = [f"{at[e]['mean']:.0f} ({', '.join(str(v) for v in at[e]['values'])})" if e in at else "-"
                     for e in epochs]
            lines.append(f"| {group['method']} | " + " | ".join(cells) + " |")
    return lines


def read_kept(folder: Path) -> dict[str, dict[str, Any]]:
    """The kept records of finished runs (``NAME.json``: ``history``, ``held_out``) in ``folder``, by trial name."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def landed_at_budget(trials: list[Trial], kept: dict[str, dict[str, Any]]) -> list[str]:
    """The names of the trials whose kept record's last evaluation is at the trial's budget or past it: finished at
    the settings of the sweep file now (a record of a shorter budget, say before a run was extended, is not)."""
    return [trial.name for trial in trials
            if (kept.get(trial.name) or {}).get("history")
            and kept[trial.name]["history"][-1]["epoch"] >= trial.config(1).epochs]


def keep(folder: Path, name: str, run_dir: Path, point: dict[str, Any] | None) -> None:
    """Keep a finished run's evaluation rows, and its end-of-run numbers where measured, beside the summary: a number
    of the same snapshot kept earlier (zero-shot goals, say) stays unless measured again."""
    path = folder / f"{name}.json"
    record = json.loads(path.read_text()) if path.is_file() else {}
    record["history"] = read_history(run_dir)
    if point is not None:
        earlier = record.get("held_out") or {}
        record["held_out"] = {**earlier, **point} if earlier.get("epoch") == point["epoch"] else point
    write_json_atomic(path, record)


def carry_gone_groups(summary: dict[str, Any], earlier: Path) -> list[str]:
    """Groups that finished fewer runs than the earlier summary had (their run folders are gone and their runs were
    not kept): the earlier summary's numbers for them, said so in the group."""
    if not earlier.is_file():
        return []
    before = {(g["env"], g["method"]): g for g in json.loads(earlier.read_text())["groups"]}
    carried = []
    for index, group in enumerate(summary["groups"]):
        old = before.get((group["env"], group["method"]))
        if old and old["curve"] and old["finished_seeds"] > group["finished_seeds"]:
            # The runs there now (re-run since) are still measured and kept: their end and their held-out points
            # along the run (the group's held_out_curve), so that they outlive their folders too.
            summary["groups"][index] = {**{k: v for k, v in old.items() if k != "held_out_curve"},
                                        "carried": "from the earlier summary.json: its run folders are gone",
                                        "runs_now": group["runs"]}
            carried.append(f"{group['env']}-{group['method']}")
    return carried


def spread(values: list[float]) -> dict[str, Any]:
    """The values and their spread over seeds (the sweep summary's)."""
    return {"values": values, **over_seeds(values)}


def ordering(summary: dict[str, Any]) -> list[str]:
    """Per env, the methods by mean coverage at the end, best first: held out (finished runs) where any method has
    it, naming the methods without a finished run yet, else the training evaluation (one kind of number per
    ranking)."""
    lines = []
    for env in dict.fromkeys(group["env"] for group in summary["groups"]):
        groups = [g for g in summary["groups"] if g["env"] == env]
        kind = "held_out" if any(g.get("held_out") for g in groups) else "final"
        scored = sorted(((g[kind]["mean"], g["method"]) for g in groups if g.get(kind)), reverse=True)
        ranked = " > ".join(f"{method} ({number:.0f})" for number, method in scored)
        what = "held out, finished runs" if kind == "held_out" else "training evaluation"
        missing = [g["method"] for g in groups if not g.get(kind)]
        lines.append(f"- {env} ({what}): {ranked or 'no evaluation yet'}"
                     + (f"; not yet: {', '.join(missing)}" if missing and ranked else ""))
    return lines


def ordering_at(summary: dict[str, Any], epoch: int, budgets: dict[tuple[str, str], int]) -> list[str]:
    """Per env, the methods by mean held-out coverage of their snapshots at ``epoch`` (equal env steps), best first,
    naming the methods whose budget (``budgets``: (env, method) -> the sweep file's epochs) ends before ``epoch``
    and those with no snapshot there evaluated yet."""
    lines = []
    for env in dict.fromkeys(group["env"] for group in summary["groups"]):
        groups = [g for g in summary["groups"] if g["env"] == env]
        at = {g["method"]: next((p for p in g.get("held_out_curve") or [] if p["epoch"] == epoch), None)
              for g in groups}
        scored = sorted(((p["mean"], method, len(p["values"])) for method, p in at.items() if p), reverse=True)
        if not scored:
            continue
        ranked = " > ".join(f"{method} ({number:.0f}, {n} seed{'s' * (n > 1)})" for number, method, n in scored)
        short = [g["method"] for g in groups if not at[g["method"]] and budgets[env, g["method"]] < epoch]
        missing = [g["method"] for g in groups if not at[g["method"]] and budgets[env, g["method"]] >= epoch]
        steps = next(p["env_steps"] for p in at.values() if p)
        lines.append(f"- {env} (held out, epoch {epoch} = {steps / 1e6:.1f} M env steps): {ranked}"
                     + (f"; its budget ends before: {', '.join(short)}" if short else "")
                     + (f"; no snapshot there evaluated (yet): {', '.join(missing)}" if missing else ""))
    return lines


def total_ordering(summary: dict[str, Any]) -> list[str]:
    """Per env, the methods whose seeds have all finished by mean total coverage (bins of every training trajectory
    so far, the paper's measure for the exploration methods) at their end, best first (equal idle hours where the
    budgets are, as in the sweep files); naming those not finished and those whose runs log none."""
    lines = []
    for env in dict.fromkeys(group["env"] for group in summary["groups"]):
        groups = [g for g in summary["groups"] if g["env"] == env]
        done = [g for g in groups if g["finished_seeds"] == len(g["seeds"])]
        scored = sorted(((g["final"]["total"]["mean"], g["method"], g["final"]["hours"]) for g in done
                         if (g["final"] or {}).get("total")), reverse=True)
        if not scored:
            continue
        training = [g["method"] for g in groups if g not in done]
        unlogged = [g["method"] for g in done if not (g["final"] or {}).get("total")]
        lines.append(f"- {env}: " + " > ".join(f"{method} ({number:.0f} at {hours:.2f} h)"
                                               for number, method, hours in scored)
                     + (f"; not logged by their runs: {', '.join(unlogged)}" if unlogged else "")
                     + (f"; not finished: {', '.join(training)}" if training else ""))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep-file", type=Path, default=ROOT / "benchmarks" / "comparison.yaml")
    parser.add_argument("--run-root", type=Path, nargs="+",
                        help="the sweep's --run-root, or several where parts of the sweep ran side by side, each in "
                             "its own root (a run is read from the root where it got furthest)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "comparison")
    parser.add_argument("--held-out-seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--goals", type=int, default=50, help="zero-shot goals per METRA / LSD / DIAYN run (0: none)")
    parser.add_argument("--no-held-out", action="store_true", help="the training evaluation only (fast)")
    parser.add_argument("--held-out-every", type=int, default=HELD_OUT_EVERY,
                        help="epochs between the snapshots evaluated held out along each run (equal env steps)")
    parser.add_argument("--landed", action="store_true",
                        help="only print the names of the trials whose kept record (OUT/finished_runs) reaches the "
                             "sweep file's budget, one a line: the sweep's --skip on a machine without their folders")
    args = parser.parse_args()
    read = read_sweep_file(args.sweep_file)
    kept_folder = args.out / "finished_runs"
    kept = read_kept(kept_folder)
    if args.landed:
        print("\n".join(landed_at_budget(read.trials, kept)))
        return
    if not args.run_root:
        parser.error("--run-root is required (the sweep's run roots), except with --landed")
    summary = summarize(read.trials, args.run_root, read.epoch_seconds,
                        landed={name: record["history"] for name, record in kept.items()})
    carried = carry_gone_groups(summary, args.out / "summary.json")
    if carried:
        print(f"  carried from the earlier summary (run folders gone): {', '.join(carried)}", flush=True)
    trials = {trial.name: trial for trial in read.trials}
    for group in summary["groups"]:
        seconds = group["epoch_seconds"]
        runs = group.pop("runs_now") if "carried" in group else group["runs"]
        for run in runs:
            if not run["finished"]:  # a snapshot of a run still training is not its end
                continue
            name = Path(run["run_dir"]).name
            if run["source"] == "landed":
                if kept[name].get("held_out"):
                    run["held_out"] = kept[name]["held_out"]
                continue
            point = None
            has_goal_skill = trials[name].config(1).algo in GOAL_METHODS
            earlier = kept.get(name, {}).get("held_out") or {}
            if is_kept_end(earlier, last_snapshot(Path(run["run_dir"])), args.held_out_seed,
                           args.goals if has_goal_skill else 0):
                run["held_out"] = earlier  # this very snapshot, measured at an earlier call
            elif not args.no_held_out:
                try:
                    point = end_of_run(Path(run["run_dir"]), seconds, args.held_out_seed, args.goals, has_goal_skill)
                except (CheckpointError, ValueError) as error:  # one broken snapshot must not hide the others
                    run["held_out_error"] = str(error).splitlines()[0]
                    print(f"  {name}: no held-out evaluation: {run['held_out_error']}", flush=True)
                if point is not None:
                    point["weights_sha256"] = snapshot_digest(Path(run["run_dir"]) / "snapshots" /
                                                              snapshot_name(point["epoch"]))
                    run["held_out"] = point
            if point is None and "held_out" not in run and earlier.get("epoch") == run["last"].get("epoch"):
                run["held_out"] = earlier
            keep(kept_folder, name, Path(run["run_dir"]), point)
        measured = [run["held_out"] for run in runs if "held_out" in run]
        if "carried" in group:  # the group's ends stay the earlier summary's; its curve is of the runs there now
            now = [Path(run["run_dir"]).name for run in runs if Path(run["run_dir"]).is_dir()]
            group["carried"] += f"; held_out_curve: the runs re-run since ({', '.join(now)})" if now else ""
            measured = []
        if measured:
            # Where the held-out points sit (the figure's dot): the measured runs' own ends, not the last epoch
            # every seed has reached (while a seed still trains, that is far before the finished runs' ends).
            group["held_out"] = {**spread([p["held_out_policy_coverage"] for p in measured]),
                                 "epochs": [p["epoch"] for p in measured],
                                 "env_steps": float(np.mean([p["env_steps"] for p in measured])),
                                 "hours": float(np.mean([p["hours"] for p in measured]))}
        along = []
        for run in runs:
            name = Path(run["run_dir"]).name
            kept_points = args.out / "held_out_snapshots" / f"{name}.json"
            if args.no_held_out:  # what was measured before only
                along.append(list(read_kept_points(kept_points, args.held_out_seed, args.held_out_every).values()))
                continue
            try:
                along.append(held_out_along(Path(run["run_dir"]), seconds, args.held_out_seed, args.held_out_every,
                                            kept_points, run.get("held_out")))
            except (CheckpointError, ValueError, OSError) as error:  # one broken snapshot must not hide the others
                run["held_out_along_error"] = str(error).splitlines()[0]
                print(f"  {name}: no held-out evaluation along the run: {run['held_out_along_error']}", flush=True)
        if any(along):
            group["held_out_curve"] = held_out_curve(along)
        distances = [p["goal_distance"]["mean"] for p in measured if "goal_distance" in p]
        if distances:
            group["goal_distance"] = spread(distances)
    summary["held_out"] = (f"48 skills and reset seeds from seed {args.held_out_seed}: the last snapshot of each run "
                           f"(held_out) and its snapshots every {args.held_out_every} epochs (held_out_curve)"
                           + ("; only kept and carried numbers (--no-held-out)" if args.no_held_out else ""))
    out = write_summary(summary, args.out)
    paper = PAPER_ORDERING.get(args.sweep_file.stem)  # another sweep file is no comparison of the paper's
    notes = [*(["", f"Paper's ordering: {paper}."] if paper else []), "", "Ours, by mean policy coverage at the end:",
             *ordering(summary)]
    budgets = {(t.env, t.method): t.config(1).epochs for t in read.trials}
    at_steps = ordering_at(summary, EQUAL_STEPS_EPOCH, budgets) if EQUAL_STEPS_EPOCH % args.held_out_every == 0 else [
        f"- none: --held-out-every {args.held_out_every} evaluates no snapshot at epoch {EQUAL_STEPS_EPOCH}"]
    if at_steps:
        notes += ["", "Ours at equal env steps, by mean held-out policy coverage:", *at_steps]
    totals = total_ordering(summary)
    if totals:
        notes += ["", "Ours by mean total coverage (all training trajectories; the paper's measure for the exploration "
                  "methods) at the end of finished runs (equal idle hours):", *totals]
    # --goals 0 wants none: a group carried from an earlier summary may still hold distances (of its goals)
    goal_rows = [f"- {g['env']} {g['method']}: {g['goal_distance']['mean']:.1f} m mean final distance "
                 f"(per seed: {', '.join(str(v) for v in g['goal_distance']['values'])}), {args.goals} goals"
                 for g in summary["groups"] if "goal_distance" in g and args.goals]
    if goal_rows:
        from pretrain.evaluation.goal_reaching import standing_still

        # the floor: skills that do not move end this far from the same goals (as DIAYN's on Ant do)
        envs = {t.env: t.config(1) for t in read.trials}
        floors = [f"- {env}, standing still at the start: "
                  f"{standing_still(envs[env].env_id, args.goals, args.held_out_seed, envs[env].env_kwargs):.1f} m"
                  for env in dict.fromkeys(g["env"] for g in summary["groups"] if "goal_distance" in g)]
        notes += ["", "Zero-shot goal reaching (last snapshot):", *goal_rows, *floors]
    notes += held_out_table(summary, args.held_out_every)
    figures = ["figure.png", *(["total_coverage.png"] if any(g.get("total_curve") for g in summary["groups"]) else [])]
    if any(group.get("held_out_curve") for group in summary["groups"]):
        # the runs' ends as dots: the last snapshot, past the last multiple of --held-out-every (METRA's 1,950 epochs)
        plot(summary, out / "held_out.png", "held_out_curve", "held-out policy coverage (bins)", held_out_ends=True)
        figures.append("held_out.png")
    table = (out / "table.md").read_text() + "\n".join(notes) + "\n"
    write_text_atomic(out / "table.md", table)
    summary_file = out / "summary.json"
    write_text_atomic(summary_file, json.dumps({**json.loads(summary_file.read_text()), "table": table}, indent=1)
                      + "\n")
    print(table)
    print(f"wrote {out / 'summary.json'}, table.md, {', '.join(figures)}")


if __name__ == "__main__":
    main()
