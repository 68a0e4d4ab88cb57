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

_cleanup() {
	local rc=$? entry kind pid log
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
