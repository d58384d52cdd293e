#!/usr/bin/env bash
# Download, here (with network), what benchmarks/gpu_check.sh installs on a GPU machine without network:
#   - the cp312 wheels of benchmarks/gpu_requirements.txt into benchmarks/gpu_wheels/ (gitignored);
#   - the OpenGL loaders (Debian's libegl1, libglvnd0, libopengl0, libgl1, libglx0, libgles2) into
#     benchmarks/gpu_wheels/gl/, which `gpu_check.sh --unpack-gl` unpacks into / so that MUJOCO_GL=egl renders
#     on the NVIDIA driver.
# The device tool carries at most 64 MiB (the working tree included), so three wheels are slimmed: dm_control without
# its locomotion assets and the dog model's meshes (83 + 20 MB unpacked; the Quadruped and the Humanoid need neither),
# mujoco without its `experimental` GUI (studio, imgui: 41 MB unpacked) and gymnasium-robotics without the Adroit
# hand's and the Fetch/Shadow hand's meshes (the Kitchen needs neither). Their RECORD files are rewritten to match.
#
#   bash benchmarks/gpu_wheels.sh            # then: du -sh benchmarks/gpu_wheels
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=benchmarks/gpu_wheels
PYTHON=${PYTHON:-python3}
mkdir -p "$DEST/gl"
mapfile -t REQUIREMENTS < <(grep -v '^#' benchmarks/gpu_requirements.txt | grep -v '^$')
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DEST" "${REQUIREMENTS[@]}"

"$PYTHON" - "$DEST" <<'EOF'
"""Rewrite two wheels without folders the GPU check never imports, and their RECORD without those files."""
import sys, zipfile
from pathlib import Path

DROP = {"dm_control-": ("dm_control/locomotion/", "dm_control/suite/dog_assets/"),
        "mujoco-": ("mujoco/experimental/",),
        "gymnasium_robotics-": ("gymnasium_robotics/envs/assets/adroit_hand/resources/",
                                "gymnasium_robotics/envs/assets/stls/")}
for wheel in sorted(Path(sys.argv[1]).glob("*.whl")):
    prefixes = next((p for start, p in DROP.items() if wheel.name.startswith(start)), None)
    if prefixes is None:
        continue
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as target:
        names = [n for n in source.namelist() if not n.startswith(prefixes)]
        if len(names) == len(source.namelist()):
            continue  # slimmed already
        for name in names:
            data = source.read(name)
            if name.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = ("\n".join(l for l in lines if not l.startswith(prefixes)) + "\n").encode()
            target.writestr(source.getinfo(name), data)
    if slim.is_file() and slim.stat().st_size:
        before = wheel.stat().st_size
        slim.replace(wheel)
        print(f"slimmed {wheel.name}: {before / 2**20:.1f} -> {wheel.stat().st_size / 2**20:.1f} MiB")
    else:
        slim.unlink(missing_ok=True)
EOF

# The OpenGL loaders, as the device tool's notes fetch them (amd64, whatever this machine's processor).
if command -v apt-get >/dev/null; then
  APT=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  mkdir -p /tmp/amd64/partial
  apt-get "${APT[@]}" -qq update
  (cd "$DEST/gl" && apt-get "${APT[@]}" -qq download libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
else
  echo "apt-get not found: no OpenGL loaders downloaded (gpu_check.sh then relies on the machine's own)" >&2
fi
du -sh "$DEST"
