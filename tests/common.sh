# common.sh - the frame every shell test shares (sourced by tests/*/lib.sh, not run): a
# work directory of its own, counted checks, fail and skip with a reason, and a cleanup
# that stops the servers the test started and keeps the work directory of a failed test.
#
# Before sourcing, a lib may set WORK_BASE (where the work directory goes; default
# $TMPDIR or /tmp). After it, a lib may define before_cleanup (run first at exit, e.g.
# to unmount) and add "nfsx PID" or "ganesha PID" entries to SERVERS.
#
# Exit status: 0 passed, 1 failed, 77 skipped (ctest's SKIP_RETURN_CODE).
set -euo pipefail

TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
NFSX=${NFSX:?set NFSX to the nfsx binary}
WORK=$(mktemp -d "${WORK_BASE:-${TMPDIR:-/tmp}}/nfsx-$TEST_NAME.XXXXXX")
WORK=$(cd "$WORK" && pwd -P)
CHECKS=0
SERVERS=()  # "kind pid"

note() { echo "[$TEST_NAME] $*"; }
pass() { CHECKS=$((CHECKS + 1)); echo "[$TEST_NAME] ok: $*"; }
fail() {
	echo "[$TEST_NAME] FAIL: $*" >&2
	exit 1
}
skip() {
	echo "[$TEST_NAME] SKIP: $*"
	exit 77
}

# The descendants of PID, deepest first.
_descendants() {
	local child
	for child in $(pgrep -P "$1" 2>/dev/null || true); do
		_descendants "$child"
		echo "$child"
	done
}

# What a hung test's processes wait for: each one's state, wait channel and kernel stack,
# and the threads' stacks of the test's nfsx processes (its server and mount daemons).
_dump_processes() {
	local pid
	ps -eo pid,ppid,stat,wchan:32,etimes,args --sort=pid | grep -Ev " (ps|grep) " || true
	# The test's own nfsx processes (daemons are not its descendants), not other tests'.
	for pid in $(_descendants "$1") $(pgrep -f "nfsx (serve|mount) .*$WORK" 2>/dev/null || true); do
		[[ -d /proc/$pid ]] || continue
		echo "--- pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
		echo "wchan $(cat "/proc/$pid/wchan" 2>/dev/null)"
		cat "/proc/$pid/stack" 2>/dev/null || true
		if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == nfsx ]] && command -v gdb >/dev/null; then
			timeout 60 gdb -batch -nx -p "$pid" -ex 'thread apply all bt 30' 2>&1 |
				grep -E '^(Thread|#)' | cut -c1-220 || true
		fi
	done
}

# NFSX_TEST_TIMEOUT (seconds, set by the test's CMake rule to its ctest TIMEOUT): a minute
# before ctest would kill the test without a word, the watchdog prints what every process
# waits for, then kills the test's descendants (a process blocked in a request of a dead
# mount ends at SIGKILL) and fails the test, so its cleanup still runs and its logs show.
if [[ -n ${NFSX_TEST_TIMEOUT:-} ]] && ((NFSX_TEST_TIMEOUT > 120)); then
	(
		trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
		sleep $((NFSX_TEST_TIMEOUT - 60)) &
		sleeper=$!
		wait "$sleeper"
		echo "[$TEST_NAME] WATCHDOG: still running after $((NFSX_TEST_TIMEOUT - 60)) s; what it waits for:" >&2
		_dump_processes "$$" >&2
		for pid in $(_descendants "$$"); do
			[[ $pid == "$BASHPID" ]] || kill -KILL "$pid" 2>/dev/null || true
		done
		kill -TERM "$$"
	) &
	_WATCHDOG_PID=$!
fi

_cleanup() {
	local rc=$? entry kind pid log
	if [[ -n ${_WATCHDOG_PID:-} ]]; then kill -TERM "$_WATCHDOG_PID" 2>/dev/null || true; fi
	if declare -F before_cleanup >/dev/null; then before_cleanup || true; fi
	for entry in "${SERVERS[@]}"; do
		[[ -n $entry ]] || continue
		read -r kind pid <<<"$entry"
		case $kind in
			nfsx) kill -TERM "$pid" 2>/dev/null || true ;;
			ganesha) "$SOURCE_DIR/tests/peers/ganesha.sh" stop "$pid" || true ;;
		esac
	done
	if ((rc != 0 && rc != 77)); then
		for log in "$WORK"/*.log "$WORK"/*/*.log; do
			[[ -f $log ]] || continue
			echo "----- last lines of $log -----" >&2
			tail -n 30 "$log" >&2
		done
	fi
	if [[ ${NFSX_KEEP_WORK:-0} == 1 ]] || ((rc != 0 && rc != 77)); then
		echo "[$TEST_NAME] work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
	if ((rc == 0)); then echo "[$TEST_NAME] PASSED ($CHECKS checks)"; fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT TERM
