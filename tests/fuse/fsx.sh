#!/usr/bin/env bash
# The fsx-style exerciser (fsx.cc) through an nfsx mount of KIND's export: random
# reads, writes, truncates, mmap reads and writes, O_APPEND and O_DIRECT I/O on one
# file, every byte checked against a model. NFSX_FSX_OPS sets the length (default
# 50000), NFSX_FSX_SEED replays a run (the seed is printed).
#   fsx.sh nfsx|ganesha
KIND=${1:?usage: fsx.sh nfsx|ganesha}
TEST_NAME=fuse_fsx_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
mount_nfsx "$WORK/mnt" "$(url)"
ops=${NFSX_FSX_OPS:-50000}
if ! "$NFSX_FUSE_BIN/fsx" --ops "$ops" --save-model "$WORK/model" "$WORK/mnt/fsx.data" \
	>"$WORK/fsx.out" 2>&1; then
	cat "$WORK/fsx.out" >&2
	fail "fsx found a mismatch"
fi
cat "$WORK/fsx.out"
pass "fsx: $ops operations, zero mismatches"
unmount_nfsx "$WORK/mnt"
# What the server has must be what the last read saw: check through a fresh mount.
mount_nfsx "$WORK/mnt2" "$(url)"
cmp "$WORK/model" "$WORK/mnt2/fsx.data" || fail "after unmount, the server's file differs from the model"
pass "through a fresh mount, the file is what the model says ($(stat -c %s "$WORK/model") bytes)"
unmount_nfsx "$WORK/mnt2"
