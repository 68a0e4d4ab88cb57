#!/usr/bin/env bash
# Unmounting with dirty data loses nothing: data still in the kernel's page cache
# (shared mappings never synced, the write-back cache) and in the client's, written
# back and committed by `nfsx umount` and by `fusermount3 -u`; checked through a
# fresh mount.
#   umount_dirty.sh nfsx|ganesha
KIND=${1:?usage: umount_dirty.sh nfsx|ganesha}
TEST_NAME=fuse_umount_dirty_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv

# make_dirty DIR TAG: files whose last bytes are still dirty somewhere when this returns.
make_dirty() {
	python3 - "$1" "$2" "$WORK/expected-$2" <<'PY'
import mmap, os, sys, random
d, tag, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
rng = random.Random(tag)
def data(n): return rng.randbytes(n)
files = {}
# Buffered writes, closed (close-to-open commits them)...
files["closed"] = data(3 << 20)
with open(f"{d}/closed", "wb") as f: f.write(files["closed"])
# ...a shared mapping stored into and unmapped without msync: dirty kernel pages...
size = 2 << 20
fd = os.open(f"{d}/mapped", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
payload = data(size)
m[:] = payload
m.close()
os.close(fd)
files["mapped"] = payload
# ...and many small files, written and closed in a burst.
for i in range(50):
    files[f"small{i}"] = data(rng.randrange(1, 20000))
    with open(f"{d}/small{i}", "wb") as f: f.write(files[f"small{i}"])
for name, content in files.items():
    with open(f"{out}/{name}", "wb") as f: f.write(content)
PY
}

# verify TAG: a fresh mount shows exactly what was written.
verify() {
	mount_nfsx "$WORK/check" "$(url /"$1")"
	diff -r "$WORK/expected-$1" "$WORK/check" >"$WORK/diff.out" 2>&1 ||
		fail "$1: a fresh mount differs: $(head -5 "$WORK/diff.out")"
	pass "$1: a fresh mount shows every byte ($(ls "$WORK/expected-$1" | wc -l) files)"
	unmount_nfsx "$WORK/check"
}

for opts in "" "writeback_cache"; do
	label=${opts:-default}
	mount_nfsx "$WORK/m" "$(url)" ${opts:+-o "$opts"}
	mkdir "$WORK/m/u-$label" "$WORK/m/f-$label"

	make_dirty "$WORK/m/u-$label" "u-$label"
	unmount_nfsx "$WORK/m"
	pass "$label: nfsx umount"
	verify "u-$label"

	mount_nfsx "$WORK/m" "$(url)" ${opts:+-o "$opts"}
	make_dirty "$WORK/m/f-$label" "f-$label"
	pid=$(daemon_pid "$WORK/m")
	fusermount3 -u "$WORK/m" || fail "fusermount3 -u"
	MOUNTS=("${MOUNTS[@]/"$WORK/m"/}")
	for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "the mount process did not exit after fusermount3 -u"
	pass "$label: fusermount3 -u, and the mount process finished"
	verify "f-$label"
done
