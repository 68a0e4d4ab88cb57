# lib.sh - shared by the nfsx client command tests (sourced, not run). Builds on the
# interop tests' lib.sh: a work directory per test, `nfsx serve` on ports the kernel picks,
# pass/fail/expect_* helpers.
# shellcheck source=tests/interop/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../interop/lib.sh"
need sha256sum diff awk

# Times print the same wherever the test runs.
export TZ=UTC
umask 022

# The server squashes root to 65534: files the test makes on disk that the client must
# remove or rename belong to that user, as if a client had made them.
squash_owner() { chown -R 65534:65534 "$@"; }

# serve NAME: an export directory $WORK/NAME served by a new `nfsx serve`; sets EXPORT and
# the URL prefix of that server's export, BASE (use with u).
serve() {
	EXPORT=$WORK/$1
	make_export "$EXPORT"
	start_nfsx "$1" "$EXPORT"
	QUERY="version=3&nfsport=$NFS_PORT&mountport=$MOUNT_PORT"
}

# u REL [QUERY]: the URL of REL inside the current export.
u() { echo "nfs://127.0.0.1$EXPORT${1:+/$1}?$QUERY"; }

# out WHAT CMD...: CMD must succeed; its stdout goes to $WORK/out, its stderr to $WORK/err.
out() {
	local what=$1 rc=0
	shift
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	if ((rc != 0)); then
		cat "$WORK/err" >&2
		fail "$what: exit status $rc"
	fi
	pass "$what"
}

# fails WHAT STATUS STDERR CMD...: CMD must exit with STATUS and print exactly STDERR
# (one or more lines) on stderr. Its stdout goes to $WORK/out.
fails() {
	local what=$1 want_rc=$2 want_err=$3 rc=0
	shift 3
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	((rc == want_rc)) || fail "$what: exit status $rc, expected $want_rc; stderr: $(cat "$WORK/err")"
	[[ $(cat "$WORK/err") == "$want_err" ]] ||
		fail "$what: stderr is '$(cat "$WORK/err")', expected '$want_err'"
	pass "$what: status $rc, '$want_err'"
}

# nfsstat_count PROC FILE: the count of PROC in an `nfsstat -c` table in FILE (the rows of
# names are followed by rows of "count pct%" pairs).
nfsstat_count() {
	awk -v proc="$1" '
		found { print $(2 * col - 1); exit }
		/^Client nfs v3:/ { table = 1; next }
		table { for (i = 1; i <= NF; i++) if ($i == proc) { col = i; found = 1 } }
	' "$2"
}

# server_stats NAME: makes the last server started (NAME) print its statistics to its log
# (SIGUSR1) and waits until it has.
server_stats() {
	local log=$WORK/$1.log before
	before=$(grep -c '^connections:' "$log" || true)
	kill -USR1 "$NFSX_PID"
	for _ in $(seq 100); do
		(($(grep -c '^connections:' "$log" || true) > before)) && return 0
		sleep 0.05
	done
	fail "nfsx serve printed no statistics after SIGUSR1"
}

# accepted_connections NAME: connections the server NAME accepted so far.
accepted_connections() {
	server_stats "$1"
	grep '^connections:' "$WORK/$1.log" | tail -n 1 | awk '{print $2}'
}
