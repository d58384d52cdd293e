import os
import signal

# Headless MuJoCo rendering for the env checker; must be set before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402

# One thread: the suite's small networks gain nothing from more, and it keeps runs beside it undisturbed.
torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_folder(tmp_path_factory: pytest.TempPathFactory):
    """Stable-Baselines3 makes a fresh ``/tmp/SB3-<date>`` folder at every ``learn`` of an agent without a logger of
    its own (many tests' agents); ``SB3_LOGDIR`` gives them one folder under pytest's, which pytest cleans up."""
    previous = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3_logs"))
    yield
    if previous is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = previous

# A test's time limit is CPU time, not wall-clock time: the suite shares its machine with training campaigns, and
# under a load of 10 on 2 cores a learning test that needs 4 CPU minutes takes 20 wall-clock minutes or more, so a
# wall-clock limit can fail a seeded test whose result does not depend on the load. The CPU time of the
# test's own process (all its threads; not the subprocesses it runs, which have their own timeouts) is the measure
# of its work. pytest-timeout's wall-clock limit (pyproject.toml) stays, far above, for a test that hangs without
# using the CPU (a deadlock).
CPU_BUDGET_S = 600.0


class CPUBudgetExceeded(Exception):
    """A test used more CPU time than its budget."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Fail the test at ``CPU_BUDGET_S`` seconds of CPU time (``@pytest.mark.cpu_budget(seconds)`` to change it)."""
    marker = item.get_closest_marker("cpu_budget")
    budget = float(marker.args[0]) if marker else CPU_BUDGET_S
    if not hasattr(signal, "setitimer"):  # not POSIX: the wall-clock limit alone
        yield
        return

    def over_budget(signum, frame):
        raise CPUBudgetExceeded(f"the test used more than {budget:g} s of CPU time")

    previous = signal.signal(signal.SIGPROF, over_budget)
    signal.setitimer(signal.ITIMER_PROF, budget)  # counts this process's CPU time, user and system, all threads
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
