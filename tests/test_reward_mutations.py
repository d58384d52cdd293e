"""The records of ``benchmarks/reward_mutations.py`` still match the code: each snippet occurs exactly once in its
file, the mutated file parses, and the tests it names exist (so a record cannot rot silently when the rewards'
code moves on). Running the mutations themselves is the script's work, not the suite's."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def reward_mutations():
    """``benchmarks/reward_mutations.py`` as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("reward_mutations", ROOT / "benchmarks" / "reward_mutations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_every_mutation_record_matches_the_code_once():
    script = reward_mutations()
    assert script.record_problems(script.MUTATIONS) == []
    methods = [m.method for m in script.MUTATIONS]
    assert {method: methods.count(method) >= 3 for method in set(methods)} == {
        method: True for method in ("icm", "rnd", "apt", "aps", "lbs", "disagreement")}


def test_a_record_that_no_longer_matches_is_reported(tmp_path):
    script = reward_mutations()
    (tmp_path / "reward.py").write_text("r = x + y\nr = x + y\n")
    twice = script.Mutation("twice", "icm", "", "reward.py", "r = x + y", "r = x - y", ("reward.py",))
    gone = script.Mutation("gone", "icm", "", "reward.py", "r = x * y", "r = x / y", ("reward.py",))
    problems = script.record_problems([twice, gone], tmp_path)
    assert problems == ["twice: the snippet occurs 2 times in reward.py (must be once): 'r = x + y'",
                        "gone: the snippet occurs 0 times in reward.py (must be once): 'r = x * y'"]
    assert [script.outcome(code) for code in (1, 0, 2, 5, None)] == ["caught", "not caught", "error", "error", "error"]
