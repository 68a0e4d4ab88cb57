#!/usr/bin/env bash
# Two mounts of one export (two_mounts.py): close-to-open, attribute timeouts, mmap
# readers seeing another client's appends and overwrites, names appearing and going.
#   two_mounts.sh nfsx|ganesha
KIND=${1:?usage: two_mounts.sh nfsx|ganesha}
TEST_NAME=fuse_two_mounts_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
mount_nfsx "$WORK/a" "$(url)" -o actimeo=1
mount_nfsx "$WORK/b" "$(url)" -o actimeo=1
if ! python3 "$(dirname "$0")/two_mounts.py" "$WORK/a" "$WORK/b" 1 >"$WORK/two_mounts.out" 2>&1; then
	cat "$WORK/two_mounts.out" >&2
	fail "$(grep -E '^FAIL' "$WORK/two_mounts.out" || tail -n 1 "$WORK/two_mounts.out")"
fi
pass "$(tail -n 1 "$WORK/two_mounts.out")"
inv=$("$NFSX" mountstat "$WORK/b" | awk '/^foreign_changes/ {getline; print $2}')
((inv > 0)) || fail "mount B sent the kernel no invalidation"
pass "mount B told the kernel to drop stale data $inv times"
unmount_nfsx "$WORK/a"
unmount_nfsx "$WORK/b"
