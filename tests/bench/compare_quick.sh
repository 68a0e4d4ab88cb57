#!/usr/bin/env bash
# bench/compare.sh --quick end to end: servers start, every system runs every case, the
# results file has its sections and the plot is drawn. The figures are not looked at.
set -euo pipefail
BUILD=${1:?usage: compare_quick.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/nfsx-compare-test-XXXXXX")
trap 'rm -rf "$OUT"' EXIT

"$ROOT/bench/compare.sh" --quick --out "$OUT" "$BUILD" 2>"$OUT/stderr.log" ||
	{ tail -30 "$OUT/stderr.log"; exit 1; }
md=$(ls "$OUT"/*.md)
fail() { echo "compare_quick: $*" >&2; cat "$md" >&2; exit 1; }
for want in "## Systems" "## Targets (issue #5)" "| nfsx+nfsx |" "| nfsx+nfsx-nc |" "| local |" \
	"Reread phase READ count" "NULL RPC latency" "## iozone, O_DIRECT" "## ping"; do
	grep -qF "$want" "$md" || fail "no '$want' in $md"
done
if grep -q "## Runs that failed" "$md"; then
	# Only the failures: the whole report is long and CI logs keep the tail.
	sed -n '/## Runs that failed/,$p' "$md" >&2
	echo "compare_quick: some runs failed" >&2
	exit 1
fi
if command -v gnuplot >/dev/null; then
	ls "$OUT"/*.png >/dev/null 2>&1 || fail "no plot"
fi
echo "compare_quick: OK ($md)"
