#!/usr/bin/env python3
"""Turns captured NFSv3 traffic (pcap files) into test vectors for our XDR decoders.

    scripts/extract_vectors.py [--pcap-dir DIR] [--out DIR] [PCAP ...]
    scripts/extract_vectors.py --dump FILE.vec

For each pcap, every TCP stream is taken per direction with tshark's
`-z follow,tcp,raw,N` (so TCP segmentation and retransmission are tshark's
problem, not ours), split on ONC RPC record marks (RFC 5531 section 11; fragments
are joined), and every reply is paired with the call of the same xid in the same
stream. The result, tests/data/nfs3-vectors/<pcap-name>.vec, is:

    file    := magic "NFSXVEC1" (8 bytes), u32 message_count, message*
    message := u32 kind (0 call, 1 reply), u32 prog, u32 vers, u32 proc,
               u32 length, length bytes of the RPC message (record marks removed)

All integers are big-endian. A reply carries the prog/vers/proc of its call, since
a reply does not name its procedure on the wire. Each call is immediately followed
by its reply, calls in the order the client sent them. RPC messages are XDR, so
`length` is a multiple of 4 and the next message starts 4-aligned. A reply whose
call is not in the capture gets prog = vers = proc = 0xffffffff (none are expected).
"""

import argparse
import collections
import os
import struct
import subprocess
import sys

MAGIC = b"NFSXVEC1"
NO_CALL = 0xFFFFFFFF
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PCAPS = "/work/shared/testdata/nfs3-pcap"
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "nfs3-vectors")

PROGRAMS = {100003: "NFS", 100005: "MOUNT", 100227: "NFS_ACL"}
NFS_PROCS = ["NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
             "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
             "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"]
MOUNT_PROCS = ["NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"]
ACL_PROCS = ["NULL", "GETACL", "SETACL"]


def proc_name(prog, vers, proc):
    names = {100003: NFS_PROCS, 100005: MOUNT_PROCS, 100227: ACL_PROCS}.get(prog, [])
    label = f"{PROGRAMS.get(prog, prog)}v{vers}"
    return f"{label} {names[proc] if proc < len(names) else proc}"


def tshark(*args):
    # tshark warns on stderr when run as root; only the exit status matters.
    run = subprocess.run(["tshark", *args], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"tshark {' '.join(args)} failed:\n{run.stderr}")
    return run.stdout


def stream_bytes(pcap, stream):
    """The two directions of one TCP stream as (first sender's bytes, other side's bytes)."""
    out = tshark("-r", pcap, "-q", "-z", f"follow,tcp,raw,{stream}")
    data = (bytearray(), bytearray())
    for line in out.splitlines():
        # Banner lines start with '=', "Follow:", "Filter:", "Node"; data is lowercase hex,
        # indented by a tab for the second node.
        if not line or line[0] in "=FN":
            continue
        data[1 if line.startswith("\t") else 0].extend(bytes.fromhex(line.strip()))
    return data


def split_records(data, where):
    """RPC messages of one direction, with record marks removed and fragments joined."""
    records, i, rec = [], 0, bytearray()
    while i < len(data):
        if len(data) - i < 4:
            sys.exit(f"{where}: {len(data) - i} stray bytes after the last record")
        mark = struct.unpack_from(">I", data, i)[0]
        size = mark & 0x7FFFFFFF
        i += 4
        if i + size > len(data):
            sys.exit(f"{where}: fragment of {size} bytes truncated at {len(data) - i}")
        rec += data[i:i + size]
        i += size
        if mark & 0x80000000:
            records.append(bytes(rec))
            rec = bytearray()
    if rec:
        sys.exit(f"{where}: stream ends inside a record")
    return records


def extract(pcap):
    """(messages, stats) where messages is a list of (kind, prog, vers, proc, bytes)."""
    fields = tshark("-r", pcap, "-T", "fields", "-e", "tcp.stream")
    streams = sorted({int(s) for s in fields.split()})
    messages, unpaired = [], 0
    for stream in streams:
        calls, replies = [], collections.defaultdict(collections.deque)
        for direction, data in enumerate(stream_bytes(pcap, stream)):
            for rec in split_records(data, f"{pcap} stream {stream} direction {direction}"):
                if len(rec) < 8:
                    sys.exit(f"{pcap} stream {stream}: {len(rec)}-byte record is no RPC message")
                xid, kind = struct.unpack_from(">II", rec)
                if kind == 0:
                    if len(rec) < 24:
                        sys.exit(f"{pcap} stream {stream}: short call header")
                    prog, vers, proc = struct.unpack_from(">III", rec, 12)
                    calls.append((xid, prog, vers, proc, rec))
                elif kind == 1:
                    replies[xid].append(rec)
                else:
                    sys.exit(f"{pcap} stream {stream}: msg_type {kind}")
        # Replies may come out of order (and a client could reuse an xid): match by xid, FIFO.
        for xid, prog, vers, proc, rec in calls:
            messages.append((0, prog, vers, proc, rec))
            if replies[xid]:
                messages.append((1, prog, vers, proc, replies[xid].popleft()))
            else:
                unpaired += 1
                print(f"warning: {pcap} stream {stream}: no reply to xid {xid:#x}", file=sys.stderr)
        for xid, left in replies.items():
            for rec in left:
                unpaired += 1
                print(f"warning: {pcap} stream {stream}: reply {xid:#x} without call",
                      file=sys.stderr)
                messages.append((1, NO_CALL, NO_CALL, NO_CALL, rec))
    return messages, len(streams), unpaired


def write_vectors(path, messages):
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack(">I", len(messages)))
        for kind, prog, vers, proc, rec in messages:
            f.write(struct.pack(">IIIII", kind, prog, vers, proc, len(rec)))
            f.write(rec)


def read_vectors(path):
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != MAGIC:
        sys.exit(f"{path}: not a vector file (Git LFS pointer?)")
    (count,), i, messages = struct.unpack_from(">I", blob, 8), 12, []
    for _ in range(count):
        kind, prog, vers, proc, size = struct.unpack_from(">IIIII", blob, i)
        i += 20
        messages.append((kind, prog, vers, proc, blob[i:i + size]))
        i += size
    if i != len(blob):
        sys.exit(f"{path}: {len(blob) - i} trailing bytes")
    return messages


def summary(messages):
    counts = collections.Counter((prog, vers, proc, kind) for kind, prog, vers, proc, _ in messages)
    lines = []
    for prog, vers, proc in sorted({k[:3] for k in counts}):
        lines.append(f"  {proc_name(prog, vers, proc):<22} calls {counts[(prog, vers, proc, 0)]:4}"
                     f"  replies {counts[(prog, vers, proc, 1)]:4}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pcaps", nargs="*", help=f"pcap files (default: {DEFAULT_PCAPS}/*.pcap)")
    ap.add_argument("--pcap-dir", default=DEFAULT_PCAPS)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--dump", metavar="VEC", help="print the per-procedure counts of a .vec file")
    args = ap.parse_args()

    if args.dump:
        messages = read_vectors(args.dump)
        print(f"{args.dump}: {len(messages)} messages")
        print(summary(messages))
        return

    pcaps = args.pcaps or sorted(os.path.join(args.pcap_dir, p) for p in os.listdir(args.pcap_dir)
                                 if p.endswith(".pcap"))
    if not pcaps:
        sys.exit(f"no pcap files in {args.pcap_dir}")
    os.makedirs(args.out, exist_ok=True)
    for pcap in pcaps:
        messages, streams, unpaired = extract(pcap)
        name = os.path.splitext(os.path.basename(pcap))[0] + ".vec"
        path = os.path.join(args.out, name)
        write_vectors(path, messages)
        if read_vectors(path) != messages:
            sys.exit(f"{path}: does not read back")
        print(f"{name}: {len(messages)} messages from {streams} TCP streams, {unpaired} unpaired, "
              f"{os.path.getsize(path)} bytes")
        print(summary(messages))


if __name__ == "__main__":
    main()
