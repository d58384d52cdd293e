"""The records of ``benchmarks/reward_mutations.py`` still match the code: each snippet occurs exactly once in its
file, the mutated file parses, and the tests it names exist (so a record cannot rot silently when the rewards'
code moves on). Running the mutations themselves is the script's work, not the suite's."""

from collections import Counter

from tests.benchmark_scripts import benchmark_script


def reward_mutations():
    return benchmark_script("reward_mutations")


def test_every_mutation_record_matches_the_code_once():
    script = reward_mutations()
    assert script.record_problems(script.MUTATIONS) == []
    methods = [m.method for m in script.MUTATIONS]
    # five a method, as the script's docstring and benchmarks/README.md say
    assert Counter(methods) == dict.fromkeys(("icm", "rnd", "apt", "aps", "lbs", "disagreement"), 5)
    assert len({m.name for m in script.MUTATIONS}) == len(script.MUTATIONS)


def test_a_record_that_no_longer_matches_is_reported(tmp_path):
    script = reward_mutations()
    (tmp_path / "reward.py").write_text("r = x + y\nr = x + y\n")
    twice = script.Mutation("twice", "icm", "", "reward.py", "r = x + y", "r = x - y", ("reward.py",))
    gone = script.Mutation("gone", "icm", "", "reward.py", "r = x * y", "r = x / y", ("reward.py",))
    problems = script.record_problems([twice, gone], tmp_path)
    assert problems == ["twice: the snippet occurs 2 times in reward.py (must be once): 'r = x + y'",
                        "gone: the snippet occurs 0 times in reward.py (must be once): 'r = x * y'"]
    assert [script.outcome(code) for code in (1, 0, 2, 5, None)] == ["caught", "not caught", "error", "error", "error"]
