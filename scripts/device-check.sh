#!/usr/bin/env bash
# The one script run on the lent GPU machine (Ubuntu 24.04 with the NVIDIA driver; no compiler,
# no LLVM). It takes a build tree made on the build machine and carried over, runs every GPU
# test binary in it once with automatic backend detection (QUIVER_BACKEND unset: CUDA wins on
# that machine, loading the sm_90a cubin), once with QUIVER_BACKEND=vulkan and once on CUDA with
# only the sm_80 PTX (cuda_sm80: the kernels other NVIDIA GPUs run), and writes
#   $OUT/device-check.json   machine facts + per-binary, per-test pass/fail/skip with messages
#   $OUT/device-check.log    the full output of every run
# (two files: the device tool returns at most eight). Exit status 0 only when nothing failed.
#
# Usage: scripts/device-check.sh [BUILD_DIR]       (default: $QUIVER_BUILD_DIR, else build-h3)
#   QUIVER_DEVICE_TESTS="path/a_tests path/b_tests"  overrides which binaries run
#   QUIVER_DEVICE_CONFIGS="auto vulkan cuda"          overrides the backend configurations
#                                                     (cuda_sm80: CUDA with only the sm_80 PTX, JIT)
#   QUIVER_DEVICE_TIMEOUT=300                         seconds allowed per binary and configuration
#   QUIVER_DEVICE_SANITIZE="memcheck racecheck"       also run the kernel tests + op gate under compute-sanitizer
#   QUIVER_DEVICE_BENCH=1 (or a --filter string)      also run scripts/device-bench.sh (quiver-bench + torch)
#   QUIVER_DEVICE_CONFIGS=""                          skips the plain test runs (sanitizer or bench only)
#   QUIVER_DEVICE_LLM=0                               skips quiver-llm against torch at the Llama-3-8B shape
#                                                     (run when the build has bin/quiver-llm and torch imports)
# Run from the repository root. Carry the build tree and .gl (Debian packages of the Vulkan
# loader and glvnd, which the GPU machine's image lacks; unpacked below) with the call.
set -uo pipefail

BUILD_DIR=${1:-${QUIVER_BUILD_DIR:-build-h3}}
OUT=${OUT:-$PWD/device-check-out}
TIMEOUT=${QUIVER_DEVICE_TIMEOUT:-300}
CONFIGS=${QUIVER_DEVICE_CONFIGS-auto vulkan cuda_sm80}
mkdir -p "$OUT"
LOG="$OUT/device-check.log"
: >"$LOG"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

log() { printf '%s\n' "$*" | tee -a "$LOG"; }

if [ ! -d "$BUILD_DIR" ]; then
  log "device-check: build tree '$BUILD_DIR' not found (carry it with the call)"
  printf '{"ok": false, "error": "build tree %s not found"}\n' "$BUILD_DIR" >"$OUT/device-check.json"
  exit 2
fi

# ---- Vulkan loader: unpacked from the carried .debs; the NVIDIA ICD lives under /usr/local/nvidia.
if compgen -G ".gl/*.deb" >/dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" / 2>>"$LOG" || log "device-check: could not unpack $f"; done
  ldconfig
fi
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NVIDIA_ICD" ]; then export VK_DRIVER_FILES=$NVIDIA_ICD; fi

# ---- The Vulkan backend's pipeline cache in this run's own directory, as ctest does (docs/runtime.md).
export QUIVER_CACHE_DIR="${QUIVER_CACHE_DIR-$WORK/pipeline-cache}"

# ---- libquiver from the carried tree: its RPATHs name the build machine's directories.
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
LIBDIRS=$(find "$BUILD_DIR" -name 'libquiver*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export LD_LIBRARY_PATH="${LIBDIRS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- Machine facts.
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  if command -v nvidia-smi >/dev/null; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  else
    echo "gpu: nvidia-smi not found"
  fi
  echo "libcuda: $(ldconfig -p | grep -c 'libcuda.so.1') entries in ldconfig"
  echo "libvulkan: $(ldconfig -p | grep -c 'libvulkan.so.1') entries in ldconfig"
  echo "VK_DRIVER_FILES: ${VK_DRIVER_FILES:-<unset>}"
  echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
} >"$WORK/facts.txt"
cat "$WORK/facts.txt" | tee -a "$LOG"

# ---- Which binaries: the runtime and op-library test programs (those need no compiler).
if [ -n "${QUIVER_DEVICE_TESTS:-}" ]; then
  BINARIES=$QUIVER_DEVICE_TESTS
else
  BINARIES=$(find "$BUILD_DIR/tests/runtime" "$BUILD_DIR/tests/kernels" "$BUILD_DIR/tests/ops" -maxdepth 1 -type f -executable \
               -name 'quiver_*tests' ! -name 'quiver_hsa_*' ! -name 'quiver_vulkan_validation_tests' 2>/dev/null | sort)
# Left out: HSA (host-only unit tests) and the Khronos validation-layer tests (the layer is a
# Debian package of the build machine, not carried; they run in CI on lavapipe).
fi
if [ -z "$BINARIES" ]; then log "device-check: no test binaries under $BUILD_DIR/tests"; fi

# ---- Run each binary under each configuration; gtest writes one JSON report per run.
: >"$WORK/runs.tsv"
for bin in $BINARIES; do
  name=$(basename "$bin")
  for config in $CONFIGS; do
    # cuda_sm80 is about the kernels: the kernel suite and the op gate.
    if [ "$config" = cuda_sm80 ] && [ "$name" != quiver_kernel_tests ] && [ "$name" != quiver_ops_tests ]; then continue; fi
    report="$WORK/$name.$config.json"
    runlog="$WORK/$name.$config.log"
    export QUIVER_OPS_REPORT="$OUT/ops-numerics-$config.json"   # the op gate's errors (scripts/numerics-table.py)
    log ""
    log "=== $name [QUIVER_BACKEND=${config/auto/<unset>}]"
    start=$(date +%s.%N)
    if [ "$config" = auto ]; then
      (unset QUIVER_BACKEND; timeout "$TIMEOUT" "$bin" --gtest_output="json:$report") >"$runlog" 2>&1
    elif [ "$config" = cuda_sm80 ]; then   # the sm_80 PTX through the JIT: mma.sync kernels, no wgmma
      QUIVER_BACKEND=cuda QUIVER_CUDA_IMAGE="ptx sm_80" timeout "$TIMEOUT" "$bin" --gtest_output="json:$report" \
        >"$runlog" 2>&1
    else
      QUIVER_BACKEND=$config timeout "$TIMEOUT" "$bin" --gtest_output="json:$report" >"$runlog" 2>&1
    fi
    rc=$?
    end=$(date +%s.%N)
    cat "$runlog" >>"$LOG"
    log "=== $name [$config] exit status $rc"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$config" "$rc" "$report" "$runlog" \
      "$(echo "$end - $start" | awk '{print $1 - $3}')" >>"$WORK/runs.tsv"
  done
done

# ---- compute-sanitizer: memcheck and racecheck over the kernel tests and the op gate on
# CUDA. QUIVER_DEVICE_SANITIZE="memcheck racecheck" (default: none, the tools are slow); each run's
# summary line ("ERROR SUMMARY: N errors" / "RACECHECK SUMMARY: N hazards") lands in
# $OUT/sanitizer-<tool>-<binary>.log and in runs.tsv as its own configuration.
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in ${QUIVER_DEVICE_SANITIZE:-}; do
  if [ -z "$SANITIZER" ]; then log "device-check: compute-sanitizer not found"; break; fi
  for bin in $(echo "$BINARIES" | tr ' ' '\n' | grep -E 'quiver_(kernel|ops)_tests$'); do
    name=$(basename "$bin")
    runlog="$OUT/sanitizer-$tool-$name.log"
    log ""
    log "=== $name under compute-sanitizer --tool $tool (CUDA)"
    start=$(date +%s.%N)
    QUIVER_OPS_REPORT= QUIVER_BACKEND=cuda timeout "$TIMEOUT" "$SANITIZER" --tool "$tool" --error-exitcode 99 \
      "$bin" --gtest_output="json:$WORK/$name.$tool.json" >"$runlog" 2>&1
    rc=$?
    end=$(date +%s.%N)
    grep -E 'SUMMARY|PASSED|FAILED' "$runlog" | tail -n 5 | tee -a "$LOG"
    log "=== $name [$tool] exit status $rc"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "sanitizer-$tool" "$rc" "$WORK/$name.$tool.json" "$runlog" \
      "$(echo "$end - $start" | awk '{print $1 - $3}')" >>"$WORK/runs.tsv"
  done
done

# ---- quiver-llm on CUDA and on Vulkan against a torch reference of the same model, at the
# Llama-3-8B shape with BF16 weights (scripts/llama-bench-model.py, scripts/llama-torch-check.py):
# one run in runs.tsv, with a gtest-style report of one test whose failure is the check's output.
LLM="$BUILD_DIR/bin/quiver-llm"
if [ -n "$CONFIGS" ] && [ "${QUIVER_DEVICE_LLM:-1}" != 0 ] && [ -x "$LLM" ] && python3 -c "import torch" 2>/dev/null; then
  runlog="$WORK/quiver-llm.torch.log"
  report="$WORK/quiver-llm.torch.json"
  log ""
  log "=== quiver-llm against torch, Llama-3-8B shape, BF16"
  start=$(date +%s.%N)
  model="$WORK/llama3-8b-shape-bf16.gguf"
  prompt=1,128000,3923,374,279,6864,315,9822
  (python3 "$(dirname "$0")/llama-bench-model.py" "$model" --type BF16 &&
    for be in cuda vulkan; do
      timeout "$TIMEOUT" "$LLM" "$model" --backend $be --prompt-ids $prompt -n 8 --dump-logits "$WORK/logits-$be.f32" &&
        timeout "$TIMEOUT" "$LLM" "$model" --backend $be --prompt-ids $prompt -n 8 --token-prefill \
          --dump-logits "$WORK/logits-$be-token-prefill.f32" || exit 1
    done &&
    timeout "$TIMEOUT" python3 "$(dirname "$0")/llama-torch-check.py" "$model" --prompt-ids $prompt -n 8 \
      "$WORK/logits-cuda.f32" "$WORK/logits-vulkan.f32" \
      --token-prefill-dumps "$WORK/logits-cuda-token-prefill.f32" "$WORK/logits-vulkan-token-prefill.f32") >"$runlog" 2>&1
  rc=$?
  end=$(date +%s.%N)
  rm -f "$model"
  cat "$runlog" >>"$LOG"
  log "=== quiver-llm [torch reference] exit status $rc"
  python3 - "$runlog" "$rc" "$report" <<'PY'
import json, sys
text, rc = open(sys.argv[1], errors="replace").read(), int(sys.argv[2])
test = {"name": "Llama3_8BShapeBf16CudaAndVulkan", "status": "RUN", "result": "COMPLETED", "time": "0s"}
if rc != 0:
    test["failures"] = [{"failure": text[-3000:]}]
json.dump({"testsuites": [{"name": "QuiverLlmTorchReference", "testsuite": [test]}]}, open(sys.argv[3], "w"))
PY
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "quiver-llm" "torch-reference" "$rc" "$report" "$runlog" \
    "$(echo "$end - $start" | awk '{print $1 - $3}')" >>"$WORK/runs.tsv"
fi

# ---- Benchmarks (QUIVER_DEVICE_BENCH=1, or a quiver-bench --filter): quiver-bench, torch at the
# same shapes and Vulkan, through scripts/device-bench.sh, into $OUT/bench-*.json, vs-torch.*.
if [ -n "${QUIVER_DEVICE_BENCH:-}" ]; then
  filter=${QUIVER_DEVICE_BENCH#1}
  OUT="$OUT" bash "$(dirname "$0")/device-bench.sh" "$BUILD_DIR" "$filter" >>"$LOG" 2>&1 || log "device-check: bench failed"
fi

# ---- Summary JSON.
if ! command -v python3 >/dev/null; then
  log "device-check: python3 not found; writing exit statuses only"
  {
    echo '{"runs": ['
    awk -F'\t' 'BEGIN{sep=""} {printf "%s{\"binary\": \"%s\", \"config\": \"%s\", \"exit_status\": %s}", sep, $1, $2, $3; sep=",\n"}' "$WORK/runs.tsv"
    echo '], "ok": '"$(awk -F'\t' '$3 != 0 {bad=1} END{print bad ? "false" : "true"}' "$WORK/runs.tsv")"'}'
  } >"$OUT/device-check.json"
else
  python3 - "$WORK/runs.tsv" "$WORK/facts.txt" "$OUT/device-check.json" <<'PY'
import json, os, sys

runs_tsv, facts_txt, out_path = sys.argv[1:4]
facts = {}
for line in open(facts_txt):
    key, _, value = line.rstrip("\n").partition(": ")
    facts[key] = value

def skip_messages(runlog):
    # gtest's JSON report leaves the GTEST_SKIP() message out; the console output has it
    # between "[ RUN      ] name" and "[  SKIPPED ] name".
    messages, current, lines = {}, None, []
    for line in open(runlog, errors="replace"):
        if line.startswith("[ RUN      ] "):
            current, lines = line[13:].strip(), []
        elif line.startswith("[  SKIPPED ] ") and current and line[13:].startswith(current):
            messages[current] = "".join(l for l in lines if not l.rstrip().endswith(": Skipped")).strip()
            current = None
        elif current:
            lines.append(line)
    return messages

runs, totals = [], {"passed": 0, "failed": 0, "skipped": 0, "runs_without_report": 0}
for line in open(runs_tsv):
    binary, config, rc, report, runlog, seconds = line.rstrip("\n").split("\t")
    run = {"binary": binary, "config": config, "exit_status": int(rc),
           "seconds": round(float(seconds), 2), "tests": []}
    if os.path.exists(report):
        doc = json.load(open(report))
        skipped = skip_messages(runlog)
        for suite in doc.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if t.get("status") == "NOTRUN":
                    continue
                failures = [f.get("failure", "") for f in t.get("failures", [])]
                if failures:
                    status = "fail"
                elif t.get("result") == "SKIPPED":
                    status = "skip"
                else:
                    status = "pass"
                totals[{"pass": "passed", "fail": "failed", "skip": "skipped"}[status]] += 1
                entry = {"name": suite["name"] + "." + t["name"], "status": status, "time": t.get("time")}
                if failures:
                    entry["failures"] = failures
                if status == "skip":
                    entry["message"] = skipped.get(entry["name"], "")
                run["tests"].append(entry)
    else:
        # The binary crashed, timed out (124) or could not start (127: missing library).
        totals["runs_without_report"] += 1
        tail = open(runlog, errors="replace").read()[-4000:]
        run["error"] = "no gtest report (crash, timeout or missing library)"
        run["log_tail"] = tail
    runs.append(run)

# No runs at all is a failure, unless the plain test runs were switched off on purpose
# (QUIVER_DEVICE_CONFIGS="": a sanitizer- or bench-only call).
tests_off = os.environ.get("QUIVER_DEVICE_CONFIGS", "unset").strip() == ""
ok = totals["failed"] == 0 and totals["runs_without_report"] == 0 and \
     all(r["exit_status"] == 0 for r in runs) and (len(runs) > 0 or tests_off)
json.dump({"ok": ok, "machine": facts, "summary": totals, "runs": runs},
          open(out_path, "w"), indent=2)
print("device-check: %s — %d passed, %d failed, %d skipped, %d runs without a report"
      % ("OK" if ok else "FAILED", totals["passed"], totals["failed"], totals["skipped"],
         totals["runs_without_report"]))
sys.exit(0 if ok else 1)
PY
  status=$?
  exit $status
fi
awk -F'\t' '$3 != 0 {bad=1} END{exit bad ? 1 : 0}' "$WORK/runs.tsv"
