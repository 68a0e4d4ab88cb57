#!/usr/bin/env bash
# Seed 000 through the mount: `ls -l` and `stat` looping in the same mount while `cp`
# writes a large file must not make the mount take its own writes for somebody
# else's: foreign_changes in `nfsx stat MOUNTPOINT` stays 0, and the copy is exact.
# Then the same beside several writers of one file at once (buffered and O_DIRECT)
# with a reader of that file among them.
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
# start_pollers FILE: ls -l of its directory and stat of it in a loop until $WORK/done.
start_pollers() {
	rm -f "$WORK/done" "$WORK/polls"
	(
		n=0
		while [[ ! -e $WORK/done ]]; do
			ls -l "$(dirname "$1")" >/dev/null
			stat "$1" >/dev/null 2>&1 || true
			n=$((n + 1))
		done
		echo "$n" >"$WORK/polls"
	) &
	poller=$!
}

# stop_pollers: how many rounds they made (fails if none ran beside the writers).
stop_pollers() {
	touch "$WORK/done"
	wait "$poller"
	polls=$(cat "$WORK/polls")
	((polls > 0)) || fail "the pollers never ran beside the writers"
}

# expect_no_foreign_changes WHAT
expect_no_foreign_changes() {
	local counters foreign
	counters=$("$NFSX" stat "$WORK/m") || fail "nfsx stat $WORK/m"
	foreign=$(awk '/^foreign_changes/ { getline; print $1 }' <<<"$counters")
	[[ -n $foreign ]] || fail "no foreign_changes counter in: $counters"
	[[ $foreign == 0 ]] || fail "$1: the mount counted $foreign foreign changes with no other client ($polls polls)"
}

start_pollers "$WORK/m/dir/big.bin"
cp "$WORK/src.bin" "$WORK/m/dir/big.bin" || fail "cp into the mount"
stop_pollers
expect_no_foreign_changes "cp"
pass "cp of 128 MiB beside $polls rounds of ls -l and stat: 0 foreign changes"
cmp "$WORK/src.bin" "$WORK/m/dir/big.bin" || fail "the copy differs from its source"
cmp "$WORK/src.bin" "$EXPORT_DIR/dir/big.bin" || fail "the server's file differs from the source"
pass "the copy is exact, in the mount and on the server"

# Three writers of one file at once, each its own third: buffered, O_DIRECT and
# buffered again; a reader reads the file over and over while they write.
multi=$WORK/m/dir/multi.bin
truncate -s 96M "$multi" || fail "truncate through the mount"
start_pollers "$multi"
(while [[ ! -e $WORK/done ]]; do cat "$multi" >/dev/null || exit 1; done) &
reader=$!
writers=()
for part in 0:buffered 1:direct 2:buffered; do
	i=${part%%:*} flag=()
	[[ ${part#*:} == direct ]] && flag=(oflag=direct)
	dd if="$WORK/src.bin" of="$multi" bs=1M skip=$((i * 32)) seek=$((i * 32)) count=32 \
		conv=notrunc,fsync "${flag[@]}" status=none &
	writers+=($!)
done
for w in "${writers[@]}"; do wait "$w" || fail "a writer of multi.bin failed"; done
stop_pollers
wait "$reader" || fail "the reader of multi.bin failed"
expect_no_foreign_changes "three writers (buffered and O_DIRECT) and a reader of one file"
pass "three writers (one O_DIRECT) and a reader of one file beside $polls polls: 0 foreign changes"
cmp <(head -c $((96 << 20)) "$WORK/src.bin") "$multi" || fail "multi.bin differs from what was written"
cmp <(head -c $((96 << 20)) "$WORK/src.bin") "$EXPORT_DIR/dir/multi.bin" ||
	fail "the server's multi.bin differs from what was written"
pass "multi.bin is exact, in the mount and on the server"
unmount_nfsx "$WORK/m"
