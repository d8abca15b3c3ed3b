#!/usr/bin/env bash
# Profiler evidence for docs/perf/NOTES.md: Nsight Compute's speed-of-light and memory
# sections for one launch of each named op-library kernel, run through quiver-bench on CUDA.
#   device run (carry .device .gl): bash scripts/device-ncu.sh .device/build "softmax_bf16:softmax bf16 32768x4096" ...
# Each argument is KERNEL_SYMBOL_REGEX:QUIVER_BENCH_FILTER; output $OUT/ncu-<symbol>.txt.
set -uo pipefail
BUILD_DIR=${1:-.device/build}
shift
OUT=${OUT:-/tmp/quiver-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BUILD_DIR/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "device-ncu: ncu not found"; exit 2; }
for spec in "$@"; do
  kernel=${spec%%:*}
  filter=${spec#*:}
  "$NCU" -k "regex:^${kernel}\$" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy --section WarpStateStats \
    "$BUILD_DIR/bin/quiver-bench" --backend cuda --filter "$filter" --iters 3 --warmup 1 --warm-ms 0 --rotate-mb 1 \
    >"$OUT/ncu-$kernel.txt" 2>&1
  echo "== $kernel ($filter): exit $?"
  grep -E 'Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy' "$OUT/ncu-$kernel.txt" | head -12
done
