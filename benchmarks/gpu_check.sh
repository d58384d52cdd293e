#!/usr/bin/env bash
# Pixel METRA on one GPU machine in one command, finished within 9 minutes of its start (benchmarks/gpu_check.py
# says what it measures). Installs first what the machine lacks, from the wheels of benchmarks/gpu_wheels.sh
# (benchmarks/gpu_wheels/, --no-index) or, without that folder, from the package index; into a scratch folder put on
# PYTHONPATH, never into the machine's Python.
#
# MUJOCO_GL: left as the caller set it; when unset, gpu_check.py tries egl (headless, on the GPU with NVIDIA's
# EGL), then osmesa, and uses the first that renders. `--unpack-gl` first unpacks the OpenGL loaders that
# gpu_wheels.sh downloaded (libEGL and friends) into / (root only; meant for the bare device machine).
#
#   bash benchmarks/gpu_wheels.sh                                  # here, once, with network
#   bash benchmarks/gpu_check.sh --unpack-gl                      # there (the device tool: carry benchmarks/gpu_wheels)
#   bash benchmarks/gpu_check.sh --tiny --out /tmp/gpu_check_tiny  # the logic, at a tiny scale, on any machine
#
# Results: benchmarks/results/gpu_check/ (or --out), also copied to $OUT/gpu_check when $OUT is set (the device tool
# brings back what is under $OUT). Other options go to gpu_check.py.
set -uo pipefail
START=$(date +%s)
cd "$(dirname "$0")/.."
TOTAL_S=${GPU_CHECK_TOTAL_S:-540}   # 9 minutes, from this script's start
SITE=${GPU_CHECK_SITE:-/tmp/metra_gpu_site}
WHEELS=benchmarks/gpu_wheels
PYTHON=${PYTHON:-python3}
ARGS=()
OUT_DIR=benchmarks/results/gpu_check
while [ $# -gt 0 ]; do
  case "$1" in
    --unpack-gl) UNPACK_GL=1 ;;
    --out) OUT_DIR=$2; ARGS+=(--out "$2"); shift ;;
    *) ARGS+=("$1") ;;
  esac
  shift
done

if [ "${UNPACK_GL:-0}" = 1 ]; then
  for deb in "$WHEELS"/gl/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" /; done
  ldconfig || true
fi

# The distributions of gpu_requirements.txt that this Python cannot find; only those are installed.
mapfile -t MISSING < <("$PYTHON" - <<'EOF'
import importlib.metadata as metadata
for line in open("benchmarks/gpu_requirements.txt"):
    line = line.strip()
    if line and not line.startswith("#"):
        name = line.split("==")[0]
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            print(name)
EOF
)
if [ ${#MISSING[@]} -gt 0 ]; then
  echo "installing into $SITE: ${MISSING[*]}"
  if [ -d "$WHEELS" ]; then
    FILES=()
    for name in "${MISSING[@]}"; do
      stem=$(echo "$name" | tr '[:upper:]-' '[:lower:]_')
      FILES+=("$(ls "$WHEELS"/*.whl | grep -i "/${stem}-" | head -1)")
    done
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "${FILES[@]}" || { echo "installing the carried wheels failed"; exit 2; }
  else
    mapfile -t PINNED < <(grep -v '^#' benchmarks/gpu_requirements.txt | grep -v '^$' | grep -i -E "^($(IFS='|'; echo "${MISSING[*]}"))==")
    "$PYTHON" -m pip install -q --no-deps --target "$SITE" "${PINNED[@]}" \
      || { echo "no $WHEELS folder and the package index failed: run benchmarks/gpu_wheels.sh where there is network"; exit 2; }
  fi
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 GPU_CHECK_SITE="$SITE"

"$PYTHON" benchmarks/gpu_check.py --deadline $((START + TOTAL_S - 20)) "${ARGS[@]}"
STATUS=$?
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/gpu_check" && cp "$OUT_DIR"/* "$OUT/gpu_check/" 2>/dev/null
fi
exit $STATUS
