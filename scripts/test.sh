#!/usr/bin/env bash
# The test command of the README and of CI: install, lint, type-check the runtime package, run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export MUJOCO_GL="${MUJOCO_GL:-egl}"
ruff check .
mypy  # metra_gym/ ([tool.mypy] in pyproject.toml)
python -m pytest -q "$@"
