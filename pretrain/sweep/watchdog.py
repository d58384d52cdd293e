"""Nothing of a sweep's Ray outlives the sweep: a watchdog process that ends what Ray started once the sweep's
process is gone, however it ended (SIGKILL included).

Ray ties its head processes (GCS server, raylet, monitors) to the driver with ``PR_SET_PDEATHSIG``, but the
raylet's own children (the dashboard and runtime-env agents) are left behind when the driver is
killed. The watchdog is started before Ray, in its own session (a Ctrl-C in the terminal does not reach it), with
the read end of a pipe as its stdin; only the sweep holds the write end, so end-of-file on stdin means the sweep
has exited or closed it. Until then it records every process that descends from the sweep and started after the
watchdog (what Ray starts), with its start time; then it ends those still running (SIGTERM, then SIGKILL) and
removes the given folders (Ray Tune's scratch storage).

Linux only (``/proc``); elsewhere :class:`Watchdog` does nothing. Run as a script, not imported by the child, so
that it starts in milliseconds: ``python watchdog.py PARENT_PID [FOLDER ...]``.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.25  # how often the process tree is recorded: a process younger than this when the sweep dies is missed
GRACE_S = 3.0  # between SIGTERM and SIGKILL
STARTUP_S = 10.0  # the longest the sweep waits for the watchdog to start (a Python start-up on a busy machine)


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time in clock ticks, state letter) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return int(fields[1]), int(fields[19]), fields[0]


def process_tree() -> dict[int, tuple[int, int]]:
    """Every process: pid -> (parent pid, start time)."""
    tree = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := _stat(int(entry))) is not None:
            tree[int(entry)] = info[:2]
    return tree


def descendants(pid: int, tree: dict[int, tuple[int, int]] | None = None) -> dict[int, int]:
    """The processes below ``pid``: pid -> start time."""
    tree = process_tree() if tree is None else tree
    children: dict[int, list[int]] = {}
    for child, (parent, _) in tree.items():
        children.setdefault(parent, []).append(child)
    found, todo = {}, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found[child] = tree[child][1]
        todo.extend(children.get(child, []))
    return found


def alive(processes: dict[int, int]) -> list[int]:
    """The pids among ``processes`` still running as the same process (same start time, not a zombie)."""
    running = []
    for pid, start in processes.items():
        info = _stat(pid)
        if info is not None and info[1] == start and info[2] != "Z":
            running.append(pid)
    return running


def end(processes: dict[int, int]) -> None:
    """SIGTERM the processes still running, SIGKILL what is left after :data:`GRACE_S`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive(processes):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE_S
        while sig == signal.SIGTERM and alive(processes) and time.monotonic() < deadline:
            time.sleep(0.05)


def watch(parent: int, folders: list[str]) -> None:
    """Record the sweep's new descendants until stdin ends; then end them and remove ``folders``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    me = os.getpid()
    before = set(descendants(parent)) | {me}  # what the sweep ran before Ray is not Ray's
    seen: dict[int, int] = {}
    try:
        print("recording", flush=True)
        sys.stdout.close()
    except OSError:  # the sweep stopped waiting for this line
        pass
    while True:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], POLL_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # end of file: the sweep exited or is done with Ray
        tree = process_tree()
        if parent not in tree:
            break
        seen.update({pid: start for pid, start in descendants(parent, tree).items() if pid not in before})
    end(seen)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


class Watchdog:
    """Start the watchdog (before Ray); :meth:`close` (after ``ray.shutdown()``) lets it end what is left.

    :param folders: folders to remove when the sweep is gone.
    """

    def __init__(self, folders: list[str | Path] | None = None) -> None:
        self.process: subprocess.Popen | None = None
        self._write = -1
        if not Path("/proc/self/stat").is_file():
            return
        read, self._write = os.pipe()  # not inheritable: Ray's processes do not hold the write end
        try:
            self.process = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), str(os.getpid()), *map(str, folders or [])],
                stdin=read, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(read)
        # Ray may start only once the watchdog knows which processes are not Ray's: it says so on its stdout.
        ready, _, _ = select.select([self.process.stdout], [], [], STARTUP_S)
        if ready:
            self.process.stdout.readline()
        self.process.stdout.close()

    def close(self, timeout: float = 15.0) -> None:
        """Let the watchdog end what is left of Ray and wait for it."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
        if self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2:])
