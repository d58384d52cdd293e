#!/usr/bin/env bash
# The demo of the README: install, then run the skills quickstart on the bundled default checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export MUJOCO_GL="${MUJOCO_GL:-egl}"
python examples/skills_quickstart.py "$@"
