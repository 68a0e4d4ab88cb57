"""Seeds for server_dispatch_fuzz and exports_parser_fuzz (used by make_seeds.py).

server_dispatch_fuzz input: a peer byte, then call records, each as a 2-byte big-endian
length and the RPC call message. HANDLE(n) is the marker the harness replaces with a real
file handle: 0 the root of /fuzz/rw, 1 the root of /fuzz/ro, 2 the newest handle a reply
handed out, 3 the one before it, and so on (see server_dispatch_fuzz.cc).
"""

import struct

NFS, MOUNT, PMAP = 100003, 100005, 100000
MARKER = b"\x00\x00\x00\x04\xffFH"

# Peers, as indexes into server_dispatch_fuzz.cc's kPeers.
LOCAL_PRIV, LOCAL_UNPRIV, NAMED, NET, V6, RW_RO, MAPPED, DNS_FAIL, UNIX = range(9)


def u32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack(">Q", v & 0xFFFFFFFFFFFFFFFF)


def opaque(b):
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


def string(s):
    return opaque(s.encode() if isinstance(s, str) else s)


def HANDLE(slot):  # noqa: N802 (reads like the placeholder it is)
    return MARKER + bytes([slot])


def auth_sys(uid, gid, gids=(), machine="fuzz", stamp=1):
    body = u32(stamp) + string(machine) + u32(uid) + u32(gid) + u32(len(gids))
    body += b"".join(u32(g) for g in gids)
    return u32(1) + opaque(body)


AUTH_NONE = u32(0) + u32(0)
ROOT = auth_sys(0, 0)
USER = auth_sys(1000, 1000, (1000, 27))
OTHER = auth_sys(2000, 2000)


class Calls:
    """Call messages with increasing xids (the duplicate request cache keys on them)."""

    def __init__(self, first_xid=0x1000):
        self.xid = first_xid

    def call(self, prog, vers, proc, args=b"", cred=USER, verf=AUTH_NONE, rpcvers=2, mtype=0):
        self.xid += 1
        return (u32(self.xid) + u32(mtype) + u32(rpcvers) + u32(prog) + u32(vers) + u32(proc)
                + cred + verf + args)

    def nfs(self, proc, args=b"", cred=USER):
        return self.call(NFS, 3, proc, args, cred)

    def mount(self, proc, args=b"", cred=USER):
        return self.call(MOUNT, 3, proc, args, cred)


def sattr(mode=None, uid=None, gid=None, size=None, atime=0, mtime=0):
    out = b""
    for v, enc in ((mode, u32), (uid, u32), (gid, u32), (size, u64)):
        out += u32(0) if v is None else u32(1) + enc(v)
    for how in (atime, mtime):  # 0 don't change, 1 server time, 2 client time
        out += u32(how) + (u32(1_700_000_000) + u32(5) if how == 2 else b"")
    return out


def dirop(slot, name):
    return HANDLE(slot) + string(name)


# nfsproc3 numbers
(NULL, GETATTR, SETATTR, LOOKUP, ACCESS, READLINK, READ, WRITE, CREATE, MKDIR, SYMLINK, MKNOD,
 REMOVE, RMDIR, RENAME, LINK, READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, COMMIT) = range(22)


def proc_args(proc, slot=0):
    """Plausible arguments for each NFSv3 procedure, on handle `slot`."""
    fh = HANDLE(slot)
    return {
        NULL: b"",
        GETATTR: fh,
        SETATTR: fh + sattr(mode=0o640, size=100, mtime=2) + u32(0),
        LOOKUP: dirop(slot, "f"),
        ACCESS: fh + u32(0x3F),
        READLINK: fh,
        READ: fh + u64(0) + u32(4096),
        WRITE: fh + u64(10) + u32(5) + u32(0) + opaque(b"hello"),
        CREATE: dirop(slot, "f") + u32(0) + sattr(mode=0o644),
        MKDIR: dirop(slot, "d") + sattr(mode=0o755),
        SYMLINK: dirop(slot, "l") + sattr() + string("f"),
        MKNOD: dirop(slot, "p") + u32(7) + sattr(mode=0o600),  # NF3FIFO
        REMOVE: dirop(slot, "f"),
        RMDIR: dirop(slot, "d"),
        RENAME: dirop(slot, "f") + dirop(slot, "g"),
        LINK: fh + dirop(0, "h"),
        READDIR: fh + u64(0) + b"\0" * 8 + u32(4096),
        READDIRPLUS: fh + u64(0) + b"\0" * 8 + u32(1024) + u32(8192),
        FSSTAT: fh,
        FSINFO: fh,
        PATHCONF: fh,
        COMMIT: fh + u64(0) + u32(0),
    }[proc]


def records(peer, messages):
    out = bytes([peer])
    for m in messages:
        out += struct.pack(">H", len(m)) + m
    return out


def server_dispatch_seeds(captured_calls):
    """Returns a set of inputs; `captured_calls` are real call messages from wire vectors."""
    c = Calls()
    seeds = set()

    # Each procedure alone on the root of each export, as root and as a user.
    for proc in range(22):
        for slot, cred in ((0, USER), (0, ROOT), (1, USER)):
            seeds.add(records(LOCAL_PRIV, [c.nfs(proc, proc_args(proc, slot), cred)]))

    # A working session: the handles each reply hands out are used by the next calls.
    session = [
        c.mount(1, string("/fuzz/rw")),
        c.nfs(SETATTR, HANDLE(0) + sattr(mode=0o1777) + u32(0), ROOT),  # open the root up
        c.nfs(CREATE, dirop(0, "f") + u32(0) + sattr(mode=0o666)),  # slot 2 = f
        c.nfs(WRITE, HANDLE(2) + u64(0) + u32(11) + u32(0) + opaque(b"hello world")),
        c.nfs(WRITE, HANDLE(2) + u64(70000) + u32(3) + u32(2) + opaque(b"end")),  # FILE_SYNC
        c.nfs(READ, HANDLE(2) + u64(0) + u32(100)),
        c.nfs(COMMIT, HANDLE(2) + u64(0) + u32(0)),
        c.nfs(SETATTR, HANDLE(2) + sattr(mode=0o600, size=5, atime=1, mtime=2) + u32(0)),
        c.nfs(GETATTR, HANDLE(2)),
        c.nfs(ACCESS, HANDLE(2) + u32(0x3F)),
        c.nfs(MKDIR, dirop(0, "d") + sattr(mode=0o777)),  # slot 2 = d, 3 = f
        c.nfs(CREATE, dirop(2, "e") + u32(2) + b"verifier"),  # EXCLUSIVE; slot 2 = d/e
        c.nfs(SYMLINK, dirop(0, "l") + sattr() + string("d/e")),  # slot 2 = l
        c.nfs(READLINK, HANDLE(2)),
        c.nfs(MKNOD, dirop(0, "c") + u32(3) + sattr(mode=0o600) + u32(1) + u32(3)),  # NF3CHR
        c.nfs(MKNOD, dirop(0, "s") + u32(6) + sattr(mode=0o600)),  # NF3SOCK
        c.nfs(LOOKUP, dirop(0, "f")),  # slot 2 = f
        c.nfs(LINK, HANDLE(2) + dirop(0, "f2")),
        c.nfs(READDIR, HANDLE(0) + u64(0) + b"\0" * 8 + u32(512)),
        c.nfs(READDIRPLUS, HANDLE(0) + u64(0) + b"\0" * 8 + u32(512) + u32(4096)),
        c.nfs(RENAME, dirop(0, "f2") + dirop(0, "g")),
        c.nfs(LOOKUP, dirop(0, "..")),
        c.nfs(REMOVE, dirop(0, "g")),
        c.nfs(FSSTAT, HANDLE(0)),
        c.nfs(FSINFO, HANDLE(0)),
        c.nfs(PATHCONF, HANDLE(0)),
        c.nfs(LOOKUP, dirop(0, "d")),  # slot 2 = d
        c.nfs(REMOVE, dirop(2, "e")),
        c.nfs(RMDIR, dirop(0, "d")),
        c.nfs(GETATTR, HANDLE(2)),  # the removed directory: stale
        c.mount(3, string("/fuzz/rw")),
    ]
    seeds.add(records(LOCAL_PRIV, session))
    seeds.add(records(LOCAL_UNPRIV, session[:12]))
    seeds.add(records(NET, session[:8]))
    seeds.add(records(V6, session[:8]))

    # Another user at a file that is not theirs (permission checks).
    seeds.add(records(LOCAL_PRIV, [
        c.nfs(SETATTR, HANDLE(0) + sattr(mode=0o1777) + u32(0), ROOT),
        c.nfs(CREATE, dirop(0, "mine") + u32(0) + sattr(mode=0o600)),
        c.nfs(WRITE, HANDLE(2) + u64(0) + u32(2) + u32(0) + opaque(b"no"), OTHER),
        c.nfs(READ, HANDLE(2) + u64(0) + u32(10), OTHER),
        c.nfs(ACCESS, HANDLE(2) + u32(0x3F), OTHER),
        c.nfs(SETATTR, HANDLE(2) + sattr(mode=0o666) + u32(0), OTHER),
        c.nfs(REMOVE, dirop(0, "mine"), OTHER),  # sticky root directory
        c.nfs(RENAME, dirop(0, "mine") + dirop(0, "theirs"), OTHER),
    ]))

    # The same call from every kind of peer (export rules, squashing, secure ports).
    for peer in range(9):
        seeds.add(records(peer, [c.mount(1, string("/fuzz/rw")), c.mount(1, string("/fuzz/ro")),
                                 c.nfs(CREATE, dirop(0, "p%d" % peer) + u32(1) + sattr()),
                                 c.nfs(GETATTR, HANDLE(1))]))

    # MOUNT: every procedure, paths inside and outside the exports.
    mounts = [c.mount(0), c.mount(1, string("/fuzz/rw")), c.mount(1, string("/fuzz//ro/")),
              c.mount(1, string("/fuzz/rw/d/e")), c.mount(1, string("/fuzz/rw/../ro")),
              c.mount(1, string("/nope")), c.mount(2), c.mount(3, string("/fuzz/rw")),
              c.mount(4), c.mount(5), c.mount(6)]
    seeds.add(records(LOCAL_PRIV, mounts))
    seeds.add(records(NAMED, mounts))
    for m in mounts:
        seeds.add(records(LOCAL_UNPRIV, [m]))

    # The port mapper.
    mapping = u32(NFS) + u32(3) + u32(6) + u32(0)
    pmap = [c.call(PMAP, 2, 0), c.call(PMAP, 2, 1, mapping), c.call(PMAP, 2, 2, mapping),
            c.call(PMAP, 2, 3, mapping), c.call(PMAP, 2, 3, u32(MOUNT) + u32(1) + u32(17) + u32(0)),
            c.call(PMAP, 2, 4), c.call(PMAP, 2, 5), c.call(PMAP, 4, 3, mapping)]
    seeds.add(records(LOCAL_PRIV, pmap))
    for m in pmap:
        seeds.add(records(LOCAL_UNPRIV, [m]))

    # What the dispatcher refuses: RPC version, credentials, programs, versions, procedures,
    # arguments; and a reply instead of a call.
    refused = [
        c.call(NFS, 3, 0, rpcvers=3),
        c.call(NFS, 3, 0, cred=u32(1) + opaque(b"\0" * 3)),
        c.call(NFS, 3, 0, cred=auth_sys(0, 0, tuple(range(17)))),
        c.call(NFS, 3, 0, cred=u32(6) + opaque(b"gss")),
        c.call(NFS, 3, 0, verf=u32(0) + opaque(b"\0" * 401)),
        c.call(NFS, 2, 0), c.call(NFS, 4, 0), c.call(100021, 4, 0), c.call(NFS, 3, 22),
        c.call(MOUNT, 1, 1, string("/fuzz/rw")),
        c.nfs(GETATTR, u32(65) + b"\0" * 68), c.nfs(GETATTR, u32(8) + b"\0" * 8),
        c.nfs(WRITE, HANDLE(0) + u64(0) + u32(100) + u32(0) + opaque(b"short")),
        c.call(NFS, 3, 0, mtype=1),
        c.nfs(READ, HANDLE(0xF0) + u64(0) + u32(1)), c.nfs(GETATTR, HANDLE(0xF1)),
        c.nfs(GETATTR, HANDLE(0xF2)),
    ]
    seeds.add(records(LOCAL_PRIV, refused))
    for m in refused:
        seeds.add(records(LOCAL_PRIV, [m]))

    # Retransmissions: the duplicate request cache answers the second of each.
    dup = c.nfs(CREATE, dirop(0, "dup") + u32(1) + sattr())
    seeds.add(records(LOCAL_PRIV, [dup, dup, c.nfs(REMOVE, dirop(0, "dup")), dup]))

    # Real calls captured from the kernel client and libnfs: their handles are foreign
    # (BADHANDLE), but their arguments are exactly what clients send.
    for m in sorted(captured_calls)[:200]:
        if len(m) <= 0xFFFF:
            seeds.add(records(LOCAL_PRIV, [m]))
    return seeds


EXPORTS_SEEDS = [
    b"/srv/a 127.0.0.1(rw,no_root_squash,insecure)\n",
    b"/srv/b -ro,async 10.0.0.0/8(rw) 192.168.1.0/255.255.255.0 *.lab.example(ro)\n",
    b"# comment\n/srv/c \\\n  host.example(rw,sync,fsid=7) ::1(rw) fe80::/64(ro) *\n",
    b'"/srv/with space" *(ro,all_squash,anonuid=1000,anongid=1000)\n/srv/\\040x @group(rw)\n',
    b"/ *(rw,fsid=root,secure,wdelay,no_subtree_check,crossmnt,nohide,sec=sys)\n",
    b"/srv/d -rw\n/srv/e h[ab]?.example(rw) host (rw)\n/srv/d\n",
    b"/srv/f 1.2.3.4/33(rw)\n/srv/g gss/krb5(rw)\n/srv/h *(fsid=70000)\n",
    b"/srv/i a(fsid=5)\n/srv/j b(fsid=5)\n/srv/./k/../l// *(rw,anonuid=-1)\n",
]
