#!/usr/bin/env python3
"""Two mounts of one export, A and B (both with actimeo=ATTR seconds): what one
writes, the other sees under close-to-open and attribute-cache rules, through
read() and through mmap. Prints one line per check; exit 1 on the first failure.

    two_mounts.py A_DIR B_DIR ATTR
"""
import ctypes
import os
import sys
import time

A, B, ATTR = sys.argv[1], sys.argv[2], float(sys.argv[3])
checks = 0


def ok(cond, what):
    global checks
    if not cond:
        print(f"FAIL: {what}", flush=True)
        sys.exit(1)
    checks += 1
    print(f"ok: {what}", flush=True)


def write(path, data, flags=os.O_TRUNC):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    os.write(fd, data)
    os.close(fd)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Mapping:
    """A shared read-only mapping longer than the file, as C programs make them
    (Python's mmap refuses a length beyond the current size)."""

    def __init__(self, fd, length):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.libc, self.length = libc, length
        self.addr = libc.mmap(None, length, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if self.addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")

    def __getitem__(self, s):
        start, stop = s.start or 0, self.length if s.stop is None else s.stop
        return ctypes.string_at(self.addr + start, stop - start)

    def close(self):
        self.libc.munmap(self.addr, self.length)


def wait_attr():
    time.sleep(ATTR + 0.5)


# 1. Close-to-open: a write through A, after close, is seen by an open through B.
write(f"{A}/cto", b"version one")
ok(read(f"{B}/cto") == b"version one", "B reads what A wrote and closed")
# B has the file cached (kernel pages and attributes); A replaces the contents with
# more bytes. B's next open must see all of them at once: no stale size, no stale page.
write(f"{A}/cto", b"version two, longer than the first")
ok(read(f"{B}/cto") == b"version two, longer than the first",
   "a reopen through B sees A's rewrite, new size included, without waiting")
# Same size, same length: only the mtime/ctime tell.
write(f"{A}/cto", b"version 3, longer than the first!")
write(f"{A}/cto", b"VERSION 3, LONGER THAN THE FIRST!")
ok(read(f"{B}/cto") == b"VERSION 3, LONGER THAN THE FIRST!",
   "a same-size rewrite is seen at the next open")

# 2. An open file descriptor on B sees A's change once the attribute cache expires.
fd = os.open(f"{B}/cto", os.O_RDONLY)
before = os.pread(fd, 100, 0)
write(f"{A}/cto", b"grown by A " * 10)
wait_attr()
ok(os.fstat(fd).st_size == 110, "B's fstat shows A's new size after the attribute timeout")
ok(os.pread(fd, 200, 0) == b"grown by A " * 10,
   "B's open descriptor reads A's data after revalidation")
os.close(fd)

# 3. mmap: a reader mapped on B sees an append through A after revalidation.
base = bytes((i * 7) & 0xFF for i in range(10000))
write(f"{A}/mapped", base)
fd = os.open(f"{B}/mapped", os.O_RDONLY)
m = Mapping(fd, 16384)
ok(m[:10000] == base, "B's mapping shows the file")
ok(m[10000:12000] == b"\0" * 2000, "the mapping beyond the end of file reads zeros")
afd = os.open(f"{A}/mapped", os.O_WRONLY | os.O_APPEND)
os.write(afd, b"A" * 2000)
os.close(afd)
wait_attr()
ok(os.stat(f"{B}/mapped").st_size == 12000, "B sees the appended size")
ok(m[10000:12000] == b"A" * 2000, "B's existing mapping shows the bytes A appended")
ok(m[:10000] == base, "and the old bytes unchanged")

# 4. An in-place overwrite (size unchanged) through A reaches B's mapping: only the
# client's change detection and the kernel invalidation can make that happen.
wfd = os.open(f"{A}/mapped", os.O_WRONLY)
os.pwrite(wfd, b"overwritten by A", 4096)
os.close(wfd)
wait_attr()
os.stat(f"{B}/mapped")  # revalidation
deadline = time.time() + 5
while m[4096:4112] != b"overwritten by A" and time.time() < deadline:
    time.sleep(0.05)
ok(m[4096:4112] == b"overwritten by A", "B's mapping shows A's in-place overwrite")
m.close()
os.close(fd)

# 5. Names: a file A creates appears on B (listing at once; lookup after the
# directory's attribute timeout even where B cached its absence).
ok(not os.path.exists(f"{B}/later"), "B: 'later' does not exist yet (a negative entry)")
write(f"{A}/later", b"x")
ok("later" in os.listdir(B), "B's listing shows A's new file at once")
wait_attr()
ok(os.path.exists(f"{B}/later"), "B finds it by name after the directory timeout")
os.unlink(f"{A}/later")
wait_attr()
ok(not os.path.exists(f"{B}/later"), "and loses it after A removes it")

# 6. B writes, A reads: the other direction, through a rename over a file.
write(f"{B}/tmp", b"written by B")
os.rename(f"{B}/tmp", f"{B}/cto")
ok(read(f"{A}/cto") == b"written by B", "A reads a file B renamed into place")

print(f"two_mounts: {checks} checks passed")
