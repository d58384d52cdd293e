"""The scripts of ``benchmarks/`` (no package) as modules, for the tests of their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_script(name: str, monkeypatch: pytest.MonkeyPatch | None = None) -> ModuleType:
    """``benchmarks/NAME.py`` loaded afresh as the module ``NAME`` (in ``sys.modules``, where a dataclass of the
    script looks its module up), with ``benchmarks/`` first on ``sys.path`` as running the script puts it there for
    its imports of sibling scripts: while it loads, or, given ``monkeypatch``, for the whole test (a script that
    imports a sibling when called)."""
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
