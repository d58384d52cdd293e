"""What a run's bookkeeping costs beside its learning: an evaluation, a skill snapshot and a run-state save, each
timed alone (wall and this process's CPU seconds), then amortised per epoch at the config's intervals and set
beside the bare epoch (collection + gradient steps, no bookkeeping) of the same model on the same machine.

The save is timed with a full replay buffer (``--transitions``, default the Ant buffer's 1e6) after one save
interval of new transitions, which is what a running run pays every ``save_every`` epochs: the whole run state
as saved now (only the replay segments that changed are written, the rest hard-linked), and beside it the
replay buffer alone written both ways: pickled whole and hashed (SB3's ``save_replay_buffer``, what a save did
before) and segmented.

    python benchmarks/bookkeeping.py --config ant --out benchmarks/results/bookkeeping/summary.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch as th
from measurements import append_measurement

from pretrain.algorithms.common.replay_segments import save_replay
from pretrain.algorithms.common.skill_export import export_model
from pretrain.config import load_config
from pretrain.run.callbacks import Clock, Evaluation
from pretrain.run.coverage import CoverageTracker, SkillRollouts
from pretrain.run.envs import env_factory, training_env
from pretrain.run.model import build_model
from pretrain.run.run_state import _recorded_files, _sha256, save_run_state


def timed(work: Callable[[], object], repeats: int) -> dict[str, float]:
    """Median wall and CPU seconds of ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_s": round(float(np.median(walls)), 3), "cpu_s": round(float(np.median(cpus)), 3)}


def fill(buffer, transitions: int, seed: int = 0) -> None:
    """Random transitions straight into the buffer's arrays (their content does not matter to the cost)."""
    rng = np.random.default_rng(seed)
    rows = transitions // buffer.n_envs
    for name in ("observations", "next_observations", "actions", "rewards"):
        array = getattr(buffer, name)
        array[:rows] = rng.standard_normal((rows, *array.shape[1:])).astype(array.dtype)
    buffer.pos, buffer.full = rows % buffer.buffer_size, rows >= buffer.buffer_size


def advance(buffer, transitions: int, seed: int) -> None:
    """``transitions`` new ones at the buffer's position (wrapping), as a run adds them between two saves."""
    rng = np.random.default_rng(seed)
    for _ in range(transitions // buffer.n_envs):
        buffer.observations[buffer.pos] = rng.standard_normal(buffer.observations.shape[1:])
        buffer.pos = (buffer.pos + 1) % buffer.buffer_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="ant")
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/bookkeeping/summary.json"))
    args = parser.parse_args()
    intervals = load_config(args.config, [])
    config = load_config(args.config, ["collector=sequential", "eval_every=1000000"])  # no evaluation inside learn
    th.set_num_threads(config.torch_threads)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        make = env_factory(config)
        model = build_model(config, training_env(config, make), run_dir)
        model.learn(config.learning_starts + config.steps_per_epoch)  # past learning_starts: one real epoch
        fill(model.replay_buffer, args.transitions)
        tracker = CoverageTracker(n_coordinates=2)
        rollouts = SkillRollouts(make, config.eval_skills, config.episode_steps)
        evaluate = Evaluation(run_dir, rollouts, tracker, Clock(), config.seed, history=[])
        epoch = timed(lambda: model.learn(config.steps_per_epoch, reset_num_timesteps=False), args.repeats)
        evaluation = timed(lambda: evaluate(model, 1), args.repeats)
        snapshot = timed(lambda: export_model(model, config, run_dir / "snapshot", {"run": "bookkeeping"}),
                         args.repeats)
        interval = intervals.save_every * config.steps_per_epoch
        buffer = model.replay_buffer
        rows: dict[str, list[dict[str, float]]] = {"run_state": [], "buffer_whole": [], "buffer_segmented": []}
        save_run_state(run_dir, model, tracker, 1, True)  # the previous save the next ones link from
        latest = run_dir / "run_state" / "latest"
        for r in range(args.repeats):
            advance(buffer, interval, seed=r)
            whole = run_dir / f"whole{r}.pkl"
            rows["buffer_whole"].append(timed(lambda whole=whole: (model.save_replay_buffer(whole), _sha256(whole)),
                                              1))
            segmented = run_dir / f"segmented{r}"
            segmented.mkdir()
            rows["buffer_segmented"].append(timed(lambda segmented=segmented: save_replay(
                buffer, segmented, latest, _recorded_files(latest)), 1))
            rows["run_state"].append(timed(lambda r=r: save_run_state(run_dir, model, tracker, 2 + r, True), 1))
        saves = {name: {k: round(float(np.median([row[k] for row in values])), 3) for k in values[0]}
                 for name, values in rows.items()}
        rollouts.close()
    per_epoch = {
        "evaluation": evaluation["wall_s"] / intervals.eval_every,
        "snapshot": snapshot["wall_s"] / intervals.snapshot_every if intervals.snapshot_every else 0.0,
        "save": saves["run_state"]["wall_s"] / intervals.save_every,
    }
    result = {
        "config": args.config, "note": args.note, "replay_transitions": args.transitions,
        "intervals": {"eval_every": intervals.eval_every, "snapshot_every": intervals.snapshot_every,
                      "save_every": intervals.save_every},
        "bare_epoch_sequential": epoch, "evaluation": evaluation, "snapshot": snapshot,
        "save_after_one_interval": saves,
        "bookkeeping_s_per_epoch": {k: round(v, 4) for k, v in per_epoch.items()},
        "bookkeeping_over_bare_epoch": round(sum(per_epoch.values()) / epoch["wall_s"], 3),
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    append_measurement(args.out, "bookkeeping of a run (evaluation, snapshot, run-state save), alone and per epoch",
                       result)


if __name__ == "__main__":
    main()
