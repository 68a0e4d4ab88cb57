#!/usr/bin/env python3
"""Writes seed corpora for the fuzz targets from the captured wire vectors.

    fuzz/make_seeds.py --out DIR [--vectors tests/data/nfs3-vectors] [--max-bytes N]

Creates DIR/TARGET for each fuzz target (rpc_call_fuzz, nfs3_reply_fuzz,
record_marking_fuzz, and from server_seeds.py server_dispatch_fuzz and exports_parser_fuzz),
one file per seed, named by content hash (re-running is idempotent). Seeds are generated, not
committed: thousands of near-identical files would only bloat the repository.
"""

import argparse
import collections
import hashlib
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))
sys.dont_write_bytecode = True  # no scripts/__pycache__ in the source tree
import extract_vectors  # noqa: E402  (the .vec reader lives with the writer)
import server_seeds  # noqa: E402

NFS, MOUNT = 100003, 100005
NUM_NFS_PROCS = 22


def reply_results(message):
    """The result bytes after an accepted-SUCCESS reply header, or None."""
    if len(message) < 24:
        return None
    _, mtype, stat, _, verf_len = struct.unpack_from(">IIIII", message)
    at = 20 + verf_len + (-verf_len % 4)
    if mtype != 1 or stat != 0 or len(message) < at + 4:
        return None
    if struct.unpack_from(">I", message, at)[0] != 0:  # accept_stat SUCCESS
        return None
    return message[at + 4:]


def record_mark(message, rng):
    """The message as a record of 1-3 fragments (RFC 5531 section 11)."""
    cuts = sorted(rng.sample(range(1, len(message)), min(rng.randint(0, 2), len(message) - 1)))
    pieces = [message[a:b] for a, b in zip([0] + cuts, cuts + [len(message)])]
    out = b""
    for i, piece in enumerate(pieces):
        last = 0x80000000 if i == len(pieces) - 1 else 0
        out += struct.pack(">I", last | len(piece)) + piece
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--vectors", default=os.path.join(ROOT, "tests", "data", "nfs3-vectors"))
    ap.add_argument("--max-bytes", type=int, default=16384,
                    help="skip larger messages (big READ/WRITE payloads only slow the fuzzer)")
    ap.add_argument("--per-proc", type=int, default=24,
                    help="at most this many seeds per procedure and direction")
    args = ap.parse_args()

    seeds = collections.defaultdict(set)
    taken = collections.Counter()
    rng = random.Random(1813)  # fixed: the same vectors give the same corpus
    for name in sorted(os.listdir(args.vectors)):
        if not name.endswith(".vec"):
            continue
        messages = extract_vectors.read_vectors(os.path.join(args.vectors, name))
        for kind, prog, vers, proc, message in messages:
            if prog not in (NFS, MOUNT) or vers != 3 or len(message) > args.max_bytes:
                continue
            key = (prog, proc, kind)
            if taken[key] >= args.per_proc:
                continue
            taken[key] += 1
            if kind == 0:
                seeds["rpc_call_fuzz"].add(message)
            else:
                results = reply_results(message)
                if results is not None:
                    selector = proc if prog == NFS else NUM_NFS_PROCS + proc
                    seeds["nfs3_reply_fuzz"].add(bytes([selector]) + results)
        # Short runs of consecutive messages as one byte stream, fragmented at random, read
        # in chunks of random sizes: prefix = count byte + size bytes (record_marking_fuzz.cc).
        for start in range(0, len(messages), 7):
            stream = b"".join(record_mark(m[4], rng) for m in messages[start:start + 3])
            if len(stream) > args.max_bytes:
                continue
            sizes = bytes(rng.randrange(256) for _ in range(rng.randint(0, 6)))
            seeds["record_marking_fuzz"].add(bytes([len(sizes)]) + sizes + stream)
            # The same with a diversion (bit 7 of the count byte, then 4 plan bytes): where
            # the region starts, its length, its destination's size, when filling stops.
            sizes = bytes(rng.randrange(1, 128) for _ in range(rng.randint(1, 6)))
            plan = bytes([rng.randrange(64), rng.randrange(256), rng.choice([0, 128, 255]),
                          rng.choice([0, 0, 1, 3])])
            seeds["record_marking_fuzz"].add(bytes([0x80 | len(sizes)]) + sizes + plan + stream)

    seeds["server_dispatch_fuzz"] = server_seeds.server_dispatch_seeds(seeds["rpc_call_fuzz"])
    seeds["exports_parser_fuzz"] = set(server_seeds.EXPORTS_SEEDS)

    for target, blobs in sorted(seeds.items()):
        directory = os.path.join(args.out, target)
        os.makedirs(directory, exist_ok=True)
        for blob in blobs:
            path = os.path.join(directory, hashlib.sha1(blob).hexdigest())
            with open(path, "wb") as f:
                f.write(blob)
        print(f"{target}: {len(blobs)} seeds in {directory}")


if __name__ == "__main__":
    main()
