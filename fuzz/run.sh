#!/usr/bin/env bash
# Builds the libFuzzer targets with clang 19 or newer, seeds them (fuzz/make_seeds.py) and
# runs each for SECONDS (default 30), with fuzz/TARGET.dict as its dictionary if there is one.
#
#   fuzz/run.sh [SECONDS]        e.g. fuzz/run.sh 3600 for an hour per target
#
# Exit status: 0 all targets ran clean, 1 a target crashed or broke an invariant (the
# reproducer is in BUILD/fuzz-artifacts/), 77 skipped because no suitable clang is there,
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
targets=(record_marking_fuzz rpc_call_fuzz nfs3_reply_fuzz server_dispatch_fuzz exports_parser_fuzz)

# The fuzzers link the server, which uses std::expected. Debian 12's libstdc++ 12 defines it
# only for compilers that report C++20 concepts at level 202002 (__cpp_concepts), which clang
# does from 19 on; clang 14 and 16 do not. So: clang-19 (scripts/install-deps.sh), else a
# newer versioned clang, else plain clang; the first that compiles std::expected and links
# libFuzzer (clang without its runtime, Debian's libclang-rt-NN-dev, cannot).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/probe.cc" <<'PROBE'
#include <expected>
extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long size) {
  std::expected<unsigned long, int> e = size;
  return static_cast<int>(*e * 0);
}
PROBE
cc='' cxx=''
for candidate in clang++-19 clang++-20 clang++-21 clang++-22 clang++; do
  command -v "$candidate" >/dev/null && command -v "${candidate/clang++/clang}" >/dev/null ||
    continue
  if "$candidate" -std=c++23 -fsanitize=fuzzer,address,undefined "$probe/probe.cc" \
    -o "$probe/probe" 2>"$probe/err-$candidate"; then
    cxx=$candidate cc=${candidate/clang++/clang}
    break
  fi
done
if [[ -z $cxx ]]; then
  echo "fuzz/run.sh: no clang with std::expected and libFuzzer (install clang-19 and" \
    "libclang-rt-19-dev); fuzzing skipped" >&2
  for err in "$probe"/err-*; do
    [[ -e $err ]] || continue
    echo "${err##*/err-}:" >&2
    head -5 "$err" >&2
  done
  exit 77
fi

echo "fuzz/run.sh: building with $cxx" >&2
CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -G Ninja -DNFSX_BUILD_FUZZ=ON \
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
  dict=()
  [[ -f $root/fuzz/$target.dict ]] && dict=(-dict="$root/fuzz/$target.dict")
  status=0
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -error_exitcode=1 -print_final_stats=1 "${dict[@]}" \
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
