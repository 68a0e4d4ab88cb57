#!/usr/bin/env bash
# nfsx-libnfs-load (Debian's libnfs, async, many requests in flight) against `nfsx serve`:
# several connections at once, sequential and random, 4 KiB and 1 MiB blocks, every block
# read back verified; then damage on disk that the driver must find.
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/interop/load_common.sh
source "$(dirname "$0")/load_common.sh"

EXPORT=$WORK/export
make_export "$EXPORT"
start_nfsx nfsx "$EXPORT"
LOAD_URL=$(url "$EXPORT")
LOAD_DIR=$EXPORT

run_load_scenarios
run_damage_scenario
stop_nfsx
