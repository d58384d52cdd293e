"""What a user gets for bad input: a broad set of wrong commands, configs, skill actions, policy inputs and broken
checkpoint files, each tried for real, with the answer recorded.

Groups: ``cli/config`` (``metra-pretrain train`` validation, resume, export, evaluate, goal-eval, sweep; each run
as ``python -m pretrain ...`` in its own temporary folder, with a timeout; signals sent to a sweep, and to a command
while it starts), ``python API`` (the ``METRA``/``LSD`` classes' constructor and ``load``), ``skill env``
(``gym.make`` arguments, ``reset``, ``render`` and ``step`` of the skill ids and the environments under them, and
what a process that rendered prints at exit), ``SkillPolicy`` (``act``, ``phi``, ``goal_skill``, ``make_env``),
``checkpoint`` (copies of the bundled ``ant`` checkpoint with broken or edited ``config.json`` fields or weights,
missing files, bad names and Hub references; the Hub only offline or at an unreachable
``HF_ENDPOINT=http://127.0.0.1:9``, never the network) and ``pickle`` (pickling and deep-copying envs and policies,
which should work). ``--only issue45`` runs the cases of issue 45 alone.

Each case gets one outcome:

- ``clear error``: the library's own error (exit code != 0 without a Python traceback for commands; a
  ``ValueError``/``TypeError``/``CheckpointError``/``gymnasium.error.Error`` raised in metra_gym or pretrain for
  calls), with the first line of its message; for a signal: the command's own stop message with exit code
  128 + the signal's number;
- ``works``: no error (a legal input, or a bad input that is silently accepted: see ``expected``);
- ``MISLEADING``: one clear line that says what is not so (a case names the words that would be wrong);
- ``TRACEBACK``: a raw Python traceback on stderr, or an exception of another type or raised inside a library; for
  a signal, any other end (Ray's ``*** SIGTERM received`` dump, another exit code, no message);
- ``TIMEOUT``: the command did not finish within ``--timeout`` seconds.

For commands, ``files left`` lists what appeared or changed in the case's folder (a failed command should leave
nothing). Writes ``benchmarks/results/bad_input/summary.json`` (every row, the counts, ``works`` split into
``legal`` and ``silent``) and ``table.md``. About 240 cases in 10-30 minutes on 2 busy CPU cores (the commands,
one at a time, are nearly all of it: each starts Python and torch; three start Ray); the Hub is never contacted.
The full-disk cases mount a small tmpfs (root on Linux); where that fails they are skipped with a note.

    nice -n 19 env OMP_NUM_THREADS=1 MUJOCO_GL=egl python benchmarks/bad_input.py [--timeout 180] [--only GROUP]
"""

from __future__ import annotations

import os
import sys

# Before anything imports huggingface_hub: no Hub request may leave this machine, and no user cache is read.
# A --child keeps the environment its case gave it (HF_HUB_OFFLINE unset for the unreachable-Hub cases); it
# inherits HF_ENDPOINT=http://127.0.0.1:9 from the parent either way.
if "--child" not in sys.argv:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MUJOCO_GL", "egl")

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import metra_gym  # noqa: E402, F401  (registers the metra/ ids)
from tests.metra_gym.helpers import broken_checkpoint, set_key  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bad_input"
OURS = (str(ROOT / "metra_gym"), str(ROOT / "pretrain"))
MESSAGE_CHARS = 160
SCRATCH: list[str] = []  # the scratch folder of this run, shown as <tmp> in messages
GROUPS = ("cli/config", "python API", "skill env", "SkillPolicy", "checkpoint", "pickle")  # the table's order
TRACEBACK_MARK = "Traceback (most recent call last)"
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")
# A run small enough to train in seconds: the fixture that resume and export cases start from, and the settings of
# train cases that might get past validation.
TINY = ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1", "n_envs=2", "eval_skills=4",
        "gradient_steps=5", "save_replay_buffer=false"]


@dataclass
class Row:
    group: str
    input: str
    expected: str  # "error" or "works": what a careful library should answer
    outcome: str  # "clear error", "works", "MISLEADING", "TRACEBACK" or "TIMEOUT"
    detail: str  # exception type or exit code, and the first line of the message (or of the output)
    files_left: str  # commands: what appeared or changed in the case's folder; calls: "-"
    seconds: float


def first_line(text: str) -> str:
    for scratch in SCRATCH:  # temporary folders differ run to run: write them as <tmp>
        text = text.replace(scratch, "<tmp>")
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 3] + "..."


# --- calls in this process ----------------------------------------------------------------------------------------


def classify_exception(error: BaseException) -> tuple[str, str]:
    """(outcome, detail) of an exception: a clear error is one of the documented types, raised by our own code."""
    frames = traceback.extract_tb(error.__traceback__)
    origin = frames[-1] if frames else None
    ours = origin is not None and origin.filename.startswith(OURS)
    detail = f"{type(error).__name__}: {first_line(str(error))}"
    if isinstance(error, gym.error.Error) or (isinstance(error, (ValueError, TypeError)) and ours):
        return "clear error", detail
    where = f" [raised in {Path(origin.filename).name}:{origin.lineno}]" if origin is not None else ""
    return "TRACEBACK", detail + where


def attempt(fn: Callable[[], Any]) -> tuple[str, str]:
    try:
        result = fn()
    except Exception as error:  # every exception is the measurement
        return classify_exception(error)
    return "works", first_line(_describe(result))


def _describe(result: Any) -> str:
    if isinstance(result, tuple) and len(result) == 5:  # a step: obs, reward, terminated, truncated, info
        info = result[4]
        skill = f", skill {_rounded(info['skill'])}" if info.get("skill") is not None else ""
        return f"step ok: reward {float(result[1]):.3f}{skill}"
    if isinstance(result, np.ndarray):
        return f"array {result.shape} {_rounded(result.ravel()[:4])}"
    return type(result).__name__ if not isinstance(result, str) else result


def _rounded(values: Any) -> list[float]:
    return [round(float(v), 3) for v in np.ravel(values)]


def call(group: str, label: str, fn: Callable[[], Any], expected: str = "error") -> Row:
    start = time.perf_counter()
    outcome, detail = attempt(fn)
    return Row(group, label, expected, outcome, detail, "-", round(time.perf_counter() - start, 2))


# --- commands in subprocesses -------------------------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file (size, mtime) and folder (an empty folder left behind counts too) under ``folder``."""
    return {str(p.relative_to(folder)) + ("/" if p.is_dir() else ""):
            (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0) for p in folder.rglob("*")}


def changed_files(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> str:
    """What appeared or changed, summarised by top-level entry: ``run/ (12 files)``."""
    changed = sorted(path for path, stamp in after.items() if before.get(path) != stamp)
    removed = sorted(set(before) - set(after))
    if not changed and not removed:
        return "none"
    tops: dict[str, int] = {}
    for path in changed:
        parts_ = Path(path).parts
        top = parts_[0] + ("/" if len(parts_) > 1 or path.endswith("/") else "")
        tops[top] = tops.get(top, 0) + (not path.endswith("/"))  # count files; a folder alone counts as 0
    parts = [(f"{top} ({n} file{'s' * (n != 1)})" if top.endswith("/") else top) for top, n in sorted(tops.items())]
    if removed:
        parts.append(f"{len(removed)} removed")
    return ", ".join(parts)


def child_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def classify_command(code: int, stdout: str, stderr: str) -> tuple[str, str]:
    if TRACEBACK_MARK in stderr or TRACEBACK_MARK in stdout:
        lines = [s for s in stderr.strip().splitlines() if s.strip()]
        # The exception line ("yaml.scanner.ScannerError: ..."); messages may run over several lines after it.
        last = next((s for s in reversed(lines) if EXCEPTION_LINE.match(s)), lines[-1] if lines else "")
        return "TRACEBACK", f"exit {code}: {first_line(last)}"
    if code == 0:
        return "works", f"exit 0: {first_line(stdout.strip().splitlines()[-1] if stdout.strip() else '')}"
    # The line that says what is wrong (argparse prints its usage first; libraries may warn first).
    lines = [s for s in stderr.splitlines() if s.strip()]
    message = next((s for s in lines if "error" in s.lower() or "stopped" in s.lower()), lines[0] if lines else "")
    return "clear error", f"exit {code}: {first_line(message)}"


def classify_stop(code: int, stdout: str, stderr: str, sig: signal.Signals, must_say: str) -> tuple[str, str]:
    """How a command stopped by ``sig`` ended (see :meth:`Runner.signal_case`)."""
    lines = [s for s in stderr.splitlines() if s.strip()]
    dump = next((s for s in lines if "*** SIG" in s), None)  # the C++ failure-signal handler of Ray's core worker
    if TRACEBACK_MARK in stderr or dump is not None:
        last = dump or next((s for s in reversed(lines) if EXCEPTION_LINE.match(s)), lines[-1] if lines else "")
        return "TRACEBACK", f"exit {code}: {first_line(last)}"
    message = next((s for s in lines if s.startswith("metra-pretrain")), lines[0] if lines else "")
    if code == 128 + sig and must_say in stderr:
        return "clear error", f"exit {code}: {first_line(message)}"
    return "TRACEBACK", f"exit {code} (expected {128 + sig} and {must_say!r}): {first_line(message) or 'no message'}"


class Runner:
    """Runs each command case in a fresh folder under ``scratch`` and records what it answers and leaves."""

    def __init__(self, scratch: Path, fixtures: Path, timeout: float) -> None:
        self.scratch, self.fixtures, self.timeout = scratch, fixtures, timeout
        self.count = 0

    def folder(self) -> Path:
        self.count += 1
        path = self.scratch / "cases" / f"{self.count:03d}"
        path.mkdir(parents=True)
        return path

    def setup(self, folder: Path, fixtures: dict[str, str] | None, files: dict[str, str] | None) -> None:
        """Copy fixtures (name in the case folder -> fixture name) and write small files into the case folder."""
        for name, fixture in (fixtures or {}).items():
            source = self.fixtures / fixture
            if source.is_dir():
                shutil.copytree(source, folder / name)
            else:
                shutil.copy2(source, folder / name)
        for name, text in (files or {}).items():
            if name.endswith("/"):
                (folder / name).mkdir(parents=True, exist_ok=True)
            else:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text)

    def cli(self, group: str, args: list[str], expected: str = "error", fixtures: dict[str, str] | None = None,
            files: dict[str, str] | None = None, env: dict[str, str | None] | None = None,
            label: str | None = None, misleading_if: str | None = None) -> Row:
        folder = self.folder()
        self.setup(folder, fixtures, files)
        before = snapshot(folder)
        shown = label or "metra-pretrain " + shlex.join(args)
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "pretrain", *args], cwd=folder, env=child_env(env),
                                  capture_output=True, text=True, timeout=self.timeout)
            outcome, detail = classify_command(done.returncode, done.stdout, done.stderr)
            if outcome == "clear error" and misleading_if is not None and misleading_if in detail:
                outcome = "MISLEADING"  # one clear line, but it says what is not so
        except subprocess.TimeoutExpired:
            outcome, detail = "TIMEOUT", f"no answer within {self.timeout:.0f} s"
        seconds = round(time.perf_counter() - start, 2)
        return Row(group, shown, expected, outcome, detail, changed_files(before, snapshot(folder)), seconds)

    def python(self, group: str, label: str, expression: str, env: dict[str, str | None] | None = None,
               expected: str = "error") -> Row:
        """Evaluate ``expression`` in a child process (for settings read at import, such as the Hub's)."""
        folder = self.folder()
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", expression], cwd=folder,
                                  env=child_env(env), capture_output=True, text=True, timeout=self.timeout)
            lines = done.stdout.strip().splitlines()
            if done.returncode == 0 and lines:
                answer = json.loads(lines[-1])
                outcome, detail = answer["outcome"], answer["detail"]
            else:
                outcome, detail = classify_command(done.returncode, done.stdout, done.stderr)
                outcome = "TRACEBACK" if outcome != "works" else outcome
        except subprocess.TimeoutExpired:
            outcome, detail = "TIMEOUT", f"no answer within {self.timeout:.0f} s"
        seconds = round(time.perf_counter() - start, 2)
        return Row(group, label, expected, outcome, f"{detail} ({seconds:.0f} s)", "-", seconds)


    def command_in(self, folder: Path, group: str, argv: list[str], expected: str, label: str) -> Row:
        """Run ``argv`` (after the Python interpreter) in an existing case ``folder``: cases that share a folder,
        such as a command that fails and the same command again."""
        before = snapshot(folder)
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, *argv], cwd=folder, env=child_env(), capture_output=True, text=True,
                                  timeout=self.timeout)
            outcome, detail = classify_command(done.returncode, done.stdout, done.stderr)
        except subprocess.TimeoutExpired:
            outcome, detail = "TIMEOUT", f"no answer within {self.timeout:.0f} s"
        seconds = round(time.perf_counter() - start, 2)
        return Row(group, label, expected, outcome, detail, changed_files(before, snapshot(folder)), seconds)

    def signal_case(self, group: str, args: list[str], sig: signal.Signals, label: str, must_say: str,
                    wait_for: str | None = None, after_s: float = 0.0, fixtures: dict[str, str] | None = None,
                    misleading_if: str | None = None) -> Row:
        """Start ``metra-pretrain ARGS`` in a fresh folder, send ``sig`` once ``wait_for`` (a path in the folder)
        exists, or ``after_s`` seconds after the start, and record how it ends. A clear stop is exit code 128 + the
        signal's number, a message holding ``must_say`` and no traceback (MISLEADING when it holds ``misleading_if``);
        anything else (a traceback, Ray's ``*** SIGTERM received`` dump, another exit code, no message) is recorded
        as TRACEBACK, with what it was."""
        folder = self.folder()
        self.setup(folder, fixtures, None)
        before = snapshot(folder)
        start = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            # SIGINT as a terminal's Ctrl-C reaches it: a probe started in the background (`... &` without job
            # control) ignores SIGINT, and its children would inherit that.
            process = subprocess.Popen([sys.executable, "-m", "pretrain", *args], cwd=folder, env=child_env(),
                                       stdout=out, stderr=err, text=True,
                                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            try:
                deadline = start + self.timeout
                if wait_for is not None:
                    while not (folder / wait_for).exists() and process.poll() is None and time.perf_counter() < deadline:
                        time.sleep(0.2)
                else:
                    time.sleep(after_s)
                sent = process.poll() is None
                if sent:
                    process.send_signal(sig)
                code = process.wait(timeout=max(1.0, deadline - time.perf_counter()))
                out.seek(0)
                err.seek(0)
                stdout, stderr = out.read(), err.read()
                outcome, detail = classify_stop(code, stdout, stderr, sig, must_say)
                if outcome == "clear error" and misleading_if is not None and misleading_if in stderr:
                    outcome = "MISLEADING"  # one clear line, but it says what is not so
                if not sent:
                    outcome, detail = "TRACEBACK", f"ended before the signal: {detail}"
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                outcome, detail = "TIMEOUT", f"no answer within {self.timeout:.0f} s"
        seconds = round(time.perf_counter() - start, 2)
        return Row(group, label, "error", outcome, detail, changed_files(before, snapshot(folder)), seconds)

    def python_code(self, group: str, label: str, code: str, expected: str = "error") -> Row:
        """Run ``python -c code`` in a fresh folder (no script: what a notebook or a one-liner gets)."""
        return self.command_in(self.folder(), group, ["-c", code], expected, label)


def child(expression: str) -> None:
    """``--child EXPR``: evaluate one call here and print its (outcome, detail) as JSON."""
    from metra_gym.skill_policy import SkillPolicy

    namespace = {"SkillPolicy": SkillPolicy, "gym": gym, "np": np, "Path": Path}
    outcome, detail = attempt(lambda: eval(expression, namespace))  # our own expressions, not input
    print(json.dumps({"outcome": outcome, "detail": detail}))


# --- fixtures ---------------------------------------------------------------------------------------------------


def ant_folder() -> Path:
    from metra_gym.skill_checkpoint.hub import resolve_checkpoint

    return resolve_checkpoint("ant")


def make_fixtures(fixtures: Path, timeout: float) -> None:
    """A tiny finished run (and one of 2 epochs), untrained DIAYN and DADS checkpoints (no phi; DIAYN's has q(z | s),
    format 5), an ant checkpoint naming CartPole-v1."""
    fixtures.mkdir(parents=True)
    env = child_env()
    steps = [["train", "--no-progress", "--config", "point_mass", "--run-dir", "tiny_run",
              *[a for s in TINY for a in ("--set", s)]],
             ["train", "--no-progress", "--config", "point_mass", "--run-dir", "tiny_run2",
              *[a for s in [*TINY, "epochs=2"] for a in ("--set", s)]],
             ["export", "--untrained", "--config", "point_mass", "--set", "algo=diayn", "diayn_ckpt"],
             ["export", "--untrained", "--config", "point_mass", "--set", "algo=dads", "dads_ckpt"]]
    for args in steps:
        done = subprocess.run([sys.executable, "-m", "pretrain", *args], cwd=fixtures, env=env, capture_output=True,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise SystemExit(f"fixture {shlex.join(args)} failed:\n{done.stderr}")
    broken_checkpoint(fixtures / "cartpole_ckpt", edit_config=set_key("env_id", "CartPole-v1"))
    (fixtures / "file.txt").write_text("not a folder\n")


# --- the cases ----------------------------------------------------------------------------------------------------


def cli_cases(run: Runner) -> list[Row]:
    g = "cli/config"
    rows: list[Row] = []

    def train(*sets: str, extra: tuple[str, ...] = (), tiny: bool = False, expected: str = "error", **kw: Any) -> None:
        args = ["train", "--no-progress", "--config", "point_mass", "--run-dir", "run", *extra]
        for s in sets:
            args += ["--set", s]
        label = "metra-pretrain " + shlex.join(args[:1] + args[2:]) + (" + tiny settings" if tiny else "")
        if tiny:
            args += [a for s in TINY for a in ("--set", s)]
        rows.append(run.cli(g, args, expected=expected, label=label, **kw))

    # Config values, validated before anything is written.
    for setting in ["learning_rate=-1", "learning_rate=nan", "gamma=2", "device=banana", "device=cuda", "epoch=10",
                    "epochs", "epochs=ten", "backbone=ppo", "env_id=CartPole-v1", "normalizer=antt",
                    "env_kwargs=[1, 2]"]:
        train(setting)
    train(extra=("--seed", "-1"), tiny=True)
    # Config files and arguments.
    rows.append(run.cli(g, ["train", "--config", "cheetah", "--run-dir", "run"]))
    rows.append(run.cli(g, ["train", "--config", "missing.yaml", "--run-dir", "run"]))
    rows.append(run.cli(g, ["train", "--config", "bad.yaml", "--run-dir", "run"], files={"bad.yaml": "epochs: [1, 2\n"}))
    rows.append(run.cli(g, ["train", "--config", "configs", "--run-dir", "run"], files={"configs/": ""}))
    rows.append(run.cli(g, ["train", "--config", "point_mass"]))
    rows.append(run.cli(g, ["trian", "--config", "point_mass"]))
    rows.append(run.cli(g, ["train", "--no-progress", "--config", "point_mass", "--run-dir", "file.txt",
                            *[a for s in TINY for a in ("--set", s)]], fixtures={"file.txt": "file.txt"},
                        label="metra-pretrain train --config point_mass --run-dir file.txt (an existing file) "
                              "+ tiny settings"))
    rows.append(run.cli(g, ["train", "--config", "point_mass", "--run-dir", "run"], fixtures={"run": "tiny_run"},
                        label="metra-pretrain train --config point_mass --run-dir run (a finished run)"))
    # Resume.
    rows.append(run.cli(g, ["train", "--resume", "missing"]))
    rows.append(run.cli(g, ["train", "--resume", "file.txt"], fixtures={"file.txt": "file.txt"}))
    for setting in ["backbone=tqc", "learning_rate=-1"]:
        rows.append(run.cli(g, ["train", "--no-progress", "--resume", "run", "--set", setting],
                            fixtures={"run": "tiny_run"}))
    rows.append(run.cli(g, ["train", "--no-progress", "--resume", "run"], fixtures={"run": "tiny_run"},
                        files={"run/config.yaml": "epochs: [1, 2\n"},
                        label="metra-pretrain train --resume run (config.yaml not valid YAML)"))
    rows.append(run.cli(g, ["train", "--no-progress", "--resume", "run"], fixtures={"run": "tiny_run"},
                        files={"run/config.yaml": "- 1\n- 2\n"},
                        label="metra-pretrain train --resume run (config.yaml a YAML list)"))
    rows.append(run.cli(g, ["train", "--no-progress", "--resume", "run"], fixtures={"run": "tiny_run"},
                        files={"run/run_state/latest/state.json": "{not json"},
                        label="metra-pretrain train --resume run (run_state/latest/state.json not valid JSON)"))
    rows.append(run.cli(g, ["train", "--no-progress", "--resume", "run", "--config", "ant", "--run-dir", "other"],
                        fixtures={"run": "tiny_run"}, expected="error",
                        label="metra-pretrain train --resume run --config ant --run-dir other (finished tiny run)"))
    # Export.
    rows.append(run.cli(g, ["export", "run", "file.txt"], fixtures={"run": "tiny_run", "file.txt": "file.txt"},
                        label="metra-pretrain export run file.txt (an existing file)"))
    rows.append(run.cli(g, ["export", "run", "out"], fixtures={"run": "tiny_run"}, files={"out/keep.txt": "x"},
                        label="metra-pretrain export run out (a non-empty folder)"))
    rows.append(run.cli(g, ["export", "missing", "out"]))
    rows.append(run.cli(g, ["export", "run", "out", "--held-out", "missing.json"], fixtures={"run": "tiny_run"}))
    rows.append(run.cli(g, ["export", "--untrained", "--config", "point_mass_pixels", "out"], expected="works"))
    rows.append(run.cli(g, ["export", "run", "out"], fixtures={"run": "tiny_run"}, expected="works"))
    # Evaluate and goal-eval.
    for args in (["evaluate", "ant", "--skills", "0"], ["evaluate", "antt"], ["goal-eval", "ant", "--goals", "0"]):
        rows.append(run.cli(g, args))
    rows.append(run.cli(g, ["evaluate", "empty"], files={"empty/": ""}))
    rows.append(run.cli(g, ["evaluate", "hf://metra/ant-skills", "--skills", "1"],
                        label="HF_HUB_OFFLINE=1 (empty cache) metra-pretrain evaluate hf://metra/ant-skills"))
    rows.append(run.cli(g, ["evaluate", "ckpt", "--skills", "1"], fixtures={"ckpt": "cartpole_ckpt"},
                        label="metra-pretrain evaluate ckpt --skills 1 (ant checkpoint whose env_id is CartPole-v1)"))
    rows.append(run.cli(g, ["evaluate", "ckpt", "--skills", "2"], fixtures={"ckpt": "diayn_ckpt"}, expected="works",
                        label="metra-pretrain evaluate ckpt --skills 2 (untrained DIAYN point-mass checkpoint)"))
    rows.append(run.cli(g, ["evaluate", "ant", "--skills", "1", "--out", "file.txt"], fixtures={"file.txt": "file.txt"},
                        label="metra-pretrain evaluate ant --skills 1 --out file.txt (an existing file)"))
    rows.append(run.cli(g, ["goal-eval", "ckpt", "--goals", "2"], fixtures={"ckpt": "diayn_ckpt"}, expected="works",
                        label="metra-pretrain goal-eval ckpt --goals 2 (untrained DIAYN checkpoint: no phi, goal "
                              "skills from its q(z | s), format 5)"))
    rows.append(run.cli(g, ["goal-eval", "ckpt", "--goals", "2"], fixtures={"ckpt": "dads_ckpt"},
                        label="metra-pretrain goal-eval ckpt --goals 2 (untrained DADS checkpoint: no phi, no q(z | s))"))
    rows.append(run.cli(g, ["goal-eval", "ant", "--goals", "2", "--baseline", "half_cheetah"]))
    rows.append(run.cli(g, ["goal-eval", "ant", "--goals", "2", "--no-baseline", "--out", "file.txt"],
                        fixtures={"file.txt": "file.txt"},
                        label="metra-pretrain goal-eval ant --goals 2 --no-baseline --out file.txt (an existing file)"))
    # Sweep: every case must fail before Ray starts.
    rows.append(run.cli(g, ["sweep", "--config", "point_mass", "--run-root", "sweep", "--grid", "epoch=1,2"]))
    rows.append(run.cli(g, ["sweep", "--config", "point_mass", "--run-root", "sweep", "--cpus-per-run", "0"]))
    rows.extend(sweep_cases(run))
    return rows


def sweep_cases(run: Runner) -> list[Row]:
    """Sweeps that could never run, duplicate trials, bad sweep files, a resume under a changed setting: each must
    end at once, before Ray starts, in one clear line."""
    g = "cli/config"
    base = ["sweep", "--config", "point_mass", "--run-root", "sweep"]
    methods = "seeds: [0]\nconfig: point_mass\nepochs: {point_mass: 1}\nmethods:\n  metra: {}\n"
    tiny = [a for s in TINY if not s.startswith("torch_threads=") for a in ("--set", s)]
    rows = [run.cli(g, [*base, *extra]) for extra in (
        ["--address", "127.0.0.1:9"], ["--cpus-per-run", "4096"], ["--seeds", "0", "0"], ["--grid", "seed=3,4"],
        ["--grid", "gradient_steps=5", "--grid", "gradient_steps=6"], ["--set", "torch_threads=2"])]
    for label, text in (("an unknown method", methods + "  lsdd: {}\n"),
                        ("an option of metra given to lsd", methods + "  lsd: {dual_slack: 0.01}\n")):
        rows.append(run.cli(g, ["sweep", "sweep.yaml", "--run-root", "sweep"], files={"sweep.yaml": text},
                            label=f"metra-pretrain sweep sweep.yaml --run-root sweep (sweep file with {label})"))
    rows.append(run.cli(g, [*base, "--seeds", "0", *tiny, "--set", "net_width=32"],
                        fixtures={"sweep/seed=0": "tiny_run"},
                        label="metra-pretrain sweep --config point_mass --run-root sweep --seeds 0 --set net_width=32 "
                              "(sweep/seed=0 holds the tiny run trained with net_width=16) + tiny settings"))
    return rows


def skill_env_cases(scratch: Path, fixtures: Path) -> list[Row]:
    from metra_gym.skill_env import SkillEnv

    g = "skill env"
    ant = gym.make("metra/AntSkills-v0", skill_steps=1)
    ant.reset(seed=0)
    cheetah = gym.make("metra/HalfCheetahSkills-v0", skill_steps=1)
    cheetah.reset(seed=0)
    empty = scratch / "empty_folder"
    empty.mkdir(exist_ok=True)
    rows = [call(g, "AntSkills: step([1, 0]) before reset()",
                 lambda: gym.make("metra/AntSkills-v0", skill_steps=1).step([1.0, 0.0]))]
    discrete = [("3.7", 3.7), ('"3"', "3"), ("True", True), ("2**70", 2**70), ("16", 16),
                ("np.array([3])", np.array([3]))]
    for text, action in discrete:
        rows.append(call(g, f"HalfCheetahSkills (Discrete(16)): step({text})", lambda a=action: cheetah.step(a)))
    rows.append(call(g, "HalfCheetahSkills: step(np.int8(3))", lambda: cheetah.step(np.int8(3)), expected="works"))
    continuous = [("[nan, 1.0]", [np.nan, 1.0]), ("[inf, 0.0]", [np.inf, 0.0]), ("[0.0, 0.0]", [0.0, 0.0]),
                  ("[1.0, 0.0, 0.0]", [1.0, 0.0, 0.0]), ("3.7", 3.7), ('["1", "0"]', ["1", "0"]),
                  ("[True, False]", [True, False]), ("None", None), ("2**70", 2**70), ("[1+1j, 0]", [1 + 1j, 0])]
    for text, action in continuous:
        rows.append(call(g, f"AntSkills (Box(-1, 1, (2,))): step({text})", lambda a=action: ant.step(a)))
    for text, action in [("[1e300, 1e300]", [1e300, 1e300]), ("[3.0, 4.0]", [3.0, 4.0])]:
        rows.append(call(g, f"AntSkills: step({text})", lambda a=action: ant.step(a), expected="works"))
    rows.append(call(g, "AntSkills: reset(seed=-1)", lambda: ant.reset(seed=-1)))
    makes: list[tuple[str, dict[str, Any], str]] = [
        ("metra/AntSkills-v0", {"skill_steps": True}, "error"), ("metra/AntSkills-v0", {"skill_steps": 0}, "error"),
        ("metra/AntSkills-v0", {"skill_steps": 2.0}, "error"),
        ("metra/AntSkills-v0", {"checkpoint": "half_cheetah"}, "error"),
        ("metra/HalfCheetahSkills-v0", {"checkpoint": "ant"}, "error"),
        ("metra/AntSkills-v0", {"checkpoint": "antt"}, "error"),
        ("metra/AntSkills-v0", {"policy_obs_dim": 20}, "error"),
        ("metra/AntSkills-v0", {"env_kwargs": {"bogus": 1}}, "error"),
        ("metra/AntSkills-v0", {"render_mode": "banana"}, "error"),
        ("metra/HumanoidSkills-v0", {}, "error"),  # no bundled humanoid_state: its default is missing
    ]
    for env_id, kwargs, expected in makes:
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        rows.append(call(g, f"gym.make({env_id!r}{', ' if shown else ''}{shown})",
                         lambda e=env_id, k=kwargs: gym.make(e, **k), expected=expected))
    rows.append(call(g, "gym.make('metra/AntSkills-v0', checkpoint=<empty folder>)",
                     lambda: gym.make("metra/AntSkills-v0", checkpoint=str(empty))))
    rows.append(call(g, "SkillEnv('metra/PointMass-v0', checkpoint=<untrained point-mass checkpoint>)",
                     lambda: SkillEnv("metra/PointMass-v0", checkpoint=str(fixtures / "diayn_ckpt")),
                     expected="works"))
    return rows


def policy_cases(scratch: Path, fixtures: Path) -> list[Row]:
    from metra_gym.skill_policy import SkillPolicy

    g = "SkillPolicy"
    ant = SkillPolicy.from_pretrained("ant")
    cheetah = SkillPolicy.from_pretrained("half_cheetah")
    obs, z = np.zeros(29, dtype=np.float32), np.array([1.0, 0.0])
    rows = [
        call(g, "ant.act(obs, [0, 0]) (zero skill)", lambda: ant.act(obs, [0.0, 0.0])),
        call(g, "ant.act(obs, [3, 4]) (norm 5)", lambda: ant.act(obs, [3.0, 4.0])),
        call(g, "ant.act(obs, [1, 0, 0]) (3-d skill)", lambda: ant.act(obs, [1.0, 0.0, 0.0])),
        call(g, "ant.act(obs, [nan, 1])", lambda: ant.act(obs, [np.nan, 1.0])),
        call(g, "ant.act(np.zeros(18), z) (HalfCheetah-sized obs)", lambda: ant.act(np.zeros(18), z)),
        call(g, "ant.act(np.zeros((3, 29)), 2 skills) (batch mismatch)",
             lambda: ant.act(np.zeros((3, 29)), np.tile(z, (2, 1)))),
        call(g, "ant.act(np.full(29, nan), z)", lambda: ant.act(np.full(29, np.nan), z)),
        call(g, "ant.act(obs, z, deterministic=False, rng=123) (a seed, not a Generator)",
             lambda: ant.act(obs, z, deterministic=False, rng=123), expected="works"),  # a seed is accepted
        call(g, "ant.act(obs, z, deterministic=False, rng='123') (a string)",
             lambda: ant.act(obs, z, deterministic=False, rng="123")),
        call(g, "ant.act(obs, z, deterministic=False, rng=np.random.default_rng(0))",
             lambda: ant.act(obs, z, deterministic=False, rng=np.random.default_rng(0)), expected="works"),
        call(g, "cheetah.act(obs, np.full(16, 1/16)) (not one-hot)",
             lambda: cheetah.act(np.zeros(18), np.full(16, 1 / 16))),
        call(g, "cheetah.act(obs, 3) (an index, not one-hot)", lambda: cheetah.act(np.zeros(18), 3)),
        call(g, "ant.goal_skill(s, s)", lambda: ant.goal_skill(obs, obs)),
        call(g, "ant.goal_skill(s, s + 1)", lambda: ant.goal_skill(obs, obs + 1.0), expected="works"),
        call(g, "SkillPolicy.from_pretrained(<untrained DIAYN checkpoint>).phi(obs)",
             lambda: SkillPolicy.from_pretrained(fixtures / "diayn_ckpt").phi(np.zeros(2))),
        call(g, "SkillPolicy.from_pretrained(<ant checkpoint naming CartPole-v1>).make_env()",
             lambda: SkillPolicy.from_pretrained(fixtures / "cartpole_ckpt").make_env()),
        call(g, "SkillPolicy({}, {}) (the constructor with an empty config)", lambda: SkillPolicy({}, {})),
    ]
    return rows


def checkpoint_cases(scratch: Path) -> list[Row]:
    from metra_gym.skill_policy import SkillPolicy

    g = "checkpoint"
    base = scratch / "checkpoints"
    base.mkdir()
    count = iter(range(1000))

    def load_broken(label: str, expected: str = "error", **edits: Any) -> Row:
        folder = broken_checkpoint(base / f"c{next(count):03d}", **edits)
        return call(g, label, lambda: SkillPolicy.from_pretrained(folder), expected=expected)

    def load_files(label: str, change: Callable[[Path], None], expected: str = "error") -> Row:
        folder = broken_checkpoint(base / f"c{next(count):03d}")
        change(folder)
        return call(g, label, lambda: SkillPolicy.from_pretrained(folder), expected=expected)

    def delete_key(key: str) -> Callable[[dict], None]:
        return lambda config: config.pop(key)

    def shorter_normalizer(config: dict) -> None:
        config["normalizer"]["mean"] = config["normalizer"]["mean"][:28]
        config["normalizer"]["std"] = config["normalizer"]["std"][:28]

    def downgrade(config: dict) -> None:
        config["format_version"] = 1
        config.pop("weights_sha256")

    rows: list[Row] = []
    fields: list[tuple[str, Any]] = [
        ("discrete_skills", "false"), ("obs_dim", 29.7), ("obs_dim", 30), ("action_dim", "8"), ("skill_dim", 0),
        ("format_version", 99), ("env_kwargs", []), ("action_high", [-2.0] * 8), ("actor_hidden", [256, "256"]),
        ("normalizer", None), ("normalizer.std", [1.0] * 28 + [0.0]), ("normalizer.mean", [float("nan")] * 29),
        ("weights_sha256", "abc"),
    ]
    for key, value in fields:
        shown = json.dumps(value) if not (isinstance(value, list) and len(value) > 4) else (
            f"[{json.dumps(value[0])}] * {len(value)}" if len(set(map(str, value))) == 1
            else f"[1.0] * 28 + [{json.dumps(value[-1])}]")
        rows.append(load_broken(f"config.json {key} = {shown}", edit_config=set_key(key, value)))
    rows.append(load_broken("config.json without env_id", edit_config=delete_key("env_id")))
    rows.append(load_broken("config.json normalizer mean and std of 28 entries (obs_dim 29)",
                            edit_config=shorter_normalizer))
    rows.append(load_broken("format_version 1 without weights_sha256", edit_config=downgrade, expected="works"))
    rows.append(load_files("config.json = '{not json'", lambda f: (f / "config.json").write_text("{not json")))
    rows.append(load_files("config.json = '[1, 2]'", lambda f: (f / "config.json").write_text("[1, 2]")))
    rows.append(load_files("config.json missing", lambda f: (f / "config.json").unlink()))
    rows.append(load_files("config.json is a folder", lambda f: ((f / "config.json").unlink(),
                                                                 (f / "config.json").mkdir())))
    rows.append(load_files("model.safetensors missing", lambda f: (f / "model.safetensors").unlink()))
    rows.append(load_files("model.safetensors is a folder", lambda f: ((f / "model.safetensors").unlink(),
                                                                       (f / "model.safetensors").mkdir())))
    rows.append(load_files("model.safetensors cut to half", lambda f: (f / "model.safetensors").write_bytes(
        (f / "model.safetensors").read_bytes()[: (f / "model.safetensors").stat().st_size // 2])))
    rows.append(load_files("README.md missing", lambda f: (f / "README.md").unlink(), expected="works"))

    def nan_weight(tensors: dict) -> None:
        tensors["actor.mu.weight"][0, 0] = float("nan")

    def nudge(tensors: dict) -> None:
        tensors["actor.mu.weight"][0, 0] += 1e-3

    def to_dtype(dtype: str) -> Callable[[dict], None]:
        import torch

        return lambda tensors: tensors.update({"actor.mu.bias": tensors["actor.mu.bias"].to(getattr(torch, dtype))})

    def extra(tensors: dict) -> None:
        tensors["actor.extra"] = tensors["actor.mu.bias"].clone()

    def drop(tensors: dict) -> None:
        tensors.pop("phi.net.0.bias")

    rows.append(load_broken("weights: a NaN in actor.mu.weight (sha256 updated)", edit_weights=nan_weight))
    rows.append(load_broken("weights: actor.mu.bias as int64 (sha256 updated)", edit_weights=to_dtype("int64")))
    rows.append(load_broken("weights: an extra tensor actor.extra (sha256 updated)", edit_weights=extra))
    rows.append(load_broken("weights: phi.net.0.bias missing (sha256 updated)", edit_weights=drop))
    rows.append(load_broken("weights changed, sha256 not updated", edit_weights=nudge, rehash=False))
    # Names and references.
    missing_path = base / "no_such_folder"
    for label, fn in [
        ("from_pretrained('antt') (unknown bundled name)", lambda: SkillPolicy.from_pretrained("antt")),
        ("from_pretrained('hf://../..')", lambda: SkillPolicy.from_pretrained("hf://../..")),
        ("from_pretrained('hf://org/name@')", lambda: SkillPolicy.from_pretrained("hf://org/name@")),
        ("from_pretrained('hf://org/name@v1', revision='v2')",
         lambda: SkillPolicy.from_pretrained("hf://org/name@v1", revision="v2")),
        ("from_pretrained(Path('<missing folder>'))", lambda: SkillPolicy.from_pretrained(missing_path)),
        ("from_pretrained('<missing folder>') (absolute path as a string)",
         lambda: SkillPolicy.from_pretrained(str(missing_path))),
        ("from_pretrained('') (empty string)", lambda: SkillPolicy.from_pretrained("")),
        ("from_pretrained('ant', revision='v9') (revision of a bundled name)",
         lambda: SkillPolicy.from_pretrained("ant", revision="v9")),
    ]:
        rows.append(call(g, label, fn))
    return rows


def hub_cases(run: Runner) -> list[Row]:
    g = "checkpoint"
    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(run.scratch / "hf_empty")}
    unreachable = {"HF_HUB_OFFLINE": None, "HF_ENDPOINT": "http://127.0.0.1:9",
                   "HF_HOME": str(run.scratch / "hf_empty")}
    cases = [
        ("HF_HUB_OFFLINE=1, empty cache: from_pretrained('hf://metra/ant-skills')",
         "SkillPolicy.from_pretrained('hf://metra/ant-skills')", offline),
        ("HF_HUB_OFFLINE=1, empty cache: from_pretrained('runs/my_ckpt') (a local folder that does not exist)",
         "SkillPolicy.from_pretrained('runs/my_ckpt')", offline),
        ("HF_ENDPOINT=http://127.0.0.1:9, empty cache: from_pretrained('metra/ant-skills')",
         "SkillPolicy.from_pretrained('metra/ant-skills')", unreachable),
        ("HF_ENDPOINT=http://127.0.0.1:9: gym.make('metra/AntSkills-v0', checkpoint='metra/ant-skills')",
         "gym.make('metra/AntSkills-v0', checkpoint='metra/ant-skills')", unreachable),
    ]
    return [run.python(g, label, expression, env=env) for label, expression, env in cases]


# --- run folders, full disks, worker processes (issues 25 and 26) -------------------------------------------------


def _edited_config(run: Runner, **values: Any) -> dict[str, str]:
    """``files=`` for a copy of the tiny run whose config.yaml was edited after it started."""
    import yaml

    saved = yaml.safe_load((run.fixtures / "tiny_run" / "config.yaml").read_text())
    return {"run/config.yaml": yaml.safe_dump({**saved, **values}, sort_keys=False)}


def run_folder_cases(run: Runner) -> list[Row]:
    """Edited run folders, the first-save dead end, leftovers of killed saves, resume without the buffer, config
    values that were silently accepted or failed in an allocator."""
    g = "cli/config"
    tiny = {"run": "tiny_run"}
    resume = ["train", "--no-progress", "--resume", "run"]
    rows = [
        run.cli(g, resume, fixtures=tiny, files=_edited_config(run, net_width=64, n_envs=4),
                label="metra-pretrain train --resume run (config.yaml edited since: net_width 64, n_envs 4)"),
        run.cli(g, resume, fixtures=tiny, files=_edited_config(run, skill_dim=3),
                label="metra-pretrain train --resume run (config.yaml edited since: skill_dim 3)"),
        run.cli(g, ["export", "run", "out"], fixtures=tiny, files=_edited_config(run, net_width=64),
                label="metra-pretrain export run out (config.yaml edited since: net_width 64)"),
    ]
    # A first save killed before it finished: run_state/ holds only its unfinished temporary folder.
    dead_end = {"run/config.yaml": (run.fixtures / "tiny_run" / "config.yaml").read_text(),
                "run/run_state/.tmp-killed/model.zip": "half a zip"}
    rows.append(run.cli(g, resume, files=dead_end,
                        label="metra-pretrain train --resume run (run_state/ holds only a killed first save's .tmp-*)"))
    rows.append(run.cli(g, ["train", "--no-progress", "--config", "run/config.yaml", "--run-dir", "run"],
                        files=dead_end, expected="works",
                        label="metra-pretrain train --config run/config.yaml --run-dir run (the same folder: the "
                              "command the error above names)"))
    rows.append(run.cli(g, [*resume, "--set", "epochs=2"], fixtures=tiny, expected="works",
                        label="metra-pretrain train --resume run --set epochs=2 (saved with save_replay_buffer=false: "
                              "resumes on an empty buffer, with a warning)"))
    rows.append(run.cli(g, [*resume, "--set", "epochs=2"], fixtures={**tiny, "run/run_state/previous": "tiny_run/"
                                                                     "run_state/latest"},
                        files={"run/run_state/.tmp-killed/model.zip": "half a zip"}, expected="works",
                        label="metra-pretrain train --resume run --set epochs=2 (run_state/previous and .tmp-* left "
                              "by killed saves)"))
    for sets in (["learning_rate=true"], ["backbone=crossq", "tau=0.01"], ["buffer_size=1000000000000"],
                 ["net_width=10000000"]):
        args = ["train", "--no-progress", "--config", "point_mass", "--run-dir", "run"]
        rows.append(run.cli(g, [*args, *[a for item in sets for a in ("--set", item)]],
                            label="metra-pretrain " + shlex.join(args[:1] + args[2:] + [a for item in sets
                                                                                       for a in ("--set", item)])))
    return rows


PAGE = 4096  # tmpfs counts whole pages


def _pages(folder: Path) -> int:
    return sum(-(-p.stat().st_size // PAGE) for p in folder.rglob("*") if p.is_file())


def full_disk_cases(run: Runner) -> list[Row]:
    """A real full disk: a tmpfs sized so that the write in question runs out of space (needs root on Linux; the
    cases are skipped, with a note, where it cannot be mounted)."""
    g = "cli/config"
    folder = run.folder()
    disk = folder / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        print(f"full-disk cases skipped: cannot mount a tmpfs ({first_line(mounted.stderr)})", flush=True)
        return []
    rows: list[Row] = []
    try:
        def resize(n_pages: int) -> None:
            subprocess.run(["mount", "-o", f"remount,size={n_pages * PAGE}", str(disk)], check=True)

        # Export: room for model.safetensors and config.json, not for README.md.
        probe = disk / "probe"
        done = subprocess.run([sys.executable, "-m", "pretrain", "export", str(run.fixtures / "tiny_run"), str(probe)],
                              env=child_env(), capture_output=True, text=True, timeout=run.timeout)
        if done.returncode != 0:
            raise SystemExit(f"full-disk probe export failed:\n{done.stderr}")
        pages = {p.name: _pages(p) if p.is_dir() else -(-p.stat().st_size // PAGE) for p in probe.iterdir()}
        shutil.rmtree(probe)
        resize(pages["model.safetensors"] + pages["config.json"])
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (pages["model.safetensors"] + pages["config.json"]) * PAGE)  # no room at all
        rows.append(run.command_in(folder, g, ["-m", "pretrain", "export", str(run.fixtures / "tiny_run"), "disk/out"],
                                   "error", "metra-pretrain export run disk/out (a full disk: the weights do not fit)"))
        filler.unlink()
        rows.append(run.command_in(folder, g, ["-m", "pretrain", "export", str(run.fixtures / "tiny_run"), "disk/out"],
                                   "error", "metra-pretrain export run disk/out (a disk with room for 2 of the 3 "
                                            "files: a real ENOSPC)"))
        # The first save of a new run: room for what the run writes before it (config, evaluation, TensorBoard),
        # not for its model.zip.
        tiny = run.fixtures / "tiny_run"
        model_pages = -(-(tiny / "run_state" / "latest" / "model.zip").stat().st_size // PAGE)
        resize(_pages(tiny) - model_pages + 1)
        args = ["-m", "pretrain", "train", "--no-progress", "--config", "point_mass", "--run-dir", "disk/run",
                *[a for s in TINY for a in ("--set", s)]]
        label = "metra-pretrain train --config point_mass --run-dir disk/run + tiny settings"
        rows.append(run.command_in(folder, g, args, "error", f"{label} (the disk fills up in the first save)"))
        resize(64 * 2**20 // PAGE)
        rows.append(run.command_in(folder, g, args, "works", f"{label}, again after space was freed"))
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    return rows


MAKE_VEC_ENV = ("import numpy as np, metra_gym\n"
                "from stable_baselines3.common.env_util import make_vec_env\n"
                "from stable_baselines3.common.vec_env import SubprocVecEnv\n"
                "venv = make_vec_env({env_id!r}, n_envs=2, vec_env_cls=SubprocVecEnv, env_kwargs={{'skill_steps': 2}}"
                "{start})\n"
                "venv.reset()\n"
                "print('step ok:', venv.step(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))[0].shape)\n"
                "venv.close()\n")


def worker_cases(run: Runner) -> list[Row]:
    """SB3's SubprocVecEnv with the skill ids, from ``python -c`` (no script a forkserver could import)."""
    g = "skill env"
    rows = []
    for env_id, method, expected in (("metra/AntSkills-v0", None, "works"),
                                     ("metra_gym:metra/AntSkills-v0", "spawn", "works"),
                                     ("metra/AntSkills-v0", "spawn", "error")):
        start = f", vec_env_kwargs={{'start_method': {method!r}}}" if method else ""
        code = MAKE_VEC_ENV.format(env_id=env_id, start=start)
        rows.append(run.python_code(g, f"python -c: make_vec_env({env_id!r}, vec_env_cls=SubprocVecEnv{start})", code,
                                    expected=expected))
    return rows


def reliability_calls(scratch: Path) -> list[Row]:
    """Calls that ended in raw tracebacks or were accepted silently (issue 25): skill env, policy, checkpoint."""
    from metra_gym.skill_env import SkillEnv
    from metra_gym.skill_policy import SkillPolicy

    rows = [call("skill env", "SkillEnv(env=None)", lambda: SkillEnv(env=None)),
            call("skill env", "gym.make_vec('metra/AntSkills-v0', num_envs=0)",
                 lambda: gym.make_vec("metra/AntSkills-v0", num_envs=0))]
    try:
        import dm_control  # noqa: F401

        def nan_step() -> Any:
            env = gym.make("metra/Quadruped-v0", obs_type="state")
            env.reset(seed=0)
            return env.step(np.full(12, np.nan, dtype=np.float32))

        rows.append(call("skill env", "gym.make('metra/Quadruped-v0', obs_type='state').step([nan] * 12)", nan_step))
    except ImportError:
        print("DMC case skipped: dm_control is not installed", flush=True)
    base = scratch / "reliability"
    base.mkdir()
    count = iter(range(1000))

    def load(label: str, edit: Callable[[dict], None], then: Callable[[Any], Any] = lambda policy: policy,
             group: str = "checkpoint") -> Row:
        folder = broken_checkpoint(base / f"c{next(count):03d}", edit_config=edit)
        return call(group, label, lambda: then(SkillPolicy.from_pretrained(folder)))

    rows.append(load("config.json format_version 2 without weights_sha256",
                     lambda config: config.pop("weights_sha256")))
    for key, value, shown in (("obs_dim", 10**9, "10**9"), ("actor_hidden", [10**9, 256], "[10**9, 256]"),
                              ("phi_hidden", [256, 10**9], "[256, 10**9]")):
        rows.append(load(f"config.json {key} = {shown} (weights unchanged)", set_key(key, value)))
    rows.append(load("SkillPolicy.from_pretrained(<ant checkpoint naming metra/HalfCheetah-v0>).make_env()",
                     set_key("env_id", "metra/HalfCheetah-v0"), lambda policy: policy.make_env(), "SkillPolicy"))
    rows.append(load("SkillPolicy.from_pretrained(<ant checkpoint naming CartPole-v1>).make_env(allowed_env_ids="
                     "['CartPole-v1'])", set_key("env_id", "CartPole-v1"),
                     lambda policy: policy.make_env(allowed_env_ids=["CartPole-v1"]), "SkillPolicy"))
    return rows


def pickle_cases(scratch: Path) -> list[Row]:
    from metra_gym.skill_env import SkillEnv
    from metra_gym.skill_policy import SkillPolicy

    g = "pickle"
    ant = gym.make("metra/AntSkills-v0", skill_steps=2)
    ant.reset(seed=0)
    ant.step([1.0, 0.0])
    cheetah = gym.make("metra/HalfCheetahSkills-v0", skill_steps=2)
    policy = SkillPolicy.from_pretrained("ant")
    detached = SkillPolicy(policy.config, {f"{p}{k}": v for p, m in policy._modules() for k, v in
                                           m.state_dict().items()}, source="in memory")

    def round_trip_and_step(env: gym.Env, action: Any) -> Any:
        copy_ = pickle.loads(pickle.dumps(env))
        copy_.reset(seed=0)
        return copy_.step(action)

    def local_env(name: str) -> tuple[gym.Env, Path]:
        folder = shutil.copytree(ant_folder(), scratch / name)
        return gym.make("metra/AntSkills-v0", checkpoint=str(folder), skill_steps=1), folder

    def pickled_then_deleted() -> Any:
        env, folder = local_env("pickled_then_deleted")
        data = pickle.dumps(env)
        shutil.rmtree(folder)
        return pickle.loads(data)

    def pickled_then_tampered() -> Any:
        env, folder = local_env("pickled_then_tampered")
        data = pickle.dumps(env)
        weights = folder / "model.safetensors"
        raw = bytearray(weights.read_bytes())
        raw[-1] ^= 1
        weights.write_bytes(bytes(raw))
        return pickle.loads(data)

    def deep_copy_and_step() -> Any:
        twin = copy.deepcopy(ant)
        twin.reset(seed=0)
        return twin.step([1.0, 0.0])

    def instance_env() -> Any:
        inner = gym.make("metra/Ant-v0", max_episode_steps=-1)
        return round_trip_and_step(SkillEnv(inner, checkpoint="ant", skill_steps=1), [0.0, 1.0])

    return [
        call(g, "pickle round trip of AntSkills (after a step), then reset + step",
             lambda: round_trip_and_step(ant, [0.0, 1.0]), expected="works"),
        call(g, "copy.deepcopy(AntSkills), then reset + step",
             deep_copy_and_step, expected="works"),
        call(g, "pickle round trip of HalfCheetahSkills, then reset + step(3)",
             lambda: round_trip_and_step(cheetah, 3), expected="works"),
        call(g, "pickle round trip of SkillEnv(<gym.Env instance>, 'ant')", instance_env, expected="works"),
        call(g, "pickle round trip of SkillPolicy.from_pretrained('ant')",
             lambda: pickle.loads(pickle.dumps(policy)).act(np.zeros(29), [1.0, 0.0]), expected="works"),
        call(g, "copy.deepcopy(SkillPolicy) built from config + weights (no reference)",
             lambda: copy.deepcopy(detached).act(np.zeros(29), [1.0, 0.0]), expected="works"),
        call(g, "unpickle an AntSkills env whose local checkpoint folder was deleted", pickled_then_deleted),
        call(g, "unpickle an AntSkills env whose local checkpoint weights changed", pickled_then_tampered),
    ]


# --- issue 45: sweeps and interrupts, run folders, the Python API, environments and checkpoints -------------------


def _tiny_sets(*extra: str, threads: bool = False) -> list[str]:
    """``--set`` arguments of the tiny settings (a sweep sets torch_threads itself)."""
    return [a for s in [*TINY, *extra] if threads or not s.startswith("torch_threads=") for a in ("--set", s)]


def _edited_state(run: Runner, edit: Callable[[dict], None], fixture: str = "tiny_run") -> dict[str, str]:
    """``files=`` for a copy of a tiny run whose run_state/latest/state.json was edited after it was saved."""
    state = json.loads((run.fixtures / fixture / "run_state" / "latest" / "state.json").read_text())
    edit(state)
    return {"run/run_state/latest/state.json": json.dumps(state)}


def issue45_cli_cases(run: Runner) -> list[Row]:
    """Issue 45's commands: sweeps stopped by signals and checked before Ray, Ctrl-C while a command starts, an
    unknown MUJOCO_GL, hand-edited run folders (config.yaml, state.json), empty and odd config values."""
    g = "cli/config"
    base = ["sweep", "--config", "point_mass", "--run-root", "sweep", "--seeds", "0"]
    rows = [
        run.cli(g, [*base, "--set", "device=cuda"],
                label="metra-pretrain sweep --config point_mass --run-root sweep --seeds 0 --set device=cuda (a machine "
                      "without CUDA: refused before Ray starts)"),
        run.cli(g, [*base, "--grid", "env_id=metra/PointMass-v0,metra/Nope-v0", *_tiny_sets()],
                label="metra-pretrain sweep ... --grid env_id=metra/PointMass-v0,metra/Nope-v0 + tiny settings"),
        run.cli(g, ["sweep", "--config", "point_mass_pixels", "--run-root", "sweep", "--seeds", "0", "--grid",
                    "encoder_channels=[4,4],[8,8]", *_tiny_sets("buffer_size=1000")], expected="works",
                label="metra-pretrain sweep --config point_mass_pixels ... --grid encoder_channels=[4,4],[8,8] (list "
                      "values) + tiny settings"),
        run.cli(g, [*base, "--grid", "encoder_channels=[8,8"],
                label="metra-pretrain sweep ... --grid encoder_channels=[8,8 (an unclosed list)"),
    ]
    long_sweep = [*base, *_tiny_sets("epochs=100000", "save_every=1")]
    for sig in (signal.SIGTERM, signal.SIGINT):
        rows.append(run.signal_case(g, long_sweep, sig, must_say="metra-pretrain sweep --run-root",
                                    wait_for="sweep/seed=0/run_state/latest",
                                    label=f"{sig.name} to metra-pretrain sweep --config point_mass --seeds 0 (once its "
                                          "trial has saved; tiny settings, epochs=100000)"))
    train_ant = ["train", "--no-progress", "--config", "ant", "--run-dir", "run", "--set", "epochs=1"]
    for delay in (0.2, 0.5, 1.5, 3.0):
        rows.append(run.signal_case(g, train_ant, signal.SIGINT, must_say="interrupted", after_s=delay,
                                    misleading_if="run state is kept",  # a new run saves nothing in its first seconds
                                    label=f"SIGINT {delay:g} s after metra-pretrain train --config ant --run-dir run "
                                          "starts (while it imports)"))
    for config in ("ant", "quadruped"):
        rows.append(run.cli(g, ["train", "--no-progress", "--config", config, "--run-dir", "run"],
                            env={"MUJOCO_GL": "banana"},
                            label=f"MUJOCO_GL=banana metra-pretrain train --config {config} --run-dir run"))
    # Run folders edited by hand (another helper's part of issue 45).
    tiny = {"run": "tiny_run"}
    resume = ["train", "--no-progress", "--resume", "run"]
    for key, value in (("epochs", 3), ("eval_every", 7), ("learning_rate", 0.5)):
        rows.append(run.cli(g, resume, fixtures=tiny, files=_edited_config(run, **{key: value}),
                            label=f"metra-pretrain train --resume run (config.yaml edited since: {key} {value})"))
        rows.append(run.cli(g, ["export", "run", "out"], fixtures=tiny, files=_edited_config(run, **{key: value}),
                            label=f"metra-pretrain export run out (config.yaml edited since: {key} {value})"))
    for label, edit in (("epoch 999", lambda state: state.update(epoch=999)),
                        ("epoch 5 (the run is at epoch 1)", lambda state: state.update(epoch=5)),
                        ('epoch "40" (a string)', lambda state: state.update(epoch="40")),
                        ("env_rngs missing", lambda state: state.pop("env_rngs")),
                        ("torch_rng garbled", lambda state: state.update(torch_rng="garbled"))):
        rows.append(run.cli(g, [*resume, "--set", "epochs=2"], fixtures=tiny, files=_edited_state(run, edit),
                            label=f"metra-pretrain train --resume run --set epochs=2 (state.json edited: {label})"))
    rows.append(run.cli(g, [*resume, "--set", "epochs=1"], fixtures={"run": "tiny_run2"},
                        label="metra-pretrain train --resume run --set epochs=1 (a run at epoch 2)"))
    rows.append(run.cli(g, ["train", "--no-progress", "--config", "point_mass", "--run-dir", "run", "--set", "env_id="]))
    rows.append(run.cli(g, ["train", "--no-progress", "--config", "/dev/null", "--run-dir", "run"],
                        label="metra-pretrain train --config /dev/null --run-dir run", misleading_if="does not exist"))
    return rows


def python_api_cases(scratch: Path) -> list[Row]:
    """``METRA("MlpPolicy", env, ...)`` and ``load`` refusing what ``metra-pretrain train`` refuses (another helper's
    part of issue 45)."""
    from stable_baselines3 import SAC

    from pretrain import LSD, METRA

    g = "python API"
    env = gym.make("metra/PointMass-v0")
    small = {"policy_kwargs": {"net_arch": [16]}}
    sac_zip, metra_zip = scratch / "sac.zip", scratch / "metra.zip"
    SAC("MlpPolicy", "Pendulum-v1", **small).save(sac_zip)
    METRA("MlpPolicy", env, **small).save(metra_zip)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ('METRA("MlpPolicy", env, dual_slack=-1)', lambda: METRA("MlpPolicy", env, dual_slack=-1, **small)),
        ('METRA("MlpPolicy", env, discrete_skills="no")', lambda: METRA("MlpPolicy", env, discrete_skills="no",
                                                                         **small)),
        ('METRA("MlpPolicy", env, policy_kwargs={"net_arch": [0]})',
         lambda: METRA("MlpPolicy", env, policy_kwargs={"net_arch": [0]})),
        ('METRA("MlpPolicy", env, batch_size=0, learning_starts=50).learn(150)',
         lambda: METRA("MlpPolicy", env, batch_size=0, learning_starts=50, **small).learn(150)),
        ('METRA("MlpPolicy", env, buffer_size=10**12)', lambda: METRA("MlpPolicy", env, buffer_size=10**12, **small)),
        ('METRA("MlpPolicy", 42)', lambda: METRA("MlpPolicy", 42)),
        ('METRA("MlpPolicy", None)', lambda: METRA("MlpPolicy", None)),
        ("METRA.load(<a plain SB3 SAC zip>)", lambda: METRA.load(sac_zip)),
        ("LSD.load(<a METRA zip>)", lambda: LSD.load(metra_zip)),
        ('METRA.on_backbone("crossq").load(<a METRA zip on the SAC backbone>)',
         lambda: METRA.on_backbone("crossq").load(metra_zip)),
    ]
    rows = [call(g, label, fn) for label, fn in cases]
    env.close()
    return rows


def _optional(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def issue45_env_cases(run: Runner) -> list[Row]:
    """Reset options that are not a mapping, render() without render_mode, a NaN action of the Kitchen, and the EGL
    tracebacks a process printed at exit when its rendering envs were left to the garbage collector."""
    g = "skill env"
    makes: list[tuple[str, dict[str, Any]]] = [("metra/Ant-v0", {}), ("metra/AntSkills-v0", {}),
                                               ("metra/PointMass-v0", {})]
    if _optional("dm_control"):
        makes.append(("metra/Quadruped-v0", {"obs_type": "state"}))
    if _optional("gymnasium_robotics"):
        makes.append(("metra/Kitchen-v0", {"obs_type": "state"}))
    rows: list[Row] = []
    for env_id, kwargs in makes:
        shown = "".join(f", {k}={v!r}" for k, v in kwargs.items())

        def reset_with(env_id: str = env_id, kwargs: dict[str, Any] = kwargs) -> Any:
            env = gym.make(env_id, **kwargs)
            try:
                return env.reset(options="x")
            finally:
                env.close()

        def render_without_mode(env_id: str = env_id, kwargs: dict[str, Any] = kwargs) -> Any:
            env = gym.make(env_id, **kwargs)
            try:
                env.reset(seed=0)
                return env.render()
            finally:
                env.close()

        rows.append(call(g, f"gym.make({env_id!r}{shown}).reset(options='x')", reset_with))
        rows.append(call(g, f"gym.make({env_id!r}{shown}).render() (made without render_mode)", render_without_mode))
    if _optional("gymnasium_robotics"):
        def kitchen_nan() -> Any:
            env = gym.make("metra/Kitchen-v0", obs_type="state")
            try:
                env.reset(seed=0)
                return env.step(np.full(env.action_space.shape, np.nan, dtype=np.float32))
            finally:
                env.close()

        rows.append(call(g, "gym.make('metra/Kitchen-v0', obs_type='state').step([nan] * 7)", kitchen_nan))
    exits = [("an Ant rendered", "gym.make('metra/Ant-v0', render_mode='rgb_array')")]
    if _optional("dm_control"):
        exits.append(("a pixel Quadruped and an Ant rendered", "gym.make('metra/Quadruped-v0', frame_size=16), "
                                                               "gym.make('metra/Ant-v0', render_mode='rgb_array')"))
    if _optional("gymnasium_robotics"):
        exits.append(("a pixel Kitchen", "gym.make('metra/Kitchen-v0', frame_size=16)"))
    for what, made in exits:
        code = (f"import gymnasium as gym, metra_gym\nenvs = [{made}]\nfor env in envs:\n    env.reset(seed=0)\n"
                "    if env.render_mode: env.render()\nprint('rendered, not closed')\n")
        rows.append(run.python_code(g, f"python -c: exit after {what}, the envs not closed (no EGLError at exit)", code,
                                    expected="works"))
    return rows


def issue45_checkpoint_cases(scratch: Path) -> list[Row]:
    """config.json edited after export (config_sha256), a key of a later format version in an older file, and a
    config.json nested too deeply to parse."""
    from metra_gym.skill_policy import SkillPolicy

    g = "checkpoint"
    base = scratch / "issue45_checkpoints"
    base.mkdir()
    count = iter(range(1000))

    def load(label: str, edit: Callable[[dict], None], rehash: bool = False) -> Row:
        folder = broken_checkpoint(base / f"c{next(count):03d}", edit_config=edit, rehash=rehash)
        return call(g, label, lambda: SkillPolicy.from_pretrained(folder))

    def relu(config: dict) -> None:
        config.update(actor_activation="relu", format_version=3)

    def relu_in_an_older_file(config: dict) -> None:
        config.pop("config_sha256", None)
        config["actor_activation"] = "relu"

    rows = [
        load("config.json actor_activation = 'relu' on tanh weights (format_version 3, config_sha256 not updated)",
             relu),
        load("config.json env_kwargs = {reset_noise_scale: 0.5} (config_sha256 not updated)",
             set_key("env_kwargs", {"reset_noise_scale": 0.5})),
        load("config.json without config_sha256 (written before it existed), actor_activation = 'relu' in format 2",
             relu_in_an_older_file),
    ]
    folder = broken_checkpoint(base / f"c{next(count):03d}")
    text = (folder / "config.json").read_text()
    (folder / "config.json").write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    rows.append(call(g, "config.json with a value nested 100,000 deep", lambda: SkillPolicy.from_pretrained(folder)))
    return rows


# --- results ----------------------------------------------------------------------------------------------------


def counts(rows: list[Row]) -> dict[str, Any]:
    by_group: dict[str, dict[str, int]] = {}
    for row in rows:
        by_group.setdefault(row.group, {}).setdefault(row.outcome, 0)
        by_group[row.group][row.outcome] += 1
    surprises = [row for row in rows if (row.expected == "works") != (row.outcome == "works")]
    works = [row for row in rows if row.outcome == "works"]
    return {"total": len(rows), **Counter(row.outcome for row in rows), "by_group": by_group,
            "not_as_expected": len(surprises),
            # "works" split: a legal input, or a bad input silently accepted.
            "legal": sum(row.expected == "works" for row in works), "silent": sum(row.expected != "works" for row in works)}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """A markdown code span that survives backticks inside ``text``."""
    return f"`` {_cell(text)} ``" if "`" in text else f"`{_cell(text)}`"


def write_table(rows: list[Row], summary: dict[str, Any], path: Path) -> None:
    lines = ["# Bad inputs and what the user gets", "",
             f"Generated by `benchmarks/bad_input.py` on {summary['date']} ({summary['machine']}). "
             f"{summary['counts']['total']} cases: " + ", ".join(
                 f"{summary['counts'].get(k, 0)} {k}" for k in ("clear error", "works", "MISLEADING", "TRACEBACK",
                                                                "TIMEOUT"))
             + f" (works: {summary['counts'].get('legal', 0)} legal inputs, {summary['counts'].get('silent', 0)} bad "
               "inputs silently accepted).",
             "", "Outcomes: **clear error** (the library's own error: exit code or exception type, then the first "
             "line of the message), **works** (no error), **MISLEADING** (one clear line that says what is not so), "
             "**TRACEBACK** (a raw Python traceback or a library's exception; for a signal, any end other than the "
             "command's own stop message and exit code 128 + the signal), **TIMEOUT**. A ⚠ marks an answer other than expected (an error where the input is legal, "
             "or a bad input silently accepted). *Files left* is what a command wrote or changed in its folder.", "",
             "| group | input | what the user gets | files left |", "|---|---|---|---|"]
    for row in rows:
        mark = " ⚠" if (row.expected == "works") != (row.outcome == "works") else ""
        got = f"**{row.outcome}**{mark}: {_code(row.detail)}" if row.detail else f"**{row.outcome}**{mark}"
        lines.append(f"| {row.group} | {_code(row.input)} | {got} | {_cell(row.files_left)} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per command case")
    parser.add_argument("--only", choices=["cli", "env", "policy", "checkpoint", "pickle", "reliability", "issue45"],
                        action="append", help="run only these groups (repeatable); reliability: the calls and "
                                              "worker cases of issues 25 and 26 (their commands are in cli); "
                                              "issue45: every case of issue 45")
    parser.add_argument("--scratch", type=Path, help="folder for the cases (default: a new temporary folder)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder of the cases")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    groups = set(args.only or ["cli", "env", "policy", "checkpoint", "pickle", "reliability", "issue45"])
    scratch = Path(tempfile.mkdtemp(prefix="bad_input_", dir=args.scratch))
    SCRATCH.extend([str(scratch.resolve()), str(scratch)])
    fixtures = scratch / "fixtures"
    start = time.perf_counter()
    make_fixtures(fixtures, args.timeout)
    runner = Runner(scratch, fixtures, args.timeout)
    rows: list[Row] = []
    steps: list[tuple[str, Callable[[], list[Row]]]] = [
        ("env", lambda: skill_env_cases(scratch, fixtures)), ("policy", lambda: policy_cases(scratch, fixtures)),
        ("checkpoint", lambda: checkpoint_cases(scratch) + hub_cases(runner)), ("pickle", lambda: pickle_cases(scratch)),
        ("cli", lambda: cli_cases(runner)),
        # Issues 25 and 26: run folders, full disks, worker processes, and calls that were raw or silent.
        ("reliability", lambda: reliability_calls(scratch) + worker_cases(runner)),
        ("cli", lambda: run_folder_cases(runner) + full_disk_cases(runner)),
        # Issue 45: sweeps and interrupts, run folders, the Python API, environments and checkpoints.
        ("issue45", lambda: (python_api_cases(scratch) + issue45_env_cases(runner) + issue45_checkpoint_cases(scratch)
                             + issue45_cli_cases(runner))),
    ]
    for name, run_group in steps:
        if name in groups:
            group_start = time.perf_counter()
            new = run_group()
            rows += new
            print(f"{name}: {len(new)} cases in {time.perf_counter() - group_start:.0f} s "
                  f"({dict(Counter(r.outcome for r in new))})", flush=True)
    rows.sort(key=lambda row: GROUPS.index(row.group))  # stable: each group keeps its order
    summary = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "machine": f"{platform.node() or 'unknown'}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
               "seconds": round(time.perf_counter() - start, 1), "counts": counts(rows),
               "rows": [asdict(row) for row in rows]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_table(rows, summary, args.out / "table.md")
    for row in rows:
        if row.outcome in ("TRACEBACK", "TIMEOUT", "MISLEADING") or (row.expected == "works") != (row.outcome == "works"):
            print(f"[{row.outcome}] {row.group}: {row.input}\n    {row.detail}")
    print(json.dumps(summary["counts"]))
    print(f"wrote {args.out / 'summary.json'} and {args.out / 'table.md'}")
    if args.keep:
        print(f"cases kept in {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
