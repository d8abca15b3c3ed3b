#!/usr/bin/env bash
# The benchmark half of the GPU machine's run (scripts/device-check.sh is the test half):
# quiver-bench on CUDA (every case), torch at the same shapes (scripts/bench-vs-torch.py) and
# Vulkan (the memory-bound ops), JSON under $OUT.
#   device run: carry [".device", ".gl"], command: bash scripts/device-bench.sh .device/build [filter]
set -uo pipefail
BUILD_DIR=${1:-.device/build}
FILTER=${2:-}
OUT=${OUT:-/tmp/quiver-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUILD_DIR/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -d .gl ]; then   # the Vulkan loader and glvnd, which the GPU machine's image lacks (headless rendering)
  for deb in .gl/*.deb; do dpkg -x "$deb" / 2>/dev/null; done
fi
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
ANCHORS=()
[ -f "$BUILD_DIR/h100_baseline.json" ] && ANCHORS=(--anchors "$BUILD_DIR/h100_baseline.json")
BENCH="$BUILD_DIR/bin/quiver-bench"
"$BENCH" --backend cuda --json "$OUT/bench-cuda.json" "${ANCHORS[@]}" ${FILTER:+--filter "$FILTER"} 2>&1 | tee "$OUT/bench-cuda.txt"
# torch (and Triton's fused softmax) at the same shapes, in this same call: ratios, not stored anchors.
if python3 -c "import torch, triton" 2>/dev/null; then
  python3 scripts/bench-vs-torch.py "$OUT/bench-cuda.json" "$OUT/vs-torch.json" "$OUT/vs-torch.md" 2>&1 | tail -n 120
fi
if [ -z "$FILTER" ]; then
  # The memory-bound ops through Vulkan, for the goal table's Vulkan / CUDA ratio (docs/perf/h100.md).
  "$BENCH" --backend vulkan --json "$OUT/bench-vulkan.json" \
    --filter "f32 32768x4096|bf16 32768x4096|f32 8192x4096|bf16 8192x4096" 2>&1 | tee "$OUT/bench-vulkan.txt"
fi
