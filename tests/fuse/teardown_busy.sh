#!/usr/bin/env bash
# A mount taken down while it is busy: the daemon gets SIGTERM while READs and
# read-ahead (a reader), write-back (a buffered writer), COMMITs (a writer that
# fsyncs) and cache invalidations (another client changes the file being read, so
# the mount tells the kernel to drop its pages) are all in flight. The daemon must
# end by itself, with no crash and no sanitizer report in its log (the TSan stage
# runs this), round after round; everything fsync'd before the signal is on the
# server. Rounds: NFSX_TEARDOWN_ROUNDS (default 6). Under TSan this found a daemon that
# never ended: a notification blocked on a page lock whose READ nobody answered any more.
#   teardown_busy.sh nfsx|ganesha
KIND=${1:?usage: teardown_busy.sh nfsx|ganesha}
TEST_NAME=fuse_teardown_busy_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
ROUNDS=${NFSX_TEARDOWN_ROUNDS:-6}
head -c $((8 << 20)) /dev/urandom >"$EXPORT_DIR/read.bin"
head -c $((1 << 20)) /dev/urandom >"$WORK/chunk.bin"
# The other client: a second mount, whose writes reach the server through NFS (a
# server with an attribute cache of its own, as Ganesha has, would not see writes
# made to its export directory behind its back).
mount_nfsx "$WORK/other" "$(url)"

# until_true SECONDS CMD...: polls CMD every 10 ms until it succeeds; false at the deadline.
until_true() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.01
	done
}
bigger_than() { [[ -e $1 ]] && (($(stat -c %s "$1") > $2)); }
count_at_least() { [[ -s $1 ]] && (($(wc -l <"$1") >= $2)); }
foreign_seen() {
	"$NFSX" stat "$m" 2>/dev/null | awk '/^foreign_changes/ { getline; seen = $1 > 0 } END { exit !seen }'
}

# A failure leaves this round's daemon and its I/O behind: kill the daemon (the kernel
# then fails the requests it holds) and the jobs, or they would keep ctest waiting.
# (Its pid is not in "pid": the frame's _cleanup has a local of that name, which
# before_cleanup would see instead, so that the daemon was never killed.)
eval "$(declare -f before_cleanup | sed '1s/before_cleanup/unmount_all/')"
before_cleanup() {
	if [[ -n ${daemon:-} ]] && kill -0 "$daemon" 2>/dev/null; then
		# Where it hangs: every thread's kernel stack (a notification blocked on a page
		# lock shows here) and, when gdb is there, its user stack.
		for t in /proc/"$daemon"/task/*; do
			echo "--- thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)):"
			head -n 4 "$t/stack" 2>/dev/null
		done >&2
		command -v gdb >/dev/null &&
			timeout -s KILL 60 gdb -p "$daemon" -batch -ex "thread apply all bt" 2>/dev/null | grep -E '^(Thread|#)' >&2
		kill -KILL "$daemon" 2>/dev/null
	fi
	touch "$WORK/stop"
	[[ -n ${jobs[*]:-} ]] && kill -KILL "${jobs[@]}" 2>/dev/null
	unmount_all
}

invalidating_rounds=0
for round in $(seq "$ROUNDS"); do
	rm -f "$WORK/stop" "$WORK/synced"
	# actimeo=0: every read asks the server, so the other client's writes are seen at once.
	m=$WORK/r$round log=$WORK/mount-r$round.log  # mount_nfsx logs there
	mount_nfsx "$m" "$(url "" actimeo=0)"
	daemon=$(daemon_pid "$m") || fail "no daemon pid for the mount"
	jobs=()
	# Reader: sequential reads with read-ahead, again and again.
	(while [[ ! -e $WORK/stop ]]; do cat "$m/read.bin" >/dev/null 2>&1 || exit 0; done) &
	jobs+=($!)
	# Buffered writer: write-back in flight.
	(for i in $(seq 256); do
		[[ -e $WORK/stop ]] && break
		cat "$WORK/chunk.bin" || break
	done >"$m/w$round.bin" 2>/dev/null) &
	jobs+=($!)
	# Syncing writer: a line per fsync that returned, so the line's bytes are on the server.
	python3 - "$m/s$round.bin" "$WORK/stop" "$WORK/synced" <<'PY' 2>/dev/null &
import os, sys
path, stop, synced = sys.argv[1:]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
with open(synced, "a", buffering=1) as log:
    for i in range(100000):
        if os.path.exists(stop):
            break
        block = (b"%08d" % i) * 8192
        try:
            os.pwrite(fd, block, i * len(block))
            os.fsync(fd)
        except OSError:
            break
        log.write(f"{i}\n")
PY
	jobs+=($!)
	# The other client changes the file under the reader.
	(while [[ ! -e $WORK/stop ]]; do
		dd if=/dev/urandom of="$WORK/other/read.bin" bs=4k count=1 seek=$((RANDOM % 2048)) \
			conv=notrunc status=none
		sleep 0.02
	done) &
	jobs+=($!)

	until_true 120 bigger_than "$EXPORT_DIR/w$round.bin" $((1 << 20)) ||
		fail "round $round: the buffered writer's data never reached the server"
	until_true 120 count_at_least "$WORK/synced" 3 || fail "round $round: no fsync returned"
	foreign_seen && invalidating_rounds=$((invalidating_rounds + 1))

	kill -TERM "$daemon" || fail "round $round: the mount daemon was gone before SIGTERM"
	until_true 120 eval '! kill -0 '"$daemon"' 2>/dev/null' ||
		fail "round $round: the mount daemon did not end within 120 s of SIGTERM"
	daemon=
	touch "$WORK/stop"
	for j in "${jobs[@]}"; do wait "$j" || true; done
	MOUNTS=("${MOUNTS[@]/"$m"/}")
	if grep -q " $(realpath "$m") " /proc/self/mountinfo; then
		fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || fail "cannot take $WORK/m down"
	fi
	if grep -Eq "Sanitizer|runtime error:|Segmentation fault|terminate called" "$log"; then
		fail "round $round: the mount daemon reported: $(grep -Em3 "Sanitizer|runtime error:|Segmentation fault|terminate called" "$log")"
	fi
	# What the syncing writer was told is safe is on the server.
	last=$(tail -n 1 "$WORK/synced")
	python3 - "$EXPORT_DIR/s$round.bin" "$last" <<'PY' || fail "round $round: fsync'd data is missing on the server"
import sys
path, last = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
for i in range(last + 1):
    want = (b"%08d" % i) * 8192
    got = data[i * len(want):(i + 1) * len(want)]
    if got != want:
        sys.exit(f"block {i} of {last + 1} fsync'd blocks differs on the server")
PY
	note "round $round: daemon ended under load, $((last + 1)) fsync'd blocks on the server"
done
unmount_nfsx "$WORK/other"
pass "$ROUNDS mounts taken down by SIGTERM with reads, write-back, COMMITs and invalidations in flight"
# Without invalidations in flight the rounds would not test the notification thread.
((invalidating_rounds > 0)) || fail "no round saw the other client's change before the signal"
pass "$invalidating_rounds of $ROUNDS rounds had invalidations under way at the signal"
