#!/usr/bin/env bash
# Runs the libFuzzer target for SECONDS on a fresh corpus seeded with the given fat binaries
# and their manifests (and any other seed files as they are); fails on any crash, sanitizer
# report, leak, timeout or out-of-memory.
# usage: run_fuzz.sh FUZZER WORKDIR SECONDS SEED... [-- extra libFuzzer flags]
set -uo pipefail
fuzzer=$1 work=$2 seconds=$3
shift 3
seeds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do seeds+=("$1"); shift; done
[ $# -gt 0 ] && shift
rm -rf "$work"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
for f in "${seeds[@]}"; do
  [ -f "$f" ] || { echo "run_fuzz: seed $f does not exist"; exit 1; }
  # Anything but a fat binary (the repeat_*.txt inputs of qfb_fuzzer's read_repeated) is a seed as it is.
  case "$f" in *.qfb) ;; *) cp "$f" "$work/seeds/"; continue ;; esac
  base=$(basename "$f" .qfb)
  cp "$f" "$work/seeds/$base.qfb"
  # The manifest is a seed of its own (inputs not starting with 'Q' go to the manifest parser):
  # manifest_offset and manifest_size are the header's u64 fields at bytes 24 and 32.
  offset=$(od -An -t u8 -j 24 -N 8 "$f" | tr -d ' ')
  size=$(od -An -t u8 -j 32 -N 8 "$f" | tr -d ' ')
  tail -c +$((offset + 1)) "$f" | head -c "$size" > "$work/seeds/$base.json"
done
# -max_len: the largest seed rounded up to 4 KiB (at least 4 KiB), so every seed stays whole
# and mutations may grow it a little; longer inputs only parse slower. Extra flags after "--"
# come last and win. The dictionary holds the magic and the manifest's keys and values.
# No allocation stacks in ASan's bookkeeping (~25% of the run time on malloc-heavy JSON
# parsing); detection is unchanged, and re-running a reproducer prints the full report.
# Leak detection stays on for the reader whatever the caller set (the asan test preset turns it off
# for lavapipe, which the fuzzer never loads); later options win.
export ASAN_OPTIONS="malloc_context_size=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}:detect_leaks=1"
largest=$(stat -c %s "$work"/seeds/* | sort -n | tail -1)
max_len=$(( (largest + 4095) / 4096 * 4096 ))
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -max_len="$max_len" -print_final_stats=1 \
  -dict="$(dirname "$0")/qfb.dict" -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$work/seeds" 2>&1 |
  tee "$work/fuzz.log" | grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)'
rc=${PIPESTATUS[0]}
found=$(ls -A "$work/artifacts")
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
  echo "run_fuzz: FAILED (fuzzer exit status $rc); reproducers in $work/artifacts: ${found:-none}"
  echo "run_fuzz: reproduce with: $fuzzer $work/artifacts/<file>"
  exit 1
fi
echo "run_fuzz: OK, no crash, leak, timeout or out-of-memory in ${seconds} s"
