#!/usr/bin/env bash
# 1,000 connections at once against one `nfsx serve`, 16 calls in flight on each:
# nfsx-libnfs-load (Debian's libnfs) with 1,000 jobs, which connects them all before the
# load starts, random 4 KiB reads and writes, every block read back verified. No call may fail, the server's memory stays
# bounded, and once the clients are gone it holds none of their connections.
#
#   NFSX_MANY_CONN_SECONDS   how long the load runs (default 10; the issue's soak: 60)
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
[[ -x $NFSX_LIBNFS_LOAD ]] || fail "set NFSX_LIBNFS_LOAD to the nfsx-libnfs-load binary"
SECONDS_OF_LOAD=${NFSX_MANY_CONN_SECONDS:-10}
PROCS=1 JOBS=1000
CONNS=$((PROCS * JOBS))
# Each connection is a descriptor in the server and in a driver; so is each open file.
ulimit -n 16384 2>/dev/null || skip "cannot raise the descriptor limit to 16384 (hard limit $(ulimit -Hn))"
# What 1,000 busy connections may cost the server at most (measured: about 70 MiB).
RSS_BOUND_KIB=$((384 * 1024))

EXPORT=$WORK/export
make_export "$EXPORT"
start_nfsx nfsx "$EXPORT"
sockets() { { ls -l "/proc/$NFSX_PID/fd" 2>/dev/null || true; } | grep -c 'socket:' || true; }
BASE_SOCKETS=$(sockets)

pids=()
for i in $(seq 0 $((PROCS - 1))); do
	make_export "$EXPORT/d$i"
	"$NFSX_LIBNFS_LOAD" "$(url "$EXPORT/d$i")" --mode randrw --jobs "$JOBS" --depth 16 --bs 4k \
		--size 256k --seconds "$SECONDS_OF_LOAD" --create >"$WORK/load.$i.out" 2>&1 &
	pids+=($!)
done

# Every connection must be open at one time (the drivers keep theirs for the whole run).
peak=0
deadline=$((SECONDS + 300))
while :; do
	n=$(($(sockets) - BASE_SOCKETS))
	((n > peak)) && peak=$n
	((peak >= CONNS)) && break
	running=0
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
	((running)) || break
	((SECONDS < deadline)) || break
	sleep 0.2
done
((peak >= CONNS)) || fail "at most $peak of the $CONNS connections were open at once"
pass "$CONNS connections open at once"

for i in "${!pids[@]}"; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	grep -E '^ all ' "$WORK/load.$i.out" | sed "s/^/[$TEST_NAME]   driver $i: /"
	((rc == 0)) || { cat "$WORK/load.$i.out" >&2; fail "driver $i: exit status $rc (errors or mismatches)"; }
done
pass "$CONNS connections x 16 calls in flight for $SECONDS_OF_LOAD s: no error, every block verified"

hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$NFSX_PID/status")
note "server memory high-water mark: $((hwm / 1024)) MiB"
((hwm < RSS_BOUND_KIB)) || fail "the server's memory reached $((hwm / 1024)) MiB (bound $((RSS_BOUND_KIB / 1024)) MiB)"
pass "server memory stayed under $((RSS_BOUND_KIB / 1024)) MiB"

deadline=$((SECONDS + 60))
while (($(sockets) > BASE_SOCKETS)) && ((SECONDS < deadline)); do sleep 0.2; done
(($(sockets) == BASE_SOCKETS)) || fail "$(($(sockets) - BASE_SOCKETS)) connections still held after the clients left"
pass "no connection left behind"
stop_nfsx
