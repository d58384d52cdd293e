"""Pixel METRA on a GPU machine, in one command that ends before a deadline: the pixel epoch beside the state epoch,
then pixel Quadruped trained for the time left and its held-out coverage against random actions.

Run through ``benchmarks/gpu_check.sh`` (which installs the carried wheels first and sets the deadline); alone::

    python benchmarks/gpu_check.py --deadline-s 500 --out benchmarks/results/gpu_check
    python benchmarks/gpu_check.py --tiny --out /tmp/gpu_check_tiny     # the whole logic in a few CPU minutes

Steps, each written to ``--out`` as it ends (``summary.json`` grows by one entry per run, with the machine named):

1. ``MUJOCO_GL``: kept if set, else the first of ``egl`` and ``osmesa`` that renders a Quadruped frame in a
   subprocess (with NVIDIA's EGL vendor file named if plain ``egl`` fails and the file exists); without one the pixel
   steps are skipped and the state epoch is still measured (with ``MUJOCO_GL=disable``).
2. The pixel epoch of the ``quadruped`` config (8 x 200 policy steps rendered 64 x 64, then 200 gradient steps of
   the paper's networks, all timed) and the state epoch of ``quadruped_state`` at the same 200 gradient steps, on the
   same device (``benchmarks/pixel_epoch.py``'s measurement); then the same for ``kitchen`` and ``kitchen_state``
   (8 x 50 steps, 100 gradient steps) where gymnasium-robotics is installed.
3. ``metra-pretrain train --config quadruped`` in a subprocess until the training deadline, then SIGTERM (the run
   saves after its current epoch and stops); training-time evaluations use 8 skills to stay cheap. Collection is
   sequential: the overlapped collector does not take pixel observations yet, so the GPU waits while the 8
   environments render.
4. The run exported to a skill checkpoint (the cheap renderer recorded in it), held-out policy coverage of 48 skills
   with seed 1000 (``metra-pretrain evaluate``'s), and the coverage of uniformly random actions from the same reset
   seeds, in the same episodes of 200 policy steps.

``--tiny`` shrinks everything (32 x 32 frames, a 3-layer CNN, 2 environments of 20 steps, a few gradient steps,
4 evaluation skills) so that the logic runs end to end on a CPU; its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NVIDIA_EGL_VENDOR = "/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json"

# What --tiny changes in the quadruped configs: the smallest run that still goes through every step.
TINY_COMMON = ["net_width=32", "n_envs=2", "episode_steps=20", "learning_starts=40", "batch_size=16",
               "buffer_size=2000", "gradient_steps=4", "torch_threads=1"]
TINY = ["env_kwargs={obs_type: pixels, frame_size: 32}", "encoder_channels=[8,16,16]", *TINY_COMMON]
TINY_STATE = TINY_COMMON
TINY_KITCHEN = ["env_kwargs={obs_type: pixels, frame_size: 32}", "encoder_channels=[8,16,16]",
                *[o for o in TINY_COMMON if not o.startswith("episode_steps")]]
# The configs whose epoch step 2 measures, with their --tiny overrides; the Kitchen pair needs gymnasium-robotics.
EPOCH_CONFIGS = {"quadruped": TINY, "quadruped_state": TINY_STATE, "kitchen": TINY_KITCHEN,
                 "kitchen_state": TINY_COMMON}
# Seconds kept at the end: for the last epoch and its save after SIGTERM, then for exporting and evaluating.
STOP_S, EVALUATE_S = {False: 30.0, True: 20.0}, {False: 120.0, True: 45.0}

PROBE = """
import sys, gymnasium as gym, metra_gym
env = gym.make("metra/Quadruped-v0", obs_type="pixels", frame_size=int(sys.argv[1]))
obs, _ = env.reset(seed=0)
obs, *_ = env.step(env.action_space.sample())
assert obs.std() > 0, "blank frame"
print("rendered", obs.shape)
"""


class Log:
    """Print and keep every line in ``out/log.txt``, with the machine's folders named by role (``scrub``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = time.time()
        self.folders: dict[str, str] = {}

    def scrub(self, text: str) -> str:
        """``text`` with the scratch folder, the site of the carried wheels, the project and the Python named by role
        (stored results name no machine's absolute folders)."""
        folders = {**self.folders, str(ROOT): ".", sys.prefix: "<python>"}
        if os.environ.get("GPU_CHECK_SITE"):  # set by gpu_check.sh
            folders[os.environ["GPU_CHECK_SITE"]] = "<site>"
        for folder, name in sorted(folders.items(), key=lambda item: -len(item[0])):
            text = text.replace(folder, name)
        return text

    def __call__(self, message: str) -> None:
        line = self.scrub(f"[{time.time() - self.start:6.1f} s] {message}")
        print(line, flush=True)
        with self.path.open("a") as file:
            file.write(line + "\n")


def machine() -> dict[str, Any]:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"gpu": gpu, "cpu_cores": len(os.sched_getaffinity(0)), "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda if torch.cuda.is_available() else None}


def choose_gl(frame_size: int, log: Log) -> str | None:
    """Set ``MUJOCO_GL`` to a backend that renders here (see the module docstring); None if none does."""
    if os.environ.get("MUJOCO_GL"):
        candidates = [({"MUJOCO_GL": os.environ["MUJOCO_GL"]}, os.environ["MUJOCO_GL"])]
    else:
        candidates = [({"MUJOCO_GL": "egl"}, "egl")]
        if Path(NVIDIA_EGL_VENDOR).is_file():
            candidates.append(({"MUJOCO_GL": "egl", "__EGL_VENDOR_LIBRARY_FILENAMES": NVIDIA_EGL_VENDOR},
                               "egl with NVIDIA's vendor file"))
        candidates.append(({"MUJOCO_GL": "osmesa"}, "osmesa"))
    for variables, name in candidates:
        try:
            done = subprocess.run([sys.executable, "-c", PROBE, str(frame_size)], env={**os.environ, **variables},
                                  capture_output=True, text=True, timeout=120)
            ok, why = done.returncode == 0, (done.stderr.strip().splitlines() or [""])[-1]
        except subprocess.TimeoutExpired:
            ok, why = False, "timed out"
        log(f"MUJOCO_GL probe, {name}: {'renders' if ok else 'fails: ' + why}")
        if ok:
            os.environ.update(variables)
            return name
    os.environ["MUJOCO_GL"] = "disable"  # state environments still run without a renderer
    return None


def epochs(device: str, tiny: bool, pixels: bool, log: Log) -> dict[str, Any]:
    """Step 2: the pixel and the state epoch (collection timed in full, then every gradient step of the epoch)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pixel_epoch import measure

    steps = 5 if tiny else 50  # timed gradient steps, scaled to the epoch's 200 (Kitchen: 100)
    try:
        from metra_gym.envs.kitchen import import_kitchen

        import_kitchen()
        kitchen = None
    except Exception as error:  # noqa: BLE001 - the reason is recorded, the Quadruped rows still measured
        kitchen = f"skipped: {type(error).__name__}: {str(error).splitlines()[0]}"
    rows: dict[str, Any] = {}
    for name, overrides in EPOCH_CONFIGS.items():
        if name.startswith("kitchen") and kitchen:
            rows[name] = kitchen
        elif not name.endswith("_state") and not pixels:
            rows[name] = "skipped: no rendering backend"
        else:
            try:
                rows[name] = measure(name, [f"device={device}", *(overrides if tiny else [])], steps)["per_q"]
            except Exception:  # one config failing leaves the others (and the training) to run
                rows[name] = "failed: " + log.scrub(traceback.format_exc(limit=3))
        row = rows[name]
        log(f"{name}: {row}" if isinstance(row, str) else
            f"{name}: collection {row['collect_s']} s + {row['gradient_steps_per_epoch']} x {row['gradient_step_s']} s "
            f"= {row['epoch_s']} s per epoch ({row['device']})")
    return rows


def train_until(run_dir: Path, device: str, tiny: bool, deadline: float, log: Log) -> dict[str, Any]:
    """Step 3: train pixel Quadruped in a subprocess until ``STOP_S + EVALUATE_S`` before ``deadline``, then SIGTERM
    (it saves after its current epoch); a second SIGTERM (stop at once) if that epoch outlasts ``STOP_S``. The run
    saves every few epochs, so a run state is there either way."""
    stop_at, must_end_at = deadline - STOP_S[tiny] - EVALUATE_S[tiny], deadline - EVALUATE_S[tiny]
    overrides = [f"device={device}", "epochs=1000000", "eval_every=1000000", f"eval_skills={2 if tiny else 8}",
                 f"save_every={1 if tiny else 10}", "save_replay_buffer=false", *(TINY if tiny else [])]
    command = [sys.executable, "-m", "pretrain", "train", "--no-progress", "--config", "quadruped", "--run-dir",
               str(run_dir)]
    for item in overrides:
        command += ["--set", item]
    log("training: " + " ".join(command[1:]))
    with (run_dir.parent / "train.log").open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=ROOT)
        while process.poll() is None and time.time() < stop_at:
            time.sleep(1.0)
        for sent in range(2):  # the first: save after this epoch; the second: stop now, keep the last save
            if process.poll() is not None:
                break
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=max(must_end_at - time.time(), 5.0) if sent == 0 else 30.0)
            except subprocess.TimeoutExpired:
                continue
        if process.poll() is None:
            process.kill()
            process.wait()
    state_file = run_dir / "run_state" / "latest" / "state.json"
    if not state_file.is_file():
        tail = (run_dir.parent / "train.log").read_text()[-2000:]
        raise RuntimeError(f"training saved no run state (exit code {process.returncode}); its log ends:\n{tail}")
    state = json.loads(state_file.read_text())
    log(f"training stopped at epoch {state['epoch']} ({state['num_timesteps']} env steps, "
        f"{state.get('wall_clock_s', 0):.0f} s of training)")
    return {"epochs": state["epoch"], "env_steps": state["num_timesteps"],
            "wall_clock_s": round(float(state.get("wall_clock_s", 0.0)), 1), "exit_code": process.returncode}


def random_coverage(env_kwargs: dict[str, Any], n: int, steps: int, seed: int) -> int:
    """Coverage of uniformly random actions from the resets the held-out evaluation uses (state observations: the
    positions do not depend on how the frames are drawn)."""
    import gymnasium as gym
    import numpy as np

    from pretrain.run.coverage import SkillRollouts, coverage

    kwargs = {**env_kwargs, "obs_type": "state"}
    rollouts = SkillRollouts(lambda: gym.make("metra/Quadruped-v0", max_episode_steps=steps, **kwargs), n, steps)
    rng = np.random.default_rng(seed)
    low, high = rollouts.envs[0].action_space.low, rollouts.envs[0].action_space.high
    positions = rollouts.run(lambda obs, z: rng.uniform(low, high, (len(obs), len(low))), np.zeros((n, 1)), seed=seed)
    rollouts.close()
    return coverage(positions)


def held_out(run_dir: Path, work: Path, out: Path, tiny: bool, log: Log) -> dict[str, Any]:
    """Step 4: export, held-out coverage of the trained skills, and of random actions."""
    from metra_gym.skill_policy import SkillPolicy
    from pretrain.evaluation.evaluate_checkpoint import HELD_OUT_SEED, evaluate_checkpoint
    from pretrain.export import export_run

    n_skills, steps = (4, 20) if tiny else (48, 200)
    checkpoint = export_run(run_dir, work / "checkpoint", machine="gpu_check")
    policy = SkillPolicy.from_pretrained(str(checkpoint))
    log(f"exported {checkpoint} (pixels {policy.pixels})")
    result = evaluate_checkpoint(str(checkpoint), work / "held_out", n_skills=n_skills, steps=steps,
                                 seed=HELD_OUT_SEED)
    shutil.copy(work / "held_out" / "trajectories.png", out / "trajectories.png")
    random = random_coverage(policy.config["env_kwargs"], n_skills, steps, HELD_OUT_SEED)
    log(f"held-out coverage: trained {result['policy_coverage']} bins, random actions {random} bins")
    return {"policy_coverage": result["policy_coverage"], "random_actions_coverage": random,
            "ratio": round(result["policy_coverage"] / max(random, 1), 2), "n_skills": n_skills, "steps": steps,
            "seed": HELD_OUT_SEED, "renderer": policy.renderer}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_check")
    parser.add_argument("--deadline", type=float, default=None, help="unix time by which everything has ended")
    parser.add_argument("--deadline-s", type=float, default=500.0, help="seconds from now (without --deadline)")
    parser.add_argument("--tiny", action="store_true", help="the logic at a tiny scale, on any machine")
    parser.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    args = parser.parse_args()
    deadline = args.deadline or time.time() + args.deadline_s
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out / "log.txt")

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    entry: dict[str, Any] = {"machine": machine(), "device": device, "tiny": args.tiny}
    log(f"machine: {entry['machine']}; device {device}; {deadline - time.time():.0f} s to the deadline")
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    log.folders[str(work)] = "<scratch>"
    try:
        gl = choose_gl(32 if args.tiny else 64, log)
        entry["mujoco_gl"] = gl or "none renders: pixel steps skipped"
        entry["epoch"] = epochs(device, args.tiny, gl is not None, log)
        if gl is not None:
            (work / "run").mkdir()
            entry["training"] = train_until(work / "run" / "quadruped", device, args.tiny, deadline, log)
            (args.out / "training_coverage.csv").write_bytes(
                (work / "run" / "quadruped" / "eval" / "coverage.csv").read_bytes())
            entry["held_out"] = held_out(work / "run" / "quadruped", work, args.out, args.tiny, log)
        status = 0
    except Exception:  # record how far it got; the summary is still written
        entry["error"] = log.scrub(traceback.format_exc(limit=5))
        log(entry["error"])
        status = 1
    finally:
        entry["total_s"] = round(time.time() - log.start, 1)
        train_log = work / "run" / "train.log"
        if train_log.is_file():
            (args.out / "train_log.txt").write_text(log.scrub(train_log.read_text()))
        shutil.rmtree(work, ignore_errors=True)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from measurements import append_measurement

    append_measurement(args.out / "summary.json", "pixel METRA on a GPU machine (benchmarks/gpu_check.sh): pixel vs "
                       "state epoch, then pixel Quadruped trained to the deadline, held-out coverage vs random actions",
                       entry)
    log(f"done in {entry['total_s']} s ({deadline - time.time():.0f} s before the deadline)")
    return status


if __name__ == "__main__":
    sys.exit(main())
