#!/usr/bin/env bash
# The test command of the README and of CI: install, lint, type-check the runtime package, run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export MUJOCO_GL="${MUJOCO_GL:-egl}"
ruff check .
mypy  # metra_gym/ ([tool.mypy] in pyproject.toml)
# One worker per core (pytest-xdist), each test file on one worker so that a file's module fixtures are built once:
# 838 s on one worker, 517 s on two on the 2-core machine beside two niced training runs (2026-11-30). `-n 0` after
# the command runs the suite in one process (a debugger, or one test).
python -m pytest -q -n auto --dist loadfile "$@"
