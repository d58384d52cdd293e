"""The sdist and the wheel hold what they are meant to: the two packages with their data (bundled configs and
checkpoints, ``py.typed``), and nothing of the repository's tests, examples or benchmarks. Built from a copy, so that
the source tree gets no build/ or *.egg-info."""

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not part of the repository's tree: what git ignores, and git itself.
UNTRACKED = (".git", ".venv", "runs", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".*_cache", "*.log")


def _build_outputs() -> set[Path]:
    return {*ROOT.glob("build"), *ROOT.glob("*.egg-info")}


def test_the_sdist_and_the_wheel_hold_the_packages_and_their_data_only(tmp_path):
    # An editable install (scripts/setup.sh) may leave its own *.egg-info at the root: only new ones are ours.
    before = _build_outputs()
    source = shutil.copytree(ROOT, tmp_path / "source", ignore=shutil.ignore_patterns(*UNTRACKED))
    built = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "sdist", "-d",
                            str(tmp_path / "dist")], cwd=source, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    sdist = next((tmp_path / "dist").glob("*.tar.gz"))
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                            str(tmp_path / "dist"), str(sdist)], capture_output=True, text=True, timeout=300)
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    in_wheel = set(zipfile.ZipFile(next((tmp_path / "dist").glob("*.whl"))).namelist())
    configs = {f"pretrain/config/bundled/{p.name}" for p in (ROOT / "pretrain/config/bundled").glob("*.yaml")}
    checkpoints = {str(p.relative_to(ROOT)) for p in (ROOT / "metra_gym/bundled").rglob("*") if p.is_file()}
    for names in (in_sdist, in_wheel):
        assert configs and configs <= names and checkpoints <= names
        assert {"metra_gym/py.typed", "pretrain/py.typed", "pretrain/cli.py", "metra_gym/skill_policy.py"} <= names
        assert not [n for n in names if n.startswith(("tests/", "examples/", "benchmarks/", "scripts/"))]
    assert _build_outputs() <= before
