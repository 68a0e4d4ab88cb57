#!/usr/bin/env bash
# make test: the whole suite. Each stage prints a header; the first failure stops the run.
#   1. ctest in the main build: unit, integration and interop tests (libnfs-utils, Ganesha)
#   2. ASan+UBSan build of the unit and integration tests
#   3. TSan build of the threaded tests and of the FUSE mount (its tests against nfsx)
#   4. libFuzzer targets, a bounded time each (NFSX_FUZZ_SECONDS, default 20)
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
JOBS=$(nproc)

stage() { printf '\n==== %s ====\n' "$*"; }

stage "unit, integration and interop tests ($BUILD)"
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 600

# The sanitizer builds cover our own code; NFS-Ganesha adds nothing to that, so
# tests against it run only in the main build.
SAN_TARGETS=(base_test xdr_test rpc_test proto_test memory_fs_test local_fs_test server_test
  client_test client_integration_test fuse_test)
SAN_EXCLUDE='Ganesha'
stage "ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNFSX_SANITIZE=address \
  -DNFSX_BUILD_APPS=OFF >/dev/null
ninja -C build-asan -j "$JOBS" "${SAN_TARGETS[@]}"
ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 900 -E "$SAN_EXCLUDE"

stage "TSan"
# The mount is built here too: its request handlers run on many libfuse threads at
# once (a use-after-free between READDIR and RELEASEDIR was found this way).
TSAN_APP_TARGETS=(nfsx posix_suite fsx crash_writer)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNFSX_SANITIZE=thread \
  -DNFSX_BUILD_APPS=ON >/dev/null
ninja -C build-tsan -j "$JOBS" "${SAN_TARGETS[@]}" "${TSAN_APP_TARGETS[@]}"
# Tests of targets not built here (cli, bench, interop drivers) are left out by name, and
# hostile_clients, whose memory bound is the main build's (TSan's shadow memory is not).
TSAN_NOT_HERE='NOT_BUILT|^cli|^bench|^Bench|^libnfs|^many_connections|^exports_rules|^hostile_clients|^example|^fuse_|^crash_'
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -j "$JOBS" --timeout 900 \
  -E "$SAN_EXCLUDE|$TSAN_NOT_HERE"
# The FUSE scripts against our server, and the crash loop; a TSan report ends the mount
# process with an error, which the scripts see as a failed mount or a lost file.
TSAN_OPTIONS="halt_on_error=1 exitcode=66" NFSX_FSX_OPS=10000 \
  ctest --test-dir build-tsan --output-on-failure -j "$JOBS" --timeout 900 \
  -R '^fuse_(posix|fsx|two_mounts|umount_dirty|hardlink|pollers|teardown_busy)_nfsx$|^crash_loop_kill$'

stage "fuzzing"
fuzz/run.sh "${NFSX_FUZZ_SECONDS:-20}"

stage "all tests passed"
