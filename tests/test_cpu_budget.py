"""The suite's per-test limit (tests/conftest.py) counts the test's CPU time, so a loaded machine cannot fail it."""

import time

import pytest

from tests.conftest import CPUBudgetExceeded


@pytest.mark.cpu_budget(1.0)
def test_the_time_limit_counts_cpu_time_not_waiting():
    time.sleep(1.5)  # more wall-clock time than the budget, no CPU time: no failure
    start = time.process_time()
    with pytest.raises(CPUBudgetExceeded, match="more than 1 s of CPU time"):
        while time.process_time() - start < 30:  # busy: the budget ends it after about 1 CPU second
            pass
    assert time.process_time() - start < 5
