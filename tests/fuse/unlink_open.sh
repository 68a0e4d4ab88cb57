#!/usr/bin/env bash
# An unlink or a rename over a file that a process has open never deletes its data,
# even when the mount's name cache has forgotten the name (it starts over past
# max_names names; the kernel keeps its dentry and sends the UNLINK without a LOOKUP),
# nor when the open races the unlink: the file is hidden under a .nfsx* name while
# open, and that name goes at its last close, as with the kernel NFS client's silly
# rename.
#   unlink_open.sh
TEST_NAME=fuse_unlink_open
source "$(dirname "$0")/lib.sh"
need_fuse
start_server nfsx srv
HOLDERS=()  # processes holding a file open: ended before the mount is taken down
eval "$(declare -f before_cleanup | sed '1s/before_cleanup/unmount_all/')"
before_cleanup() {
	local pid
	for pid in "${HOLDERS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
	for pid in "${HOLDERS[@]}"; do wait "$pid" 2>/dev/null || true; done
	unmount_all
}
# A name cache of 4 names, and dentries the kernel keeps for 10 minutes: names it
# never asks about again, and that the mount forgets as soon as a few others pass.
mount_nfsx "$WORK/m" "$(url)" -o max_names=4,acdirmin=600,acdirmax=600
mkdir "$WORK/m/d"
cd "$WORK/m/d"

# hold NAME PATH: a process that opens PATH read-write (O_DIRECT: every read and write
# reaches the server, not a cache) and keeps it open. Commands (see `ask`) come on a
# FIFO: "read" answers what reading the descriptor from offset 0 gives, "write TEXT"
# appends TEXT and fsyncs, "close" closes it and ends the process.
hold() {
	local name=$1 path=$2
	mkfifo "$WORK/$name.cmd"
	python3 - "$path" "$WORK/$name.cmd" "$WORK/$name" <<'PY' &
import os, sys
path, cmds, out = sys.argv[1:]
fd = os.open(path, os.O_RDWR | os.O_DIRECT)

def answer(text):
    with open(out + ".tmp", "w") as f:
        f.write(text)
    os.rename(out + ".tmp", out + ".out")

with open(cmds) as c:
    for line in c:
        cmd, _, arg = line.rstrip("\n").partition(" ")
        try:
            if cmd == "read":
                answer(os.pread(fd, 1 << 16, 0).decode())
            elif cmd == "write":
                os.pwrite(fd, arg.encode(), os.fstat(fd).st_size)
                os.fsync(fd)
                answer("written")
            elif cmd == "close":
                os.close(fd)
                answer("closed")
                break
        except OSError as e:
            answer(f"ERROR {os.strerror(e.errno)}")
PY
	HOLDERS+=($!)
	exec {fd}>"$WORK/$name.cmd"
	eval "HOLD_$name=$fd"
}

# ask NAME COMMAND: sends COMMAND to holder NAME and prints its answer.
ask() {
	local name=$1 fdvar="HOLD_$1"
	echo "$2" >&"${!fdvar}"
	for _ in $(seq 200); do
		if [[ -e $WORK/$name.out ]]; then
			cat "$WORK/$name.out"
			rm -f "$WORK/$name.out"
			return 0
		fi
		sleep 0.05
	done
	fail "$name did not answer '$2' within 10 s"
}

# forget TAG: the mount sees more names than its name cache holds (names one by one:
# a listing would note the victim's name again).
forget() {
	local i
	for i in $(seq 12); do touch "filler-$1-$i"; done
}

# hidden_names: the hidden names on the server's side of d.
hidden_names() { ls -A "$EXPORT_DIR/d" | grep '^\.nfsx' || true; }

# gone_at_close NAME: closes holder NAME; its hidden name must go.
gone_at_close() {
	local a
	a=$(ask "$1" close)
	[[ $a == closed ]] || fail "$1: close: $a"
	for _ in $(seq 100); do  # the kernel sends the release after close() returns
		[[ -z $(hidden_names) ]] && break
		sleep 0.1
	done
	[[ -z $(hidden_names) ]] || fail "$1: hidden names left after the last close: $(hidden_names)"
	[[ -z $(ls -A | grep '^\.nfsx') ]] || fail "$1: the mount still lists $(ls -A | grep '^\.nfsx')"
	pass "$1: its hidden name is gone after the last close"
}

# ---- rm of an open file whose name the mount forgot ----
printf "victim data" >victim
hold v victim
[[ $(ask v read) == "victim data" ]] || fail "reading the open victim before rm"
forget v
rm victim
[[ ! -e victim ]] || fail "victim still exists after rm"
a=$(ask v read)
[[ $a == "victim data" ]] || fail "after rm, reading the open descriptor gives: $a"
pass "rm: the open descriptor still reads the data"
[[ -n $(hidden_names) ]] || fail "rm: no hidden name on the server while the file is open"
pass "rm: the file is kept under $(hidden_names)"
a=$(ask v "write more")
[[ $a == written ]] || fail "after rm, writing through the open descriptor: $a"
a=$(ask v read)
[[ $a == "victim datamore" ]] || fail "after rm and a write, reading gives: $a"
pass "rm: the open descriptor still writes and fsyncs"
gone_at_close v

# ---- mv over an open file whose name the mount forgot ----
printf "target data" >target
printf "other data" >other
hold t target
[[ $(ask t read) == "target data" ]] || fail "reading the open target before mv"
forget t
mv other target
[[ $(cat target) == "other data" && ! -e other ]] || fail "after mv: target is '$(cat target)'"
a=$(ask t read)
[[ $a == "target data" ]] || fail "after mv over it, reading the open descriptor gives: $a"
pass "mv over it: the open descriptor still reads the old data"
[[ -n $(hidden_names) ]] || fail "mv: no hidden name on the server while the file is open"
pass "mv: the old file is kept under $(hidden_names)"
gone_at_close t

# ---- mv over open files while the name cache keeps starting over ----
# The kernel looks a rename target up itself just before the RENAME, so the mount
# only forgets it if the cache starts over in between: another process makes it do
# so all the time (negative lookups in another directory), over many rounds.
mkdir "$WORK/m/e"
python3 - "$WORK/m/e" "$WORK/thrash.stop" <<'PY' &
import os, sys
d, stop = sys.argv[1:]
i = 0
while not os.path.exists(stop):
    for _ in range(100):
        i += 1
        try:
            os.stat(f"{d}/nope-{i}")
        except FileNotFoundError:
            pass
PY
HOLDERS+=($!)
thrasher=$!
python3 - "$WORK/m/d" 100 >"$WORK/rounds.out" 2>&1 <<'PY' || fail "mv over open files while the cache starts over: $(tail -3 "$WORK/rounds.out")"
import os, sys
d, rounds = sys.argv[1], int(sys.argv[2])
for r in range(rounds):
    tgt, src = f"{d}/tgt-{r}", f"{d}/src-{r}"
    with open(tgt, "w") as f: f.write(f"old-{r}")
    with open(src, "w") as f: f.write(f"new-{r}")
    fd = os.open(tgt, os.O_RDONLY | os.O_DIRECT)
    os.rename(src, tgt)
    try:
        got = os.pread(fd, 100, 0).decode()
    except OSError as e:
        got = f"ERROR {os.strerror(e.errno)}"
    os.close(fd)
    if got != f"old-{r}":
        sys.exit(f"round {r}: after rename over it, the open descriptor reads: {got}")
print(f"{rounds} rounds")
PY
touch "$WORK/thrash.stop"
wait "$thrasher"
pass "mv over open files while the cache starts over: $(cat "$WORK/rounds.out")"
for _ in $(seq 100); do [[ -z $(hidden_names) ]] && break; sleep 0.1; done
[[ -z $(hidden_names) ]] || fail "hidden names left after the last close: $(hidden_names)"
pass "and no hidden name is left"

# ---- opens racing the unlink of their file ----
# The kernel does not order an open against an unlink of the same file: the open
# either fails (ENOENT) or gives a descriptor that reads the data, never one to a
# file the unlink then deleted (reads failing with ESTALE).
python3 - "$WORK/m/d" 200 >"$WORK/race.out" 2>&1 <<'PY' || fail "opens racing unlinks: $(tail -3 "$WORK/race.out")"
import os, sys, threading
d, rounds = sys.argv[1], int(sys.argv[2])
opened = missing = 0
for r in range(rounds):
    path = f"{d}/race-{r}"
    with open(path, "w") as f: f.write(f"data-{r}")
    got = []
    def opener():
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        except FileNotFoundError:
            got.append(None)
            return
        try:
            got.append(os.pread(fd, 100, 0).decode())
        except OSError as e:
            got.append(f"ERROR {os.strerror(e.errno)}")
        finally:
            os.close(fd)
    t = threading.Thread(target=opener)
    t.start()
    os.unlink(path)
    t.join()
    if got[0] is None:
        missing += 1
    elif got[0] == f"data-{r}":
        opened += 1
    else:
        sys.exit(f"round {r}: an open racing the unlink reads: {got[0]}")
print(f"{rounds} rounds: {opened} opened first, {missing} found the file gone")
PY
pass "opens racing unlinks: $(cat "$WORK/race.out")"
for _ in $(seq 100); do [[ -z $(hidden_names) ]] && break; sleep 0.1; done
[[ -z $(hidden_names) ]] || fail "hidden names left after the last close: $(hidden_names)"
pass "and no hidden name is left"

cd /
unmount_nfsx "$WORK/m"
