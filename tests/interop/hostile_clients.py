#!/usr/bin/env python3
"""Hostile NFS clients against one `nfsx serve`, at the protocol level.

Hogs pipeline calls with large replies or large arguments and never read a
reply: READs of 1 MiB, WRITEs of 1 MiB, READDIRPLUS with the largest count a
client may ask for. Meanwhile a polite client makes one call at a time and
checks every answer. Prints the server's resident memory before and at its
peak, and the polite client's latency; fails (exit 1) when a polite call goes
unanswered or wrong, or the server grows by more than --rss-bound-mib.

usage: hostile_clients.py HOST NFS_PORT MOUNT_PORT EXPORT SERVER_PID [options]
"""
import argparse
import os
import socket
import statistics
import struct
import sys
import threading
import time

NFS, MOUNT = 100003, 100005
GETATTR, LOOKUP, READ, WRITE, READDIRPLUS = 1, 3, 6, 7, 17
MNT = 1
UNSTABLE = 0
FATTR3_SIZE = 84


def p32(v):
    return struct.pack(">I", v)


def p64(v):
    return struct.pack(">Q", v)


def opaque(b):
    return p32(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


# AUTH_SYS as root (squashed by the export: the files are open to everyone).
CRED = p32(1) + opaque(p32(0) + opaque(b"hostile") + p32(0) + p32(0) + p32(0))
VERF = p32(0) + p32(0)


def call(xid, prog, vers, proc, body):
    msg = p32(xid) + p32(0) + p32(2) + p32(prog) + p32(vers) + p32(proc) + CRED + VERF + body
    return p32(0x80000000 | len(msg)) + msg


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def u32(self):
        (v,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return v

    def u64(self):
        (v,) = struct.unpack_from(">Q", self.data, self.at)
        self.at += 8
        return v

    def opaque(self):
        n = self.u32()
        b = self.data[self.at:self.at + n]
        self.at += n + (4 - n % 4) % 4
        return b

    def skip(self, n):
        self.at += n

    def post_op_attr(self):
        if self.u32():
            self.skip(FATTR3_SIZE)


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        out += chunk
    return bytes(out)


def recv_record(sock):
    out = b""
    while True:
        (mark,) = struct.unpack(">I", recv_exact(sock, 4))
        out += recv_exact(sock, mark & 0x7FFFFFFF)
        if mark & 0x80000000:
            return out


class Polite:
    """One call at a time, each answer read and checked."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=120)
        self.xid = 1000

    def call(self, prog, vers, proc, body):
        self.xid += 1
        self.sock.sendall(call(self.xid, prog, vers, proc, body))
        r = Reader(recv_record(self.sock))
        if r.u32() != self.xid:
            raise RuntimeError("a reply to another call")
        if r.u32() != 1 or r.u32() != 0:
            raise RuntimeError("not an accepted reply")
        r.u32()
        r.opaque()  # verifier
        if r.u32() != 0:
            raise RuntimeError("the call was not executed")
        return r


def status_ok(r, what):
    st = r.u32()
    if st != 0:
        raise RuntimeError(f"{what}: status {st}")


def mount(host, port, export):
    c = Polite(host, port)
    r = c.call(MOUNT, 3, MNT, opaque(export.encode()))
    status_ok(r, "MNT")
    return r.opaque()


def lookup(c, dir_fh, name):
    r = c.call(NFS, 3, LOOKUP, opaque(dir_fh) + opaque(name.encode()))
    status_ok(r, "LOOKUP " + name)
    return r.opaque()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def hog(s, records, stop, errors):
    """Sends every record, reads nothing, keeps the connection until told."""
    try:
        for rec in records:
            s.sendall(rec)  # blocks once the server stops reading: that is the point
    except OSError as e:
        if not stop.is_set():
            errors.append(f"hog: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("nfs_port", type=int)
    ap.add_argument("mount_port", type=int)
    ap.add_argument("export")
    ap.add_argument("pid", type=int)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--reads", type=int, default=256)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--writes", type=int, default=64)
    ap.add_argument("--listers", type=int, default=2)
    ap.add_argument("--lists", type=int, default=64)
    ap.add_argument("--partial", type=int, default=48,
                    help="connections that send 3 MiB of one 4 MiB WRITE call, then nothing")
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--rss-bound-mib", type=int, default=192)
    a = ap.parse_args()

    root = mount(a.host, a.mount_port, a.export)
    polite = Polite(a.host, a.nfs_port)
    big = lookup(polite, root, "big.bin")
    dirfh = lookup(polite, root, "dir")
    target = lookup(polite, root, "target.bin")
    cold = lookup(polite, root, "cold.bin")
    with open(os.path.join(a.export, "big.bin"), "rb") as f:
        content = f.read()
    size = len(content)
    mib = 1 << 20

    recs = []
    xid = 1
    for _ in range(a.readers):
        rs = []
        for i in range(a.reads):
            xid += 1
            rs.append(call(xid, NFS, 3, READ, opaque(big) + p64((i * mib) % size) + p32(mib)))
        recs.append(rs)
    payload = b"h" * mib
    for _ in range(a.writers):
        rs = []
        for i in range(a.writes):
            xid += 1
            body = opaque(target) + p64(i * mib) + p32(mib) + p32(UNSTABLE) + opaque(payload)
            rs.append(call(xid, NFS, 3, WRITE, body))
        recs.append(rs)
    for _ in range(a.listers):
        rs = []
        for _ in range(a.lists):
            xid += 1
            body = opaque(dirfh) + p64(0) + b"\0" * 8 + p32(0xFFFFFFFF) + p32(0xFFFFFFFF)
            rs.append(call(xid, NFS, 3, READDIRPLUS, body))
        recs.append(rs)

    # Most of a call the server may take (4 MiB, its --max-record), then silence: each
    # connection the server reads holds a buffer of the whole call until the stall timeout.
    whole = (4 << 20) - 64
    for _ in range(a.partial):
        xid += 1
        head = p32(xid) + p32(0) + p32(2) + p32(NFS) + p32(3) + p32(WRITE) + CRED + VERF
        head += opaque(target) + p64(0) + p32(whole - 200) + p32(UNSTABLE) + p32(whole - 200)
        recs.append([p32(0x80000000 | whole) + head + b"p" * (3 << 20)])

    # Off the page cache, so that the READs wait on the disk: the server runs them on its
    # workers, where their replies are made only later.
    # (Written back first: dirty pages cannot be dropped.)
    for name in ("big.bin", "cold.bin"):
        fd = os.open(os.path.join(a.export, name), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    cold_size = os.path.getsize(os.path.join(a.export, "cold.bin"))
    # The server has answered some calls already (it is warm): the base to grow from.
    base = rss_kib(a.pid)
    stop = threading.Event()
    errors = []
    socks = [socket.create_connection((a.host, a.nfs_port)) for _ in recs]
    threads = [threading.Thread(target=hog, args=(s, rs, stop, errors), daemon=True)
               for s, rs in zip(socks, recs)]
    for t in threads:
        t.start()

    peak = base
    latencies = []
    cold_latencies = []  # READs the server runs on its workers, beside the hogs' READs
    wrong = 0
    deadline = time.monotonic() + a.seconds
    i = 0
    while time.monotonic() < deadline or i < 50:
        peak = max(peak, rss_kib(a.pid))
        t0 = time.monotonic()
        if i % 10 == 5:
            off = (i * 1048573 * 4096) % (cold_size - 4096)
            status_ok(polite.call(NFS, 3, READ, opaque(cold) + p64(off) + p32(4096)), "READ")
            cold_latencies.append(time.monotonic() - t0)
            i += 1
            continue
        if i % 2 == 0:
            status_ok(polite.call(NFS, 3, GETATTR, opaque(big)), "GETATTR")
        else:
            off = (i * 65536) % (size - 65536)
            r = polite.call(NFS, 3, READ, opaque(big) + p64(off) + p32(65536))
            status_ok(r, "READ")
            r.post_op_attr()
            r.u32()
            r.u32()
            if r.opaque() != content[off:off + 65536]:
                wrong += 1
        latencies.append(time.monotonic() - t0)
        i += 1
    peak = max(peak, rss_kib(a.pid))
    stop.set()
    for s in socks:
        s.shutdown(socket.SHUT_RDWR)  # ends a send blocked on a server that stopped reading
        s.close()
    for t in threads:
        t.join()
    # Still serving once the hogs are gone.
    status_ok(polite.call(NFS, 3, GETATTR, opaque(big)), "GETATTR after the hogs")

    lat_ms = sorted(x * 1000 for x in latencies)
    p99 = lat_ms[min(len(lat_ms) - 1, int(len(lat_ms) * 0.99))]
    grew_mib = (peak - base) / 1024
    print(f"hogs: {a.readers} x {a.reads} READs of 1 MiB, {a.writers} x {a.writes} WRITEs of "
          f"1 MiB, {a.listers} x {a.lists} READDIRPLUS of maxcount 4 GiB, {a.partial} x 3 MiB of "
          f"a 4 MiB WRITE call; none read a reply")
    print(f"server RSS: {base // 1024} MiB before, {peak // 1024} MiB at peak "
          f"(+{grew_mib:.0f} MiB; bound {a.rss_bound_mib} MiB)")
    print(f"polite client: {len(lat_ms)} calls, latency p50 {statistics.median(lat_ms):.2f} ms, "
          f"p99 {p99:.2f} ms, max {lat_ms[-1]:.2f} ms; {wrong} wrong")
    if cold_latencies:
        cold_ms = sorted(x * 1000 for x in cold_latencies)
        print(f"polite client, 4 KiB READs of a file off the page cache (run on the server's "
              f"workers): {len(cold_ms)} calls, p50 {statistics.median(cold_ms):.2f} ms, "
              f"max {cold_ms[-1]:.2f} ms")
    ok = True
    if errors:
        print("hogs failed before they were done: " + "; ".join(errors[:3]))
        ok = False
    if wrong:
        print(f"{wrong} READs of the polite client returned wrong data")
        ok = False
    if grew_mib > a.rss_bound_mib:
        print(f"the server grew by {grew_mib:.0f} MiB, over the bound of {a.rss_bound_mib} MiB")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
