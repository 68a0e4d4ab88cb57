#!/usr/bin/env bash
# crash_loop.sh kill|cut - nothing acknowledged is lost when the server dies or the
# network goes away under writers that keep writing and fsyncing.
#
# Three writers (tests/crash/crash_writer.cc) rewrite a file each, in passes of
# self-describing data, and log every fsync that succeeded: one through the library with
# buffered writes, one through the library with O_DIRECT, one through nfsx mount. The
# mounts are hard (the default): no call may fail, however long the server is away.
#
# kill: the server runs with --test-lose-unsynced-writes, so a restart loses what was
#   never synced as a power cut would (it becomes 0xDB). At a random moment after every
#   writer made progress the server gets SIGKILL; the writers are frozen, the server
#   restarted on the same ports, and each file checked on the server's disk against the
#   writer's last acknowledged fsync; then the writers go on. NFSX_CRASH_KILLS times
#   (default 10).
# cut: the writers reach the server through tests/crash/cut_proxy.py, which resets every
#   connection and refuses new ones, or silently drops everything, each for longer than
#   timeo x retrans; and a call or reply torn in the middle of its record, then a reset.
#   NFSX_CRASH_KILLS cuts, the three in turn (NFSX_CRASH_TORN=0: the first two only).
#
# At the end each writer fsyncs and closes, and its file must hold exactly what it wrote.
TEST_NAME=crash_loop_${1:?usage: crash_loop.sh kill|cut}
MODE=$1
source "$(dirname "$0")/../fuse/lib.sh"
WRITER=${NFSX_CRASH_WRITER:?set NFSX_CRASH_WRITER to the crash_writer binary}
ROUNDS=${NFSX_CRASH_KILLS:-10}
[[ $MODE == kill || $MODE == cut ]] || fail "unknown mode $MODE"
need_fuse
# memfs forgets everything at a restart; localfs handles survive it but need root.
((EUID == 0)) || skip "a server restart keeps its files only on the local backend, which needs root"

CUT_SECONDS=4
if [[ $MODE == kill ]]; then
	NFSX_SERVE_ARGS=(--test-lose-unsynced-writes)
fi
start_server nfsx srv
URL_OPTIONS=""
if [[ $MODE == cut ]]; then
	# timeo=5, retrans=1: "not responding" after 0.5 + 1 s, well inside a cut.
	python3 "$(dirname "$0")/cut_proxy.py" "$WORK/proxy.ports" "$WORK/cuts" "$CUT_SECONDS" \
		"$NFS_PORT" "$MOUNT_PORT" >"$WORK/proxy.log" 2>&1 &
	PROXY_PID=$!
	for _ in $(seq 200); do [[ -s $WORK/proxy.ports ]] && break; sleep 0.05; done
	[[ -s $WORK/proxy.ports ]] || fail "the proxy did not start"
	read -r pnfs pmnt <"$WORK/proxy.ports"
	URL_QUERY="version=3&nfsport=$pnfs&mountport=$pmnt"
	URL_OPTIONS="timeo=5&retrans=1"
	touch "$WORK/cuts"
fi

STOP=$WORK/stop
WRITERS=(lib-buffered lib-direct mount)
declare -A PID
start_writer() {
	local name=$1
	shift
	"$WRITER" "$@" --log "$WORK/$name.acks" --stop "$STOP" --seed "$RANDOM" \
		>"$WORK/$name.log" 2>&1 &
	PID[$name]=$!
}
start_writer lib-buffered --lib "$(url "" "$URL_OPTIONS")" lib-buffered.bin
start_writer lib-direct --lib "$(url "" "$URL_OPTIONS")" lib-direct.bin --direct
mount_nfsx "$WORK/m" "$(url "" "$URL_OPTIONS")"
DAEMON=$(daemon_pid "$WORK/m")
start_writer mount --path "$WORK/m/mount.bin"

before_cleanup_crash() {
	kill -CONT "${PID[@]}" "$DAEMON" 2>/dev/null || true
	touch "$STOP"
	[[ -n ${PROXY_PID:-} ]] && kill "$PROXY_PID" 2>/dev/null || true
}
eval "$(declare -f before_cleanup | sed '1s/before_cleanup/unmount_all/')"
before_cleanup() {
	before_cleanup_crash
	unmount_all
}

acks() { grep -c '^A' "$WORK/$1.acks" 2>/dev/null || true; }
# The last acknowledged state of a writer ("PASS POS"); "1 0" before its first fsync.
last_ack() {
	local line
	line=$(grep '^A' "$WORK/$1.acks" 2>/dev/null | tail -n 1 || true)
	[[ -n $line ]] && echo "${line#A }" || echo "1 0"
}
alive_or_fail() {
	kill -0 "${PID[$1]}" 2>/dev/null && return 0
	fail "writer $1 ended early: $(tail -n 3 "$WORK/$1.log" "$WORK/$1.acks" 2>/dev/null | tr '\n' ' ')"
}
# wait_progress: until every writer has had one more fsync succeed than in $1 (an
# associative array's name); a writer that cannot go on after the server came back fails.
wait_progress() {
	local -n before=$1
	local w deadline=$((SECONDS + 180))
	for w in "${WRITERS[@]}"; do
		while (($(acks "$w") <= ${before[$w]:-0})); do
			alive_or_fail "$w"
			((SECONDS < deadline)) || fail "writer $w made no progress for 180 s (round $round)"
			sleep 0.05
		done
	done
}

declare -A SEEN
lost_total=0
for round in $(seq "$ROUNDS"); do
	for w in "${WRITERS[@]}"; do SEEN[$w]=$(acks "$w"); done
	wait_progress SEEN
	for w in "${WRITERS[@]}"; do SEEN[$w]=$(acks "$w"); done
	# A random moment: somewhere in the next writes and fsyncs.
	sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
	if [[ $MODE == kill ]]; then
		kill -KILL "$NFSX_PID"
		wait "$NFSX_PID" 2>/dev/null || true
		SERVERS=("${SERVERS[@]/"nfsx $NFSX_PID"/}")
		# Nothing can be acknowledged any more; freeze the writers so that the files hold
		# still while they are checked.
		kill -STOP "${PID[@]}" "$DAEMON"
		declare -A STATE
		for w in "${WRITERS[@]}"; do STATE[$w]=$(last_ack "$w"); done
		# The journal the restart replays (and empties), kept for a failure's diagnosis.
		cp "$WORK"/srv.state/unsynced-*.journal "$WORK/journal.$round" 2>/dev/null || true
		start_nfsx srv "$NFS_PORT" "$MOUNT_PORT"
		lost=$(grep -o 'testing crashes: [0-9]* ranges' "$WORK/srv.log" | tail -n 1 | grep -o '[0-9]*' || echo 0)
		lost_total=$((lost_total + lost))
		for w in "${WRITERS[@]}"; do
			file=$EXPORT_DIR/$w.bin
			"$WRITER" --verify "$file" --state "${STATE[$w]}" --loose >"$WORK/verify.out" 2>&1 ||
				fail "kill $round: $w lost acknowledged data: $(head -n 5 "$WORK/verify.out")"
		done
		kill -CONT "${PID[@]}" "$DAEMON"
		note "kill $round: acknowledged data intact (${STATE[lib-buffered]} / ${STATE[lib-direct]} / ${STATE[mount]}), $lost unsynced ranges lost"
	else
		cuts_before=$(wc -l <"$WORK/cuts")
		if [[ ${NFSX_CRASH_TORN:-1} == 1 ]]; then
			case $((round % 3)) in
			0) kill -USR2 "$PROXY_PID" ;;
			1) kill -USR1 "$PROXY_PID" ;;
			2) kill -HUP "$PROXY_PID" ;;
			esac
		elif ((round % 2)); then
			kill -USR1 "$PROXY_PID"
		else
			kill -USR2 "$PROXY_PID"
		fi
		deadline=$((SECONDS + 60))
		while (($(wc -l <"$WORK/cuts") <= cuts_before)); do
			kill -0 "$PROXY_PID" 2>/dev/null || fail "the proxy died: $(tail -n 3 "$WORK/proxy.log")"
			((SECONDS < deadline)) || fail "cut $round did not end"
			sleep 0.05
		done
		note "cut $round ($(tail -n 1 "$WORK/cuts")) over"
	fi
done
if [[ $MODE == kill ]]; then
	pass "$ROUNDS kills with every acknowledged byte in place"
	note "$lost_total unsynced ranges were lost by the restarts and had to be resent"
else
	pass "$ROUNDS cuts, each outlasted by every writer"
fi

touch "$STOP"
for w in "${WRITERS[@]}"; do
	status=0
	wait "${PID[$w]}" || status=$?
	((status == 0)) || fail "writer $w failed: $(tail -n 3 "$WORK/$w.log")"
	final=$(grep '^D' "$WORK/$w.acks" | tail -n 1)
	[[ -n $final ]] || fail "writer $w ended without closing its file"
	"$WRITER" --verify "$EXPORT_DIR/$w.bin" --state "${final#D }" >"$WORK/verify.out" 2>&1 ||
		fail "$w: after close: $(head -n 5 "$WORK/verify.out")"
done
pass "after close every file holds exactly what its writer wrote"
if [[ $MODE == cut ]]; then
	for log in mount-m lib-buffered lib-direct; do
		n=$(grep -c "not responding" "$WORK/$log.log" || true)
		((n > 0)) || fail "$log never logged 'server not responding'"
		grep -q "server .* OK" "$WORK/$log.log" || fail "$log never logged that the server is OK again"
		note "$log: 'not responding' $n times in $ROUNDS cuts, each followed by 'OK'"
	done
	pass "the mount and the library logged 'not responding' and 'OK'"
fi
unmount_nfsx "$WORK/m"
