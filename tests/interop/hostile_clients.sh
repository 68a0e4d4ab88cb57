#!/usr/bin/env bash
# Hostile clients at the NFS level (issue #10): raw-RPC hogs pipeline 1 MiB READs, 1 MiB
# WRITEs and READDIRPLUS calls of the largest maxcount and never read a reply, or send
# most of a 4 MiB WRITE call and then nothing, while a polite client makes calls one at
# a time. The file read is dropped from the page cache
# first, so that the READs run on the server's workers, whose replies are made only when
# they run (before those were counted, the server grew past 1 GiB here). The server
# must keep answering the polite
# client correctly, hold the hogs within its memory limits (its resident memory grows by
# at most the reply budget, the hogs' receive buffers and a margin), say that it held
# connections for the budget, and serve on once they are gone. Latency is printed, not
# judged: machines here are shared.
#   NFSX_HOSTILE_ARGS  more options for the hogs (see hostile_clients.py)
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
need python3

EXPORT=$WORK/export
make_export "$EXPORT"
head -c $((64 << 20)) /dev/urandom >"$EXPORT/big.bin"
head -c $((64 << 20)) /dev/urandom >"$EXPORT/cold.bin"
: >"$EXPORT/target.bin"
chmod 0666 "$EXPORT/target.bin"
mkdir "$EXPORT/dir"
for i in $(seq 2000); do : >"$EXPORT/dir/entry-with-a-longish-name-$i"; done
# Limits small enough that the hogs reach them at once: 64 MiB for all replies together,
# 16 MiB queued per connection, 32 MiB for calls being received. The bound below follows
# from them: the budgets, one reply per hog, plus a margin for threads and caches (the 48
# half-sent calls alone would take 144 MiB without the receive budget).
start_nfsx nfsx "$EXPORT" --max-reply-memory ${NFSX_HOSTILE_REPLY_MEMORY:-$((64 << 20))} \
	--max-queued-reply-bytes ${NFSX_HOSTILE_QUEUED:-$((16 << 20))} \
	--max-receive-memory ${NFSX_HOSTILE_RECEIVE_MEMORY:-$((32 << 20))}
python3 "$(dirname "$0")/hostile_clients.py" 127.0.0.1 "$NFS_PORT" "$MOUNT_PORT" "$EXPORT" \
	"$NFSX_PID" --rss-bound-mib 192 ${NFSX_HOSTILE_ARGS:-} >"$WORK/hostile.out" 2>&1 ||
	{ cat "$WORK/hostile.out" >&2; fail "the server did not hold out against the hogs"; }
sed 's/^/  /' "$WORK/hostile.out"
pass "the polite client was answered correctly throughout, the server's memory stayed bounded"

# The budget was what held them: the server says it held connections for it.
kill -USR1 "$NFSX_PID"
for _ in $(seq 100); do grep -q "connections held for it" "$WORK/nfsx.log" && break; sleep 0.05; done
holds=$(sed -n 's/.*connections held for it \([0-9]*\) times.*/\1/p' "$WORK/nfsx.log" | tail -n 1)
[[ -n $holds ]] || fail "no statistics from the server after SIGUSR1"
grep -E "^reply memory|^receive buffers|^calls moved off" "$WORK/nfsx.log" | tail -n 3 | sed 's/^/  /'
((holds > 0)) || fail "the hogs never reached the reply budget: the test did not test it"
pass "connections held for the reply budget $holds times"
receive_holds=$(sed -n 's/.*reads paused for it \([0-9]*\) times.*/\1/p' "$WORK/nfsx.log" | tail -n 1)
((receive_holds > 0)) || fail "the half-sent calls never reached the receive budget: untested"
pass "reads paused for the receive budget $receive_holds times"

# Once the hogs are gone and the calls they left have run, the budget is whole again: what
# was counted for them was all given back.
reply_memory() { sed -n 's/^reply memory \([0-9]*\) KiB.*/\1/p' "$WORK/nfsx.log" | tail -n 1; }
for _ in $(seq 300); do
	kill -USR1 "$NFSX_PID"
	sleep 0.1
	[[ $(reply_memory) == 0 ]] && break
done
[[ $(reply_memory) == 0 ]] || fail "reply memory still counted 30 s after the hogs left: $(reply_memory) KiB"
pass "the reply budget is whole again once the hogs are gone"
stop_nfsx
