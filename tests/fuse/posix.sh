#!/usr/bin/env bash
# The POSIX behaviour suite (posix_suite.cc) on an nfsx mount of KIND's export, then
# the mount's counters (nfsx mountstat) and a clean nfsx umount.
#   posix.sh nfsx|ganesha
KIND=${1:?usage: posix.sh nfsx|ganesha}
TEST_NAME=fuse_posix_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
mount_nfsx "$WORK/mnt" "$(url)"
mkdir "$WORK/mnt/suite"
if ! "$NFSX_FUSE_BIN/posix_suite" "$WORK/mnt/suite" >"$WORK/posix_suite.out" 2>&1; then
	grep -E "^FAIL" "$WORK/posix_suite.out" >&2 || tail -20 "$WORK/posix_suite.out" >&2
	fail "posix_suite: $(tail -n 1 "$WORK/posix_suite.out")"
fi
pass "posix_suite: $(tail -n 1 "$WORK/posix_suite.out")"

"$NFSX" mountstat "$WORK/mnt" >"$WORK/mountstat.out" || fail "nfsx mountstat"
grep -q "^Client nfs v3:" "$WORK/mountstat.out" || fail "mountstat: no nfsstat table"
writes=$(awk '/^read +write/ {getline; print $3}' "$WORK/mountstat.out")
((writes > 0)) || fail "mountstat: no WRITE counted: $(cat "$WORK/mountstat.out")"
pass "nfsx mountstat counts the calls ($writes WRITEs)"
"$NFSX" stat "$WORK/mnt" >"$WORK/stat.out" || fail "nfsx stat MOUNTPOINT"
grep -q "^Client nfs v3:" "$WORK/stat.out" || fail "nfsx stat MOUNTPOINT: $(cat "$WORK/stat.out")"
pass "nfsx stat MOUNTPOINT prints the mount's nfsstat table"
unmount_nfsx "$WORK/mnt"
pass "nfsx umount"
