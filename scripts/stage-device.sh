#!/usr/bin/env bash
# Copies what the GPU machine needs from a build tree into .device/build (git-ignored, small:
# libquiver, the GPU test binaries and their data files), to be carried with the device tool:
#   bash scripts/stage-device.sh build/default
#   device run: carry [".device", ".gl"], command: bash scripts/device-check.sh .device/build
# QUIVER_ANCHORS=FILE also copies h100_baseline.json, the torch / Triton reference figures
# quiver-bench prints ratios to (--anchors; they are kept outside the repository).
set -euo pipefail
BUILD=${1:-build/default}
DEST=.device/build
rm -rf "$DEST"
mkdir -p "$DEST/runtime" "$DEST/tests/runtime" "$DEST/tests/kernels" "$DEST/tests/ops"
cp -a "$BUILD"/runtime/libquiver.so* "$DEST/runtime/"
for d in tests/runtime tests/kernels tests/ops; do
  find "$BUILD/$d" -maxdepth 1 -type f \( -name 'quiver_*tests' -o -name '*.so' -o -name '*.spv' -o -name '*.qfb' \) \
    -exec cp {} "$DEST/$d/" \;
done
# quiver-bench and the anchor figures it compares with (when given).
mkdir -p "$DEST/bin"
[ -x "$BUILD/bin/quiver-bench" ] && cp "$BUILD/bin/quiver-bench" "$DEST/bin/"
if [ -n "${QUIVER_ANCHORS:-}" ]; then cp "$QUIVER_ANCHORS" "$DEST/h100_baseline.json"; fi
du -sh .device
