#!/usr/bin/env bash
# The test command of README.md (and of CI, through .ci/run): install the build dependencies,
# then build and test two configurations (docs/reliability.md):
#   1. tsan — the runtime under ThreadSanitizer; the tests labelled `tsan`;
#   2. asan — the whole tree (quiverc included) under AddressSanitizer + UBSan; every test, the
#             60 s libFuzzer run included.
# The Release preset (`default`) is for local runs and benchmarks: QUIVER_TEST_PRESETS=default.
# A failing part does not stop the others. The last preset's ctest summary is the last output;
# the exit status is non-zero when any part failed.
# QUIVER_TEST_PRESETS="default" (or "tsan default", ...) picks other parts, the last one last.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh || exit 1

presets=(${QUIVER_TEST_PRESETS:-tsan asan})
failed=()
stamp() { date +%s; }

run_part() {  # preset, whether it is the last part, then extra ctest arguments
  local preset=$1 last=$2
  shift 2
  local t0
  t0=$(stamp)
  echo "=== test.sh: ${preset}: configure, build, test ==="
  if ! cmake --preset "$preset"; then failed+=("${preset} (configure)"); return; fi
  if ! cmake --build --preset "$preset" -j2; then failed+=("${preset} (build)"); return; fi
  if [ "$last" = yes ]; then
    # Nothing may follow the last preset's summary but the exit status.
    if [ ${#failed[@]} -gt 0 ]; then echo "test.sh: FAILED before the ${preset} preset: ${failed[*]}"; fi
    ctest --preset "$preset" -j2 "$@"
    local rc=$?
    [ $rc -eq 0 ] && [ ${#failed[@]} -eq 0 ] && exit 0
    exit 1
  fi
  if ! ctest --preset "$preset" -j2 "$@"; then failed+=("${preset} (tests)"); fi
  echo "=== test.sh: ${preset}: $(( $(stamp) - t0 )) s ==="
}

for i in "${!presets[@]}"; do
  p=${presets[$i]}
  last=no
  [ "$i" -eq $(( ${#presets[@]} - 1 )) ] && last=yes
  case "$p" in
    tsan) run_part tsan "$last" -L tsan --no-tests=ignore ;;
    asan|asan-runtime|default) run_part "$p" "$last" ;;
    *) echo "test.sh: unknown preset '$p' in QUIVER_TEST_PRESETS (asan, asan-runtime, tsan, default)"; exit 2 ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then echo "test.sh: FAILED: ${failed[*]}"; exit 1; fi
