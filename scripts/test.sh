#!/usr/bin/env bash
# The test command of README.md (and of CI, through .ci/run): install the build dependencies,
# then build and test three configurations (docs/reliability.md):
#   1. tsan    — the runtime under ThreadSanitizer; the tests labelled `tsan`;
#   2. aarch64 — the runtime cross-built for aarch64 (Release, no sanitizer), its CPU kernel
#                suite and op gate run under qemu-aarch64 on fat binaries of the asan preset's
#                quiverc (built first, the rest of that preset in part 3);
#   3. asan    — the whole tree (quiverc included) under AddressSanitizer + UBSan; every test, the
#                60 s libFuzzer run included.
# The Release preset (`default`) is for local runs and benchmarks: QUIVER_TEST_PRESETS=default.
# A failing part does not stop the others. The last preset's ctest summary is the last output;
# the exit status is non-zero when any part failed.
# QUIVER_TEST_PRESETS="default" (or "tsan default", ...) picks other parts, the last one last.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh || exit 1

presets=(${QUIVER_TEST_PRESETS:-tsan aarch64 asan})
failed=()
stamp() { date +%s; }

run_part() {  # preset, whether it is the last part, then extra ctest arguments
  local preset=$1 last=$2
  shift 2
  local t0
  t0=$(stamp)
  echo "=== test.sh: ${preset}: configure, build, test ==="
  if ! cmake --preset "$preset" "${configure_args[@]}"; then failed+=("${preset} (configure)"); return; fi
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

# The aarch64 part compiles its fat binaries with the quiverc of a build-machine preset: asan's
# when the asan part is listed (quiverc is built here, the rest of that preset in its own part,
# so nothing is built twice), else default's.
run_aarch64_part() {  # whether it is the last part
  local host=default
  [[ " ${presets[*]} " == *" asan "* ]] && host=asan
  local t0
  t0=$(stamp)
  echo "=== test.sh: aarch64: the ${host} preset's quiverc ==="
  if ! cmake --preset "$host" || ! cmake --build --preset "$host" -j2 --target quiverc; then
    failed+=("aarch64 (quiverc of the ${host} preset)")
    return
  fi
  echo "=== test.sh: aarch64: ${host} quiverc: $(( $(stamp) - t0 )) s ==="
  configure_args=(-DQUIVER_HOST_QUIVERC="$PWD/build/${host}/bin/quiverc")
  run_part aarch64 "$1"
  configure_args=()
}

configure_args=()
for i in "${!presets[@]}"; do
  p=${presets[$i]}
  last=no
  [ "$i" -eq $(( ${#presets[@]} - 1 )) ] && last=yes
  case "$p" in
    tsan) run_part tsan "$last" -L tsan --no-tests=ignore ;;
    aarch64) run_aarch64_part "$last" ;;
    asan|asan-runtime|default) run_part "$p" "$last" ;;
    *) echo "test.sh: unknown preset '$p' in QUIVER_TEST_PRESETS (asan, asan-runtime, tsan, aarch64, default)"; exit 2 ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then echo "test.sh: FAILED: ${failed[*]}"; exit 1; fi
