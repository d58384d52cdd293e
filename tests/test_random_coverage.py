"""``benchmarks/random_coverage.py``: random actions' total coverage, counted batch by batch."""

import numpy as np
import pytest

from pretrain.run.coverage import SkillRollouts, coverage
from tests.benchmark_scripts import benchmark_script


def test_total_coverage_counts_every_batch_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    script = benchmark_script("random_coverage")
    runs: list[tuple[int, np.ndarray]] = []

    class Recorded(SkillRollouts):  # the positions and reset seeds of each batch, to count them again here
        def run(self, act, skills, seed=0, observations=None):
            positions = super().run(act, skills, seed=seed, observations=observations)
            runs.append((seed, positions))
            return positions

    monkeypatch.setattr(script, "SkillRollouts", Recorded)
    monkeypatch.setattr(script, "BATCH", 3)
    result = script.random_action_coverage("point_mass", 7, seed=1000)

    assert [seed for seed, _ in runs] == [1000, 1003, 1006]  # episode i reset with seed + i
    steps = result["steps"]
    expected = {3 * (k + 1) * steps: coverage(np.concatenate([p for _, p in runs[:k + 1]])) for k in range(3)}
    assert result["total_coverage"] == expected
    assert result["policy_coverage"] == expected[9 * steps] and result["n_rollouts"] == 9
    # one batch: the held-out count alone, as before --episodes existed
    single = script.random_action_coverage("point_mass", 3, seed=1000)
    assert "total_coverage" not in single and single["policy_coverage"] == expected[3 * steps]
    # two batches (the last one run past the 4 asked for): the count after each
    double = script.random_action_coverage("point_mass", 4, seed=1000)
    assert double["total_coverage"] == {3 * steps: expected[3 * steps], 6 * steps: expected[6 * steps]}
    assert double["n_rollouts"] == 6
