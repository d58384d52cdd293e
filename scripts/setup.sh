#!/usr/bin/env bash
# Create .venv (once) and install metra-gym with its test tools. Torch goes first: the CPU wheel
# torch==2.13.0 is what pip finds on our machines; a bare "torch" requirement would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test]"
