#!/usr/bin/env bash
# The test command of README.md (and of CI, through .ci/run): install the build dependencies,
# then build and test three configurations (docs/reliability.md):
#   1. asan    — the whole tree, compiler included, under AddressSanitizer + UBSan; every test;
#   2. tsan    — the runtime under ThreadSanitizer; the tests labelled `tsan`;
#   3. default — the Release build; every test, the 60 s libFuzzer run included.
# A failing part does not stop the others. The default preset's ctest summary is the last
# output; the exit status is non-zero when any part failed.
# QUIVER_TEST_PRESETS="default" (or "asan default", ...) runs fewer parts, for a quicker local run.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh || exit 1

presets=${QUIVER_TEST_PRESETS:-asan tsan default}
failed=()
stamp() { date +%s; }

run_part() {  # preset, then extra ctest arguments
  local preset=$1
  shift
  local t0
  t0=$(stamp)
  echo "=== test.sh: ${preset}: configure, build, test ==="
  if ! cmake --preset "$preset"; then failed+=("${preset} (configure)"); return; fi
  if ! cmake --build --preset "$preset" -j2; then failed+=("${preset} (build)"); return; fi
  if [ "$preset" = default ]; then
    # Nothing may follow the default preset's summary but the exit status.
    if [ ${#failed[@]} -gt 0 ]; then echo "test.sh: FAILED before the default preset: ${failed[*]}"; fi
    ctest --preset default -j2 "$@"
    local rc=$?
    [ $rc -eq 0 ] && [ ${#failed[@]} -eq 0 ] && exit 0
    exit 1
  fi
  if ! ctest --preset "$preset" -j2 "$@"; then failed+=("${preset} (tests)"); fi
  echo "=== test.sh: ${preset}: $(( $(stamp) - t0 )) s ==="
}

for p in $presets; do
  case "$p" in
    asan) run_part asan ;;
    tsan) run_part tsan -L tsan --no-tests=ignore ;;
    default) ;;  # always last, below
    *) echo "test.sh: unknown preset '$p' in QUIVER_TEST_PRESETS (asan, tsan, default)"; exit 2 ;;
  esac
done
case " $presets " in
  *" default "*) run_part default ;;
esac
if [ ${#failed[@]} -gt 0 ]; then echo "test.sh: FAILED: ${failed[*]}"; exit 1; fi
