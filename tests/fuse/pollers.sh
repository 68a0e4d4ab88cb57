#!/usr/bin/env bash
# Seed 000 through the mount: `ls -l` and `stat` looping in the same mount while `cp`
# writes a large file must not make the mount take its own writes for somebody
# else's: foreign_changes in `nfsx stat MOUNTPOINT` stays 0, and the copy is exact.
# actimeo=0 sends every stat to the server, so the pollers' replies overlap the WRITEs.
#   pollers.sh nfsx|ganesha
KIND=${1:?usage: pollers.sh nfsx|ganesha}
TEST_NAME=fuse_pollers_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
mount_nfsx "$WORK/m" "$(url "" actimeo=0)"
head -c $((128 << 20)) /dev/urandom >"$WORK/src.bin"
mkdir "$WORK/m/dir"
(
	n=0
	while [[ ! -e $WORK/done ]]; do
		ls -l "$WORK/m/dir" >/dev/null
		stat "$WORK/m/dir/big.bin" >/dev/null 2>&1 || true
		n=$((n + 1))
	done
	echo "$n" >"$WORK/polls"
) &
poller=$!
cp "$WORK/src.bin" "$WORK/m/dir/big.bin" || fail "cp into the mount"
touch "$WORK/done"
wait "$poller"
polls=$(cat "$WORK/polls")
((polls > 0)) || fail "the pollers never ran beside cp"
counters=$("$NFSX" stat "$WORK/m") || fail "nfsx stat $WORK/m"
foreign=$(awk '/^foreign_changes/ { getline; print $1 }' <<<"$counters")
[[ -n $foreign ]] || fail "no foreign_changes counter in: $counters"
[[ $foreign == 0 ]] || fail "the mount counted $foreign foreign changes with no other client ($polls polls)"
pass "cp of 128 MiB beside $polls rounds of ls -l and stat: 0 foreign changes"
cmp "$WORK/src.bin" "$WORK/m/dir/big.bin" || fail "the copy differs from its source"
cmp "$WORK/src.bin" "$EXPORT_DIR/dir/big.bin" || fail "the server's file differs from the source"
pass "the copy is exact, in the mount and on the server"
unmount_nfsx "$WORK/m"
