"""Planned trials run through Ray Tune, on this machine or a Ray cluster, one ordinary run folder each.

What Ray would otherwise leave to the user is decided here, before and after Ray runs:

- a cluster that cannot be reached, or trials that need more CPUs than this machine (or the cluster's largest node)
  has, end at once in one clear error instead of a wait that never ends;
- a failed trial is reported (one line, its traceback in ``RUN_DIR/sweep_error.txt``) while the others go on;
- SIGINT (Ctrl-C) or SIGTERM stops the sweep with :class:`SweepInterrupted`; every unfinished trial keeps its last
  saved run state, and running the same command again resumes it (Ray Tune's own handler, which ends ``fit()``
  normally and suggests ``Tuner.restore``, is switched off);
- a :class:`~pretrain.sweep.watchdog.Watchdog` ends Ray's processes whenever the sweep's process is gone, even
  after SIGKILL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pretrain.config import ConfigError
from pretrain.run.signals import exit_status
from pretrain.sweep.trials import FINISHED, RESUME, PlannedTrial
from pretrain.sweep.watchdog import Watchdog

ERROR_FILE = "sweep_error.txt"  # in a failed trial's run folder: the traceback (removed when the trial succeeds)
CONNECT_TIMEOUT_S = 5.0


class SweepInterrupted(Exception):
    """The sweep was stopped by a signal; unfinished trials keep their last saved run state.

    :param signal_name: ``SIGINT`` or ``SIGTERM``.
    """

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_status = exit_status(signal_name)


@dataclass
class TrialOutcome:
    """How a trial ended in this sweep: ``finished``, ``already finished`` (not run again) or ``failed``."""

    name: str
    outcome: str
    epoch: int | None = None
    policy_coverage: int | None = None
    error: str | None = None


def available_cpus() -> int:
    """CPUs this process may use (its affinity mask, e.g. a container's limit), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _check_reachable(address: str) -> None:
    """One clear error for a cluster address nobody answers at, before Ray retries it for minutes."""
    resolved = address
    if address == "auto":  # the address of the last `ray start` on this machine, as Ray finds it
        try:
            from ray._private.services import canonicalize_bootstrap_address

            resolved = canonicalize_bootstrap_address(address) or address
        except ConnectionError:
            raise ConfigError(f"no Ray cluster found for --address {address}; start one with `ray start --head`, "
                              "or leave out --address to run on this machine") from None
        except (ImportError, AttributeError, ValueError):  # another Ray version: Ray resolves it itself
            return
    host, _, port = resolved.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--address must be HOST:PORT of a Ray cluster's head, or 'auto'; got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ConfigError(f"cannot reach a Ray cluster at --address {address} ({error.strerror or error}); start it "
                          "with `ray start --head`, check the address, or leave out --address to run on this "
                          "machine") from None


def preflight(cpus_per_run: int, address: str | None, max_concurrent: int | None = None) -> None:
    """What can be checked before Ray starts: a whole number of CPUs per run that this machine has, a whole number
    of runs at once, or a cluster address that answers."""
    if isinstance(cpus_per_run, bool) or not isinstance(cpus_per_run, int) or cpus_per_run < 1:
        raise ConfigError(f"--cpus-per-run (the CPUs of each run) must be an integer >= 1, "
                          f"got {cpus_per_run!r}")
    if max_concurrent is not None and (isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int)
                                       or max_concurrent < 1):
        raise ConfigError(f"--max-concurrent (the most runs of this sweep at once) must be an integer >= 1, "
                          f"got {max_concurrent!r}; leave it out to run as many as the CPUs allow")
    if address is None:
        cpus = available_cpus()
        if cpus_per_run > cpus:
            raise ConfigError(f"--cpus-per-run {cpus_per_run} is more than the {cpus} CPU(s) of this machine, so no "
                              f"run could start; use --cpus-per-run {cpus} or less, or join a bigger Ray cluster with "
                              "--address")
    else:
        _check_reachable(address)


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Keep the caller's SIGINT and SIGTERM handlers (the sweep's, :class:`_StopOnSignal`) through ``ray.init``,
    which replaces SIGTERM's twice: with a Python handler that exits 1 (on a new head node after ending Ray's
    processes), kept out here for the seconds Ray takes to start, and at its end with the C++ core worker's
    failure-signal handler, which prints a ``*** SIGTERM received`` dump and exits 1; the caller's handlers are
    installed again afterwards, so a SIGTERM stops the sweep with its exit code and resume command."""
    main_thread = threading.current_thread() is threading.main_thread()  # signals can be handled there only
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    utils: Any = None
    try:
        from ray._private import utils
    except ImportError:  # another Ray layout: its Python handler is replaced afterwards like the C++ one
        pass
    original = getattr(utils, "set_sigterm_handler", None)
    if original is not None:
        utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if original is not None:
            utils.set_sigterm_handler = original
        for sig, handler in handlers.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be set back
                signal.signal(sig, handler)


# Ray's node raises a plain Exception with this text when its raylet has not registered within a wait of 30 s that
# Ray fixes in code (ray/_private/node.py): a machine busy with training runs, or a sweep under `nice`, can miss it.
RAY_START_TIMEOUT = "timed out during startup"
RAY_START_ATTEMPTS = 3


ADDRESS_HELP = ("a Ray cluster to join: 'auto' (the last `ray start --head` on this machine) or HOST:PORT; the "
                "cluster and this command must agree on Ray's token authentication (RAY_AUTH_MODE, "
                "~/.ray/auth_token) (default: Ray on this machine)")
MAX_CONCURRENT_HELP = ("the most runs of this sweep at once (default: as many as the CPUs allow); a sweep's share of a "
                       "cluster that other sweeps join too, which Ray otherwise gives to whichever sweep has a run "
                       "pending")


def runs_at_once(pending: int, cpus: int, cpus_per_run: int, max_concurrent: int | None) -> int:
    """How many of ``pending`` runs go at once on ``cpus`` CPUs: as many as fit, at most ``max_concurrent``.

    ``max_concurrent`` is how several sweeps share one cluster in an order: Ray gives a freed CPU to whichever sweep
    has a run pending, so a sweep that is to keep one CPU of two, and leave the other to another sweep, runs with
    ``max_concurrent=1`` (Ray Tune's ``TuneConfig.max_concurrent_trials``).
    """
    fit = max(1, min(pending, cpus // cpus_per_run))
    return fit if max_concurrent is None else min(fit, max_concurrent)


def start_ray(address: str | None, cpus_per_run: int) -> int:
    """Start Ray on this machine (or join the cluster at ``address``) after checking that a trial can ever start;
    return the CPUs Ray has for trials."""
    preflight(cpus_per_run, address)
    import ray

    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        try:
            with _signal_handlers_kept():
                if address is None:  # "local": a new Ray here, whatever RAY_ADDRESS says
                    ray.init(address="local", num_cpus=available_cpus(), **kwargs)
                else:
                    ray.init(address=address, **kwargs)
            break
        except ConnectionError as error:
            raise ConfigError(f"cannot join the Ray cluster at --address {address}: "
                              f"{str(error).splitlines()[0]}") from None
        except Exception as error:  # Ray raises a bare Exception when its node does not come up in time
            if RAY_START_TIMEOUT not in str(error):
                raise
            ray.shutdown()  # what did start of this node goes before the next attempt
            if attempt == RAY_START_ATTEMPTS:
                load = os.getloadavg()[0]
                raise ConfigError(f"Ray's node did not start within Ray's fixed start-up wait (30 s), {attempt} times: "
                                  f"this machine is busy (load average {load:.1f} on {os.cpu_count()} CPUs), or the "
                                  "sweep runs at a low priority (nice); nothing of the sweep ran. Run the same command "
                                  "again when the machine is less busy, or at a higher priority") from None
    if address is not None:
        largest = max((node["Resources"].get("CPU", 0) for node in ray.nodes() if node.get("Alive")), default=0)
        if cpus_per_run > largest:
            ray.shutdown()
            raise ConfigError(f"--cpus-per-run {cpus_per_run} is more than the largest node of the cluster at "
                              f"{address} has ({largest:g} CPUs), so no run could start; use --cpus-per-run "
                              f"{int(largest)} or less")
        _check_cluster_starts_actors(address)
        return int(ray.cluster_resources().get("CPU", cpus_per_run))
    return available_cpus()


PROBE_S = 60.0  # the longest the sweep waits for its probe actor on a joined cluster (a worker start on a busy node)


def _check_cluster_starts_actors(address: str) -> None:
    """One clear error, before any trial, when the joined cluster cannot start this process's actors.

    Ray (2.60 here) has token authentication: a cluster started with ``ray start`` before ``~/.ray/auth_token``
    existed runs without it, while a process that joins with ``--address auto`` and finds the file (written by any
    later local ``ray.init``, a local sweep for one) turns it on and refuses the cluster's calls; the cluster then
    takes this process for dead and ends every actor it asks for, so each trial would fail at once without a Python
    error. A probe actor shows it. A probe that is only slow (a busy node) is not an error.
    """
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError

    probe = ray.remote(num_cpus=0)(_Probe).remote()
    try:
        ray.get(probe.ready.remote(), timeout=PROBE_S)
    except GetTimeoutError:
        pass
    except RayActorError as error:
        ray.shutdown()
        raise ConfigError(
            f"the Ray cluster at --address {address} ended this sweep's first actor before it ran "
            f"({str(error).splitlines()[0]}), so every trial would fail. The usual cause: the cluster and this "
            "process disagree on Ray's token authentication (a cluster started before ~/.ray/auth_token existed runs "
            "without it). Start the cluster again (`ray stop`, then `ray start --head`), or set RAY_AUTH_MODE to the "
            "same value for `ray start` and this command") from None
    finally:
        if ray.is_initialized():
            ray.kill(probe)


class _Probe:
    """An actor that only answers: what :func:`_check_cluster_starts_actors` asks the cluster to start."""

    def ready(self) -> bool:
        return True


def run_trial(tune_config: dict[str, Any], specs: dict[str, dict[str, Any]]) -> None:
    """One Ray Tune trial (in a Ray worker): train, or resume, its run folder, reporting every evaluation."""
    from ray import tune

    from pretrain.config import build_config
    from pretrain.run.run_config import read_run_config
    from pretrain.run.trainer import train

    spec = specs[tune_config["trial"]]
    run_dir = Path(spec["run_dir"])
    try:
        (run_dir / ERROR_FILE).unlink(missing_ok=True)  # an earlier attempt's
        resume = spec["state"] == RESUME
        config = read_run_config(run_dir, spec["resumable"]) if resume else build_config(spec["config"])
        train(config, run_dir, resume=resume, verbose=0, on_evaluation=lambda row: tune.report(dict(row)))
    except Exception:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / ERROR_FILE).write_text(traceback.format_exc())
        except OSError:  # the run folder cannot be written: Tune still records the error
            pass
        raise


def last_evaluation(run_dir: Path) -> dict[str, Any]:
    """The last row of a run's ``eval/coverage.json`` ({} when it has none)."""
    from pretrain.run.run_folder import read_history
    from pretrain.run.run_state import ResumeError

    try:
        rows = read_history(run_dir)
    except ResumeError:
        return {}
    return rows[-1] if rows else {}


def error_line(run_dir: Path) -> str:
    """What went wrong in a failed trial: the last line of its traceback, and where the traceback is."""
    path = run_dir / ERROR_FILE
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return "the trial's worker ended without a Python error (killed, or out of memory)"
    return f"{lines[-1] if lines else 'unknown error'} (traceback in {path})"


class _StopOnSignal:
    """SIGINT and SIGTERM end the sweep: the first raises KeyboardInterrupt in the driver (Ray is then shut down,
    which stops the trials); later ones are ignored while that happens."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signal_name is None:
            self.signal_name = signal.Signals(signum).name
            raise KeyboardInterrupt

    def __enter__(self) -> _StopOnSignal:
        if threading.current_thread() is threading.main_thread():  # signals can be caught there only
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


@contextlib.contextmanager
def _tune_environment() -> Iterator[None]:
    """Ray Tune's switches for this sweep: no SIGINT handler of its own (see :class:`_StopOnSignal`), and its
    legacy console output, which ``verbose=0`` silences (the new one still prints a table and paths)."""
    values = {"TUNE_DISABLE_SIGINT_HANDLER": "1", "RAY_AIR_NEW_OUTPUT": "0"}
    previous = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _progress_callback(planned: dict[str, PlannedTrial], echo: Callable[[str], None]):
    """A Tune callback printing one line per evaluation of a trial, and when it finishes or fails."""
    from ray import tune

    class Progress(tune.Callback):
        def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info) -> None:
            if "policy_coverage" in result:
                echo(f"trial {trial.config['trial']}: epoch {result.get('epoch')}, policy coverage "
                     f"{result['policy_coverage']}")

        def on_trial_complete(self, iteration: int, trials: list, trial, **info) -> None:
            name = trial.config["trial"]
            row = last_evaluation(planned[name].run_dir)
            echo(f"trial {name}: finished, epoch {row.get('epoch')}, policy coverage {row.get('policy_coverage')}")

        def on_trial_error(self, iteration: int, trials: list, trial, **info) -> None:
            name = trial.config["trial"]
            echo(f"trial {name} failed: {error_line(planned[name].run_dir)}")

    return Progress()


def run_trials(planned: list[PlannedTrial], cpus_per_run: int = 1, address: str | None = None,
               echo: Callable[[str], None] = print, max_concurrent: int | None = None) -> list[TrialOutcome]:
    """Run the trials that are not finished through Ray Tune; the outcome of every trial, in order.

    :param max_concurrent: the most trials at once (None: as many as the CPUs allow).

    :raises ConfigError: the cluster cannot be reached, or no trial could ever get its CPUs.
    :raises SweepInterrupted: SIGINT or SIGTERM stopped the sweep (Ray is shut down first).
    """
    pending = {item.trial.name: item for item in planned if item.state != FINISHED}
    results: dict[str, Any] = {}
    if pending:
        results = fit_until_stopped(lambda scratch: _fit(pending, cpus_per_run, address, echo, scratch,
                                                          max_concurrent))
    outcomes = []
    for item in planned:
        row = last_evaluation(item.run_dir)
        if item.state == FINISHED:
            outcomes.append(TrialOutcome(item.trial.name, "already finished", row.get("epoch"),
                                         row.get("policy_coverage")))
        elif results.get(item.trial.name) is not None:
            outcomes.append(TrialOutcome(item.trial.name, "failed", row.get("epoch"), row.get("policy_coverage"),
                                         error_line(item.run_dir)))
        else:
            outcomes.append(TrialOutcome(item.trial.name, "finished", row.get("epoch"), row.get("policy_coverage")))
    return outcomes


def fit_until_stopped(fit: Callable[[str], dict[str, Any]], prefix: str = "metra-sweep-tune-") -> dict[str, Any]:
    """``fit(scratch)`` (start Ray, run trials through Tune with its files in the folder ``scratch``, return each
    trial's error) run so that SIGINT or SIGTERM stop it cleanly and nothing of Ray outlives it (the watchdog).

    :raises SweepInterrupted: SIGINT or SIGTERM stopped it (Ray is shut down first).
    """
    scratch = tempfile.mkdtemp(prefix=prefix)  # Tune's own files; the runs write their own folders
    watchdog = Watchdog([scratch])
    stop = _StopOnSignal()
    results: dict[str, Any] = {}
    try:
        with stop, _tune_environment():
            results = fit(scratch)
    except KeyboardInterrupt:
        if stop.signal_name is None:  # a KeyboardInterrupt that is not ours (e.g. raised in a test)
            raise
    finally:
        with _IgnoreSignals():
            _shutdown_ray()
            watchdog.close()
            shutil.rmtree(scratch, ignore_errors=True)
    if stop.signal_name is not None:
        raise SweepInterrupted(stop.signal_name)
    return results


def _fit(pending: dict[str, PlannedTrial], cpus_per_run: int, address: str | None, echo: Callable[[str], None],
         scratch: str, max_concurrent: int | None = None) -> dict[str, Any]:
    """Start Ray, run the pending trials, return each trial's error (None when it finished)."""
    from ray import tune

    cpus = start_ray(address, cpus_per_run)
    at_once = runs_at_once(len(pending), cpus, cpus_per_run, max_concurrent)
    echo(f"running {len(pending)} trial(s), {at_once} at a time ({cpus_per_run} CPU(s) each)")
    from pretrain.run.run_config import RESUMABLE_KEYS

    specs = {name: {"run_dir": str(item.run_dir), "state": item.state, "config": item.config.to_dict(),
                    "resumable": {k: v for k, v in item.config.to_dict().items() if k in RESUMABLE_KEYS}}
             for name, item in pending.items()}
    trainable = tune.with_resources(tune.with_parameters(run_trial, specs=specs), {"cpu": cpus_per_run})
    quiet = [logging.getLogger(name) for name in ("ray.tune", "ray.train", "ray.air")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:  # failed trials are reported in one line each, not with Tune's tracebacks
        logger.setLevel(logging.CRITICAL)
    try:
        tuner = tune.Tuner(trainable, param_space={"trial": tune.grid_search(list(pending))},
                           tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent),
                           run_config=tune.RunConfig(name="sweep", storage_path=scratch, verbose=0,
                                                     callbacks=[_progress_callback(pending, echo)]))
        results = tuner.fit()
    finally:
        for logger, level in zip(quiet, levels):
            logger.setLevel(level)
    return trial_errors(results, pending)


def trial_errors(results: Iterable[Any], names: Iterable[str]) -> dict[str, Any]:
    """Each trial's error (None when it finished) from Tune's results; a trial of ``names`` without a result, or
    whose result lost its config (Ray ended it before it started), counts as failed."""
    errors: dict[str, Any] = {name: RuntimeError("the trial ended before it started") for name in names}
    errors.update({result.config["trial"]: result.error for result in results if result.config})
    return errors


def _shutdown_ray() -> None:
    import sys

    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


class _IgnoreSignals:
    """SIGINT and SIGTERM ignored while Ray is shut down and the watchdog cleans up (a second Ctrl-C must not leave
    that half done; SIGKILL still works, and the watchdog finishes the job)."""

    def __enter__(self) -> None:
        self._previous = ({sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
                          if threading.current_thread() is threading.main_thread() else {})

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
