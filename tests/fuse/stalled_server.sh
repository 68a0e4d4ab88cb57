#!/usr/bin/env bash
# A hard mount whose server stops answering (SIGSTOP): a process blocked on the
# mount dies at SIGKILL and gets EINTR at a caught signal (SIGINT) within a second,
# as with the kernel client, and waits on through a SIGSTOP and SIGCONT; the mount logs "not
# responding" once, and once the server resumes it logs "OK" and carries on with
# nothing lost.
TEST_NAME=fuse_stalled_server
source "$(dirname "$0")/lib.sh"
need_fuse
start_server nfsx srv
SERVER_PID=${SERVERS[0]#nfsx }

# The server must run again before the mounts are taken down at exit.
eval "$(declare -f before_cleanup | sed '1s/before_cleanup/unmount_all/')"
before_cleanup() {
	kill -CONT "$SERVER_PID" 2>/dev/null || true
	unmount_all
}

# wait_blocked PID: returns once PID waits inside a FUSE request.
wait_blocked() {
	local w
	for _ in $(seq 600); do
		w=$(cat "/proc/$1/wchan" 2>/dev/null || true)
		[[ $w == *fuse* || $w == request_wait_answer ]] && return 0
		kill -0 "$1" 2>/dev/null || fail "pid $1 exited before it blocked"
		sleep 0.05
	done
	fail "pid $1 never blocked in the mount (wchan '$w')"
}

# gone_within SECONDS PID: whether PID exits within SECONDS of the call, by the
# clock (prints how long it took).
gone_within() {
	local start=$EPOCHREALTIME took
	while :; do
		took=$(bc <<<"$EPOCHREALTIME - $start")
		if ! kill -0 "$2" 2>/dev/null; then
			note "exited after $took s"
			return 0
		fi
		(($(bc <<<"$took > $1"))) && return 1
		sleep 0.01
	done
}

# actimeo=0: every stat reaches the server. timeo=5, retrans=1: "not responding"
# after 0.5 + 1 s.
mount_nfsx "$WORK/m" "$(url "" "actimeo=0&timeo=5&retrans=1")"
echo "written before the stall" >"$WORK/m/f"
# A writer whose data (less than one WRITE: it stays in the mount's cache) is
# written while the server runs, and whose fsync comes once it is stopped.
python3 - "$WORK/m/killed" "$WORK/killed.expected" "$WORK/killed.ready" <<'PY' &
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
data = os.urandom(50_000)
open(sys.argv[2], "wb").write(data)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, data)
open(sys.argv[3], "w").close()
signal.sigwait({signal.SIGUSR2})
os.fsync(fd)  # blocks: the server is stopped
PY
syncer=$!
for _ in $(seq 600); do [[ -e $WORK/killed.ready ]] && break; sleep 0.05; done
[[ -e $WORK/killed.ready ]] || fail "the writer did not get ready"
freeze "$SERVER_PID"

# An fsync killed while it waits: the process ends, and the data it wrote is not
# lost: the flush goes on in the mount and reaches the server once it resumes.
kill -USR2 "$syncer"
wait_blocked "$syncer"
kill -KILL "$syncer"
gone_within 1 "$syncer" || fail "a process blocked in fsync survived SIGKILL for 1 s"
wait "$syncer" 2>/dev/null || true
[[ $(stat -c %s "$EXPORT_DIR/killed") -lt 50000 ]] || note "(the data had reached the server before the stall)"
pass "SIGKILL ends a process blocked in fsync"

python3 -c 'import os, sys; os.stat(sys.argv[1])' "$WORK/m/f" &
victim=$!
wait_blocked "$victim"
kill -KILL "$victim"
gone_within 1 "$victim" || fail "a process blocked on the stopped server survived SIGKILL for 1 s"
wait "$victim" 2>/dev/null || true
pass "SIGKILL ends a process blocked on a stopped server"

python3 - "$WORK/m/f" >"$WORK/interrupted.out" 2>&1 <<'PY' &
import os, signal, sys
class Interrupted(Exception): pass
def handler(*_): raise Interrupted()
# Set explicitly: a background job of a script starts with SIGINT ignored.
signal.signal(signal.SIGINT, handler)
try:
    os.stat(sys.argv[1])
    print("stat returned")
except Interrupted:
    # Python runs the handler only once the system call has returned (EINTR).
    print("interrupted")
PY
catcher=$!
wait_blocked "$catcher"
kill -INT "$catcher"
gone_within 1 "$catcher" || fail "SIGINT did not interrupt the blocked stat within 1 s"
wait "$catcher" || true
[[ $(cat "$WORK/interrupted.out") == interrupted ]] || fail "caught signal: $(cat "$WORK/interrupted.out")"
pass "SIGINT interrupts the blocked call (EINTR)"


# A call left to wait: a soft mount would fail it after 1.5 s; a hard one waits. stat(1),
# unlike Python, does not retry a call that failed with EINTR.
stat "$WORK/m/f" >/dev/null &
waiter=$!
wait_blocked "$waiter"
# Stopped and continued (Ctrl-Z, fg) it waits on, as on a kernel NFS mount: the stop is
# no reason to fail the call with EINTR, though the kernel interrupts the request for it.
kill -STOP "$waiter"
for _ in $(seq 40); do
	[[ $(awk '/^State:/ {print $2}' "/proc/$waiter/status") != T ]] ||
		fail "SIGSTOP ended the blocked call (the process stopped)"
	sleep 0.05
done
kill -CONT "$waiter"
log=$WORK/mount-m.log
for _ in $(seq 600); do grep -q "not responding" "$log" && break; sleep 0.05; done
grep -q "not responding, still trying" "$log" || fail "no \"not responding\" in the mount's log"
kill -0 "$waiter" 2>/dev/null || fail "the call gave up instead of waiting for the server"
kill -CONT "$SERVER_PID"
wait "$waiter" || fail "the call that waited for the server (and a SIGSTOP) failed"
[[ $(cat "$WORK/m/f") == "written before the stall" ]] || fail "the mount did not carry on"
echo "written after" >"$WORK/m/g"
[[ $(cat "$EXPORT_DIR/g") == "written after" ]] || fail "a write after the stall did not reach the server"
grep -q "server .* OK" "$log" || fail "no \"OK\" in the mount's log after the server resumed"
(($(grep -c "not responding" "$log") == 1)) ||
	fail "\"not responding\" logged $(grep -c "not responding" "$log") times, not once"
pass "a waiting call outlasts the stall; \"not responding\" once, then \"OK\"; the mount carries on"
for _ in $(seq 1200); do cmp -s "$WORK/killed.expected" "$EXPORT_DIR/killed" && break; sleep 0.05; done
cmp -s "$WORK/killed.expected" "$EXPORT_DIR/killed" ||
	fail "what the killed process wrote before its fsync did not reach the server"
pass "what the killed process wrote reached the server after the stall"
