# lib.sh - shared by the interop tests (sourced, not run). Each test gets its own work
# directory and its own server on ports the kernel picks, so tests can run in parallel.
#
# Environment (ctest sets these; see tests/CMakeLists.txt):
#   NFSX              the nfsx binary
#   NFSX_LIBNFS_LOAD  the nfsx-libnfs-load binary (tests that use it)
#   NFSX_KEEP_WORK=1  keep the work directory (logs, exports) after the test
#
# Exit status: 0 passed, 1 failed, 77 skipped (ctest's SKIP_RETURN_CODE); the frame
# (work directory, note/pass/fail/skip, cleanup) is tests/common.sh.
NFSX_LIBNFS_LOAD=${NFSX_LIBNFS_LOAD:-}
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || skip "$tool is not installed"
	done
}

# make_export DIR: an empty export directory anyone may write. libnfs-utils as root are
# squashed to 65534 by the default export, so the directory must be world-writable.
make_export() {
	mkdir -p "$1"
	chmod 1777 "$1"
}

# start_nfsx NAME SERVE_ARGS...: runs `nfsx serve SERVE_ARGS` on loopback with ports 0 and
# waits until it listens. Sets NFS_PORT, MOUNT_PORT and NFSX_PID; logs to $WORK/NAME.log.
start_nfsx() {
	local name=$1
	shift
	local ports=$WORK/$name.ports
	rm -f "$ports"
	"$NFSX" serve "$@" --port 0 --mount-port 0 --state-dir "$WORK/$name.state" \
		--ports-file "$ports" >"$WORK/$name.log" 2>&1 &
	NFSX_PID=$!
	SERVERS+=("nfsx $NFSX_PID")
	for _ in $(seq 200); do
		if [[ -s $ports ]]; then
			read -r NFS_PORT MOUNT_PORT _ <"$ports"
			note "nfsx serve $* listening: nfs $NFS_PORT, mount $MOUNT_PORT (pid $NFSX_PID)"
			return 0
		fi
		if ! kill -0 "$NFSX_PID" 2>/dev/null; then
			wait "$NFSX_PID" || true
			# The local backend opens files by handle; without the capability there is
			# nothing to test, which is a skip, not a failure.
			grep -q CAP_DAC_READ_SEARCH "$WORK/$name.log" &&
				skip "nfsx serve needs CAP_DAC_READ_SEARCH (root) for a local directory"
			fail "nfsx serve exited at start"
		fi
		sleep 0.05
	done
	fail "nfsx serve did not write $ports within 10 s"
}

# stop_nfsx: SIGTERM, and the server must exit cleanly (status 0): a crash or a hang during
# the test fails it even if every client saw the right answers.
stop_nfsx() {
	local pid=$NFSX_PID rc=0
	kill -TERM "$pid"
	for _ in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] && break
		sleep 0.05
	done
	wait "$pid" || rc=$?
	SERVERS=("${SERVERS[@]/"nfsx $pid"/}")
	((rc == 0)) || fail "nfsx serve exited with status $rc at SIGTERM (crash or unclean stop)"
	pass "nfsx serve (pid $pid) stopped cleanly"
}

# url PATH [QUERY]: a libnfs URL on the last server started.
url() { echo "nfs://127.0.0.1$1?version=3&nfsport=$NFS_PORT&mountport=$MOUNT_PORT${2:+&$2}"; }

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
	[[ $1 == "$2" ]] || fail "$3: got '$1', expected '$2'"
	pass "$3 = $2"
}

# expect_fail WHAT PATTERN CMD...: CMD must exit non-zero and say PATTERN (an extended
# regular expression) on stdout or stderr.
expect_fail() {
	local what=$1 pattern=$2 out rc=0
	shift 2
	out=$("$@" 2>&1) || rc=$?
	((rc != 0)) || fail "$what: succeeded, expected failure. Output: $out"
	grep -Eq -- "$pattern" <<<"$out" || fail "$what: failed (status $rc) but without '$pattern': $out"
	pass "$what: fails with status $rc, '$(grep -Eo -- "$pattern" <<<"$out" | head -n 1)'"
}

# run WHAT CMD...: CMD must succeed; its output goes to $WORK/last.out.
run() {
	local what=$1 rc=0
	shift
	"$@" >"$WORK/last.out" 2>&1 || rc=$?
	if ((rc != 0)); then
		cat "$WORK/last.out" >&2
		fail "$what: exit status $rc"
	fi
	pass "$what"
}

# sha FILE
sha() { sha256sum "$1" | awk '{print $1}'; }
