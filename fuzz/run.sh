#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, seeds them from the captured wire vectors and
# runs each for SECONDS (default 30).
#
#   fuzz/run.sh [SECONDS]
#
# Exit status: 0 all targets ran clean, 1 a target crashed or broke an invariant (the
# reproducer is in BUILD/fuzz-artifacts/), 77 skipped because clang/libFuzzer is missing,
# anything else: the build failed. BUILD is build-fuzz/ in the source tree, or
# $NFSX_FUZZ_BUILD_DIR. The working corpus in BUILD/fuzz-corpus/ grows across runs.
# Reproduce a failure with: BUILD/fuzz/TARGET BUILD/fuzz-artifacts/TARGET-crash-...
set -euo pipefail

seconds=${1:-30}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NFSX_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=(record_marking_fuzz rpc_call_fuzz nfs3_reply_fuzz)

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
  echo "fuzz/run.sh: clang/clang++ not found; fuzzing skipped" >&2
  exit 77
fi
# clang without its runtime (Debian: libclang-rt-NN-dev) cannot link -fsanitize=fuzzer.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/probe.cc"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cc" -o "$probe/probe" \
  2>"$probe/err"; then
  echo "fuzz/run.sh: clang++ cannot link libFuzzer (install libclang-rt-dev); fuzzing skipped:" >&2
  cat "$probe/err" >&2
  exit 77
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DNFSX_BUILD_FUZZ=ON \
  -DNFSX_BUILD_APPS=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}"

seeds=$build/fuzz-seeds
rm -rf "$seeds"
python3 "$root/fuzz/make_seeds.py" --out "$seeds"

mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
failed=0
for target in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$target
  log=$build/fuzz-logs/$target.log
  mkdir -p "$corpus" "$seeds/$target"
  # libFuzzer's own error exit code is 77, our "skipped": make a failure 1. New inputs go to
  # the first directory (the corpus); the seed directory is only read.
  status=0
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -error_exitcode=1 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" "$corpus" "$seeds/$target" \
    >"$log" 2>&1 || status=$?
  # The log may lack any of these (a crash during start-up): no match is not an error.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$( (grep -oE '^#[0-9]+[[:space:]]+[A-Z]+ +cov: [0-9]+ ft: [0-9]+' "$log" || true) |
    tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+)/\1 edges, \2 features/')
  corp=$(find "$corpus" -type f | wc -l)
  if ((status == 0)); then
    echo "$target: OK, ${execs:-?} execs in ${seconds}s, coverage ${cov:-?}, corpus $corp"
  else
    failed=1
    echo "$target: FAILED (exit $status) after ${execs:-?} execs; log $log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|invariant violated|RecordReader invariant)|Test unit' \
      "$log" | head -5 | sed 's/^/    /' || true
  fi
done
exit "$failed"
