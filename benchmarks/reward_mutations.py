"""Does the test suite catch every mutation of the exploration methods' rewards? (issue 42, section 3: "each mutation
of a reward's sign or term caught").

:data:`MUTATIONS` lists, for each of the six exploration methods (ICM, RND, APT, APS, LBS, Disagreement), five
changes a reviewer would call a wrong sign or a wrong term of its reward: the sign flipped, a term dropped or
replaced (ICM's log and scale, RND's division by the running std of its errors, the particle entropy's +1 inside
the log, its averaging over the k neighbours, APS's r_ent, r_sf and the normalisation of phi(s'), LBS's 1/2 and its
KL's trace term, Disagreement's variance and its unbiased flag, ...). Each record names the exact source snippet it
replaces, which must occur exactly once in its file: the script checks every record before it runs anything and
stops on one that no longer matches, so that a record cannot rot silently when the code moves on
(``tests/test_reward_mutations.py`` checks the same in the suite).

For each mutation, a fresh copy of the **working tree** (the files of ``git ls-files -co --exclude-standard``:
tracked and untracked-but-not-ignored files as they are on disk, so that uncommitted changes to the algorithms or
the tests are measured, as one does before committing) is made in a temporary folder outside the work tree, the
snippet is replaced there, and the record's tests are run there (``python -m pytest -x -q -p no:cacheprovider -m
"not slow" TESTS``, cwd and ``PYTHONPATH`` the copy, no bytecode written). The tests are the method's own
hand-computed ones (``tests/pretrain/algorithms/test_<method>.py``), those of the helper a mutation touches
(``test_particle_entropy.py``, ``test_forward_inverse.py``), and for the model-error rewards (ICM, RND, LBS,
Disagreement) their learning check in ``test_exploration.py`` (a trained model's reward is higher on novel states;
about 1 s each). The coverage tests of ``test_exploration.py`` (training runs, tens of CPU seconds) are not run. The
outcome is *caught* (pytest exits 1: a test failed), *not caught* (exit 0) or *error* (anything else: a collection
error, a timeout; the output's last lines are kept). Before the mutations, the unmutated copy runs every chosen test
once: the script stops if that baseline does not pass, or if the copy's modules are not the ones imported. The work
tree itself is never modified; the temporary folders are removed.

Not recorded: reversing LBS's KL, KL(p || q) for KL(q || p), since with the unit variances of its latent both
directions are 1/2 ||mu_q - mu_p||^2 (an equivalent mutant, which no test can catch).

Writes ``OUT/summary.json`` (date, git HEAD and the paths that differ from it, each mutation with its outcome, the
test that caught it and its seconds) and ``OUT/table.md`` (a row per mutation, then "N of M caught"); exits 1 if any
mutation is not caught or errored. About 5-8 CPU seconds a mutation.

    nice -n 5 python benchmarks/reward_mutations.py [--only METHOD ...] [--out benchmarks/results/reward_mutations]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from metra_gym.atomic_files import write_json_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "reward_mutations"
PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider", "-m", "not slow")
TIMEOUT_S = 300.0  # per pytest run (wall clock); the runs take about 5 s on an idle core
TAIL_LINES = 15  # lines of pytest's output kept for a mutation not caught or an error

ALGORITHMS = "pretrain/algorithms"
TESTS = "tests/pretrain/algorithms"
PARTICLE_ENTROPY = f"{ALGORITHMS}/common/particle_entropy.py"
FORWARD_INVERSE = f"{ALGORITHMS}/common/forward_inverse.py"
ENTROPY_TESTS = f"{TESTS}/test_particle_entropy.py"


def learning_check(method: str) -> str:
    """The node id of ``method``'s model-error learning test in test_exploration.py (about 1 s)."""
    return f"{TESTS}/test_exploration.py::test_a_models_error_falls_on_the_states_it_was_trained_on[{method}]"


@dataclass(frozen=True)
class Mutation:
    """One change of a reward: ``snippet`` (which must occur exactly once in ``file``) becomes ``replacement``.

    :param name: a short id, unique among the records.
    :param method: the algorithm (``algo``) whose reward it changes.
    :param description: what the change does to the reward, in a reviewer's words.
    :param file: the source file, relative to the repository root.
    :param snippet: the exact source text replaced.
    :param replacement: the text it is replaced with.
    :param tests: pytest files or node ids (relative to the root) that should catch it, the method's own first.
    """

    name: str
    method: str
    description: str
    file: str
    snippet: str
    replacement: str
    tests: tuple[str, ...]


def _own(method: str, *extra: str) -> tuple[str, ...]:
    """The method's own test file, then ``extra`` tests."""
    return (f"{TESTS}/test_{method}.py", *extra)


ICM_FILE, RND_FILE, APT_FILE = f"{ALGORITHMS}/icm/icm.py", f"{ALGORITHMS}/rnd/rnd.py", f"{ALGORITHMS}/apt/apt.py"
APS_FILE, LBS_FILE = f"{ALGORITHMS}/aps/aps.py", f"{ALGORITHMS}/lbs/lbs.py"
DISAGREEMENT_FILE = f"{ALGORITHMS}/disagreement/disagreement.py"
ICM_TESTS, RND_TESTS = _own("icm", learning_check("icm")), _own("rnd", learning_check("rnd"))
LBS_TESTS, DISAGREEMENT_TESTS = _own("lbs", learning_check("lbs")), _own("disagreement", learning_check("disagreement"))

ICM_REWARD = "return th.log1p(self.icm_scale * forward_error).unsqueeze(1)"
RND_REWARD = "return (self.rnd_scale * self.prediction_error(obs) / scale).unsqueeze(1)"
APT_REWARD = "return self.entropy(self.model.embedding(obs))"
APS_REWARD = "return self.entropy(features) + self.successor_feature_reward(features, z).unsqueeze(1)"
LBS_SURPRISE = "return 0.5 * (posterior_mean - prior_mean).pow(2).sum(dim=1)"
DISAGREEMENT_REWARD = "return self.predictions(obs, actions).var(dim=0).mean(dim=1, keepdim=True)"
ENTROPY_REWARD = "return th.log1p((distances - self.knn_clip).clamp(min=0).mean(dim=1, keepdim=True))"

MUTATIONS: list[Mutation] = [
    # ICM: r = log(1 + c ||s' - f(s, a)||)
    Mutation("icm-sign", "icm", "sign flipped: r = -log(1 + c e)", ICM_FILE, ICM_REWARD,
             "return -th.log1p(self.icm_scale * forward_error).unsqueeze(1)", ICM_TESTS),
    Mutation("icm-no-log", "icm", "log(1 + c e) -> c e (the log dropped)", ICM_FILE, ICM_REWARD,
             "return (self.icm_scale * forward_error).unsqueeze(1)", ICM_TESTS),
    Mutation("icm-no-scale", "icm", "scale c dropped: log(1 + e)", ICM_FILE, ICM_REWARD,
             "return th.log1p(forward_error).unsqueeze(1)", ICM_TESTS),
    Mutation("icm-inverse-error", "icm", "the inverse model's error ||a - g(s, s')|| in place of the forward model's",
             ICM_FILE, "forward_error, _ = self.model.errors(obs, actions, next_obs)",
             "_, forward_error = self.model.errors(obs, actions, next_obs)", ICM_TESTS),
    Mutation("icm-squared-error", "icm", "forward error squared: ||s' - f(s, a)||^2 in place of the norm",
             FORWARD_INVERSE, "return (next_embedded - predicted_next).norm(dim=1),",
             "return (next_embedded - predicted_next).pow(2).sum(dim=1),",
             _own("icm", f"{TESTS}/test_forward_inverse.py", learning_check("icm"))),
    # RND: r = c e(s) / (sqrt(S) + 1e-8)
    Mutation("rnd-sign", "rnd", "sign flipped: r = -c e(s) / sqrt(S)", RND_FILE, RND_REWARD,
             "return -(self.rnd_scale * self.prediction_error(obs) / scale).unsqueeze(1)", RND_TESTS),
    Mutation("rnd-no-std", "rnd", "division by the running std of the errors dropped: r = c e(s)", RND_FILE,
             RND_REWARD, "return (self.rnd_scale * self.prediction_error(obs)).unsqueeze(1)", RND_TESTS),
    Mutation("rnd-no-scale", "rnd", "scale c dropped: r = e(s) / sqrt(S)", RND_FILE, RND_REWARD,
             "return (self.prediction_error(obs) / scale).unsqueeze(1)", RND_TESTS),
    Mutation("rnd-next-state", "rnd", "prediction error of s' in place of s (URLB's is of s)", RND_FILE, RND_REWARD,
             "return (self.rnd_scale * self.prediction_error(next_obs) / scale).unsqueeze(1)", RND_TESTS),
    Mutation("rnd-moments-variance", "rnd",
             "running variance S of the errors without its between-batch term delta^2 c n / (c + n)",
             PARTICLE_ENTROPY, "var.copy_((var * count + x.var() * n + delta.pow(2) * count * n / (count + n)) / "
             "(count + n))", "var.copy_((var * count + x.var() * n) / (count + n))",
             _own("rnd", ENTROPY_TESTS, learning_check("rnd"))),
    # APT: r_i = log(1 + (1/k) sum_{j in kNN(i)} ||e(s_i) - e(s_j)||)
    Mutation("apt-sign", "apt", "sign flipped: r = -log(1 + mean_k d)", APT_FILE, APT_REWARD,
             "return -self.entropy(self.model.embedding(obs))", _own("apt")),
    Mutation("apt-next-state", "apt", "particle entropy of e(s') in place of e(s) (URLB's is of s)", APT_FILE,
             APT_REWARD, "return self.entropy(self.model.embedding(next_obs))", _own("apt")),
    Mutation("apt-no-plus-one", "apt", "the +1 inside the particle entropy's log dropped: log(mean_k d)",
             PARTICLE_ENTROPY, ENTROPY_REWARD,
             "return th.log((distances - self.knn_clip).clamp(min=0).mean(dim=1, keepdim=True))",
             _own("apt", ENTROPY_TESTS)),
    Mutation("apt-sum-over-k", "apt", "the k neighbours' distances summed, not averaged: log(1 + sum_k d)",
             PARTICLE_ENTROPY, ENTROPY_REWARD,
             "return th.log1p((distances - self.knn_clip).clamp(min=0).sum(dim=1, keepdim=True))",
             _own("apt", ENTROPY_TESTS)),
    Mutation("apt-kth-only", "apt", "the k-th neighbour's distance alone, not the mean over the k nearest",
             PARTICLE_ENTROPY, ENTROPY_REWARD, "return th.log1p((distances - self.knn_clip).clamp(min=0)[:, -1:])",
             _own("apt", ENTROPY_TESTS)),
    # APS: r = r_ent + r_sf, r_ent the particle entropy of phi(s') / M, r_sf = w^T phi(s') / ||phi(s')||
    Mutation("aps-sign", "aps", "sign flipped: r = -(r_ent + r_sf)", APS_FILE, APS_REWARD,
             "return -(self.entropy(features) + self.successor_feature_reward(features, z).unsqueeze(1))",
             _own("aps")),
    Mutation("aps-no-entropy", "aps", "exploration term r_ent dropped: r = r_sf", APS_FILE, APS_REWARD,
             "return self.successor_feature_reward(features, z).unsqueeze(1)", _own("aps")),
    Mutation("aps-no-successor", "aps", "successor-feature term r_sf dropped: r = r_ent", APS_FILE, APS_REWARD,
             "return self.entropy(features)", _own("aps")),
    Mutation("aps-unnormalised-phi", "aps", "r_sf = w^T phi(s') without the normalisation of phi(s')", APS_FILE,
             "return (F.normalize(features, dim=1) * z).sum(dim=1)", "return (features * z).sum(dim=1)",
             _own("aps")),
    Mutation("aps-no-running-mean", "aps", "k-NN distances not divided by their running mean M (knn_rms)",
             PARTICLE_ENTROPY, "distances = distances / self.moments.mean.to(distances.dtype)",
             "distances = distances", _own("aps", ENTROPY_TESTS)),
    # LBS: r = KL(q || p) = 1/2 ||mu_q(s, a, s') - mu_p(s, a)||^2
    Mutation("lbs-sign", "lbs", "sign flipped: r = -KL(q || p)", LBS_FILE,
             "return self.surprise(*self.latent_means(obs, actions, next_obs)).unsqueeze(1)",
             "return -self.surprise(*self.latent_means(obs, actions, next_obs)).unsqueeze(1)", LBS_TESTS),
    Mutation("lbs-no-half", "lbs", "the KL's 1/2 dropped: ||mu_q - mu_p||^2", LBS_FILE, LBS_SURPRISE,
             "return (posterior_mean - prior_mean).pow(2).sum(dim=1)", LBS_TESTS),
    Mutation("lbs-mean-over-latent", "lbs", "the KL averaged over the latent's dimensions, not summed", LBS_FILE,
             LBS_SURPRISE, "return 0.5 * (posterior_mean - prior_mean).pow(2).mean(dim=1)", LBS_TESTS),
    Mutation("lbs-trace-term", "lbs",
             "the KL's variance (trace) term tr(S_p^-1 S_q) = d without its -d: KL + d/2", LBS_FILE, LBS_SURPRISE,
             "return 0.5 * ((posterior_mean - prior_mean).pow(2) + 1).sum(dim=1)", LBS_TESTS),
    Mutation("lbs-posterior-without-next-state", "lbs",
             "posterior q(z' | s, a, s) that does not see s' (the surprise of s' gone)", LBS_FILE,
             "self.posterior_net(th.cat([obs, actions, next_obs], dim=1))",
             "self.posterior_net(th.cat([obs, actions, obs], dim=1))", LBS_TESTS),
    # Disagreement: r = (1/d) sum_k Var_i[f_i(s, a)_k], unbiased
    Mutation("disagreement-sign", "disagreement", "sign flipped: r = -mean_k Var_i", DISAGREEMENT_FILE,
             DISAGREEMENT_REWARD,
             "return -self.predictions(obs, actions).var(dim=0).mean(dim=1, keepdim=True)", DISAGREEMENT_TESTS),
    Mutation("disagreement-mean", "disagreement", "the models' mean prediction in place of their variance",
             DISAGREEMENT_FILE, DISAGREEMENT_REWARD,
             "return self.predictions(obs, actions).mean(dim=0).mean(dim=1, keepdim=True)", DISAGREEMENT_TESTS),
    Mutation("disagreement-biased", "disagreement", "biased variance (divided by N, not N - 1)", DISAGREEMENT_FILE,
             DISAGREEMENT_REWARD,
             "return self.predictions(obs, actions).var(dim=0, unbiased=False).mean(dim=1, keepdim=True)",
             DISAGREEMENT_TESTS),
    Mutation("disagreement-std", "disagreement", "the models' standard deviation in place of their variance",
             DISAGREEMENT_FILE, DISAGREEMENT_REWARD,
             "return self.predictions(obs, actions).std(dim=0).mean(dim=1, keepdim=True)", DISAGREEMENT_TESTS),
    Mutation("disagreement-sum-over-state", "disagreement", "variances summed over the state's dimensions, not averaged",
             DISAGREEMENT_FILE, DISAGREEMENT_REWARD,
             "return self.predictions(obs, actions).var(dim=0).sum(dim=1, keepdim=True)", DISAGREEMENT_TESTS),
]


def record_problems(mutations: list[Mutation], root: Path = ROOT) -> list[str]:
    """Why records cannot be applied to the tree at ``root``: a duplicate name, a snippet that does not occur
    exactly once in its file, a replacement equal to the snippet or that leaves the file unparsable, a test file that
    does not exist. Empty when every record is sound."""
    problems = []
    names = [m.name for m in mutations]
    problems += [f"{name}: the name is used {names.count(name)} times" for name in sorted(set(names))
                 if names.count(name) > 1]
    for m in mutations:
        path = root / m.file
        if not path.is_file():
            problems.append(f"{m.name}: {m.file} does not exist")
            continue
        text = path.read_text()
        count = text.count(m.snippet)
        if count != 1:
            problems.append(f"{m.name}: the snippet occurs {count} times in {m.file} (must be once): {m.snippet!r}")
            continue
        if m.replacement == m.snippet:
            problems.append(f"{m.name}: the replacement is the snippet")
        try:
            ast.parse(text.replace(m.snippet, m.replacement))
        except SyntaxError as error:
            problems.append(f"{m.name}: the mutated {m.file} does not parse: {error}")
        problems += [f"{m.name}: test file {test.split('::')[0]} does not exist" for test in m.tests
                     if not (root / test.split("::")[0]).is_file()]
    return problems


def working_tree_files(root: Path) -> list[str]:
    """The working tree's files: tracked, and untracked but not ignored (``git ls-files -co --exclude-standard``)."""
    listing = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, check=True).stdout.decode()
    return [name for name in listing.split("\0") if name]


def copy_tree(root: Path, files: list[str], dest: Path) -> None:
    """Copy ``files`` (relative to ``root``) to ``dest``; files deleted in the work tree are skipped."""
    for name in files:
        source = root / name
        if source.is_symlink() or source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def apply(mutation: Mutation, tree: Path) -> None:
    """Replace the mutation's snippet in the copy at ``tree`` (checked again to occur exactly once there)."""
    path = tree / mutation.file
    if path.is_symlink():  # writing through a link could change the file it points to, in the work tree
        raise RuntimeError(f"{mutation.name}: {mutation.file} is a symbolic link; mutate the file itself")
    text = path.read_text()
    if text.count(mutation.snippet) != 1:
        raise RuntimeError(f"{mutation.name}: the snippet occurs {text.count(mutation.snippet)} times in the copy")
    path.write_text(text.replace(mutation.snippet, mutation.replacement))


def copy_environment(tree: Path) -> dict[str, str]:
    """The environment of a run in the copy: its modules first, no bytecode written (a mutation of the same length
    as its snippet must not be read from a stale .pyc)."""
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}


def run_tests(tree: Path, tests: tuple[str, ...], timeout: float) -> dict[str, Any]:
    """Run ``tests`` in the copy at ``tree``: the exit code (None on a timeout), the failed tests, the seconds and
    the output's last lines."""
    start = time.perf_counter()
    try:
        # --basetemp inside the copy: the tests' tmp_path folders go with it (not to the system's pytest-of-USER)
        done = subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, f"--basetemp={tree / '.pytest_tmp'}",
                               *tests], cwd=tree,
                              env=copy_environment(tree), capture_output=True, text=True, timeout=timeout)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        code = None
        output = "".join(part.decode(errors="replace") if isinstance(part, bytes) else (part or "")
                         for part in (expired.stdout, expired.stderr)) + f"\n(timed out after {timeout:g} s)"
    failed = [line.split(" ", 1)[1].split(" - ", 1)[0] for line in output.splitlines()
              if line.startswith(("FAILED ", "ERROR "))]
    return {"exit_code": code, "failed": failed, "seconds": round(time.perf_counter() - start, 1),
            "tail": output.strip().splitlines()[-TAIL_LINES:]}


def outcome(exit_code: int | None) -> str:
    """pytest's exit 1 (a test failed): caught; 0: not caught; anything else (a timeout too): error."""
    return {1: "caught", 0: "not caught"}.get(exit_code, "error") if exit_code is not None else "error"


def check_imports(tree: Path) -> None:
    """Stop unless ``pretrain``, ``metra_gym`` and ``tests`` are imported from the copy at ``tree``."""
    code = "import metra_gym, pretrain, tests; print(metra_gym.__file__, pretrain.__file__, tests.__file__)"
    paths = subprocess.run([sys.executable, "-c", code], cwd=tree, env=copy_environment(tree), capture_output=True,
                           text=True, check=True).stdout.split()
    outside = [p for p in paths if not Path(p).resolve().is_relative_to(tree.resolve())]
    if outside or len(paths) != 3:
        raise SystemExit(f"the copy's packages are not the ones imported: {paths}")


def run_in_copy(root: Path, files: list[str], mutation: Mutation | None, tests: tuple[str, ...],
                timeout: float) -> dict[str, Any]:
    """A fresh copy of the tree in a temporary folder, mutated (unless ``mutation`` is None), ``tests`` run in it,
    the folder removed."""
    with tempfile.TemporaryDirectory(prefix="reward_mutation_") as folder:
        tree = Path(folder)
        copy_tree(root, files, tree)
        if mutation is None:
            check_imports(tree)
        else:
            apply(mutation, tree)
        return run_tests(tree, tests, timeout)


def git_state(root: Path) -> dict[str, Any]:
    """HEAD and the paths of the working tree that differ from it (``git status --porcelain``)."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return {"git_head": head, "working_tree_changes": [line[3:] for line in status]}


def table(summary: dict[str, Any]) -> str:
    """The markdown table: a row per mutation, then "N of M caught"."""
    rows = ["# Reward mutations: does the test suite catch them?", "",
            f"{summary['date']}, working tree at {summary['git_head'][:12]}"
            + (f" (paths changed from it: {len(summary['working_tree_changes'])})" if summary["working_tree_changes"]
               else "") + "; `python benchmarks/reward_mutations.py"
            + (f" --only {' '.join(summary['only'])}" if summary["only"] else "") + f"` ({summary['seconds']:.0f} s).", "",
            "| method | mutation | file | outcome | caught by | s |", "|---|---|---|---|---|---|"]
    for m in summary["mutations"]:
        caught_by = f"`{m['failed'][0].replace(TESTS + '/', '')}`" if m["failed"] else ""
        description = m["description"].replace("|", "\\|")  # a pipe would end the cell
        rows.append(f"| {m['method']} | {m['name']}: {description} | `{m['file'].removeprefix('pretrain/')}` | "
                    f"{m['outcome']} | {caught_by} | {m['seconds']:.1f} |")
    rows += ["", f"{summary['caught']} of {summary['total']} caught"]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    methods = sorted({m.method for m in MUTATIONS})
    parser.add_argument("--only", nargs="+", choices=methods, metavar="METHOD",
                        help=f"only these methods' mutations ({', '.join(methods)})")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of summary.json and table.md")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per pytest run")
    args = parser.parse_args(argv)

    problems = record_problems(MUTATIONS)
    if problems:
        raise SystemExit("mutation records that no longer match the code:\n  " + "\n  ".join(problems))
    mutations = [m for m in MUTATIONS if args.only is None or m.method in args.only]
    files, state = working_tree_files(ROOT), git_state(ROOT)  # what the copies are made of
    start = time.perf_counter()

    all_tests = tuple(dict.fromkeys(test for m in mutations for test in m.tests))
    baseline = run_in_copy(ROOT, files, None, all_tests, args.timeout)
    print(f"baseline (unmutated, {len(all_tests)} test files and ids): exit {baseline['exit_code']}, "
          f"{baseline['seconds']} s", flush=True)
    if baseline["exit_code"] != 0:
        raise SystemExit("the unmutated tree does not pass the chosen tests:\n" + "\n".join(baseline["tail"]))

    results = []
    for m in mutations:
        run = run_in_copy(ROOT, files, m, m.tests, args.timeout)
        result = {"name": m.name, "method": m.method, "description": m.description, "file": m.file,
                  "snippet": m.snippet, "replacement": m.replacement, "tests": list(m.tests),
                  "outcome": outcome(run["exit_code"]), "exit_code": run["exit_code"], "failed": run["failed"],
                  "seconds": run["seconds"]}
        if result["outcome"] != "caught":
            result["tail"] = run["tail"]
        results.append(result)
        print(f"{m.name}: {result['outcome']} ({', '.join(run['failed']) or 'no test failed'}), {run['seconds']} s",
              flush=True)

    caught = sum(r["outcome"] == "caught" for r in results)
    summary = {"what": "test-suite runs on the working tree with one reward mutation each (issue 42, section 3)",
               "date": str(date.today()), **state, "only": args.only,
               "pytest": ["python", "-m", "pytest", *PYTEST_ARGS], "timeout_s": args.timeout,
               "baseline": {"exit_code": baseline["exit_code"], "seconds": baseline["seconds"],
                            "tests": list(all_tests)},
               "caught": caught, "total": len(results), "seconds": round(time.perf_counter() - start, 1),
               "mutations": results}
    write_json_atomic(args.out / "summary.json", summary)
    write_text_atomic(args.out / "table.md", table(summary))
    print(f"{caught} of {len(results)} caught; wrote {args.out / 'summary.json'} and {args.out / 'table.md'}")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
