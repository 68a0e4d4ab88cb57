#!/usr/bin/env python3
"""cut_proxy.py - a TCP proxy in front of an NFS server whose network the test can cut.

    cut_proxy.py PORTS_FILE CUTS_FILE SECONDS TARGET_PORT...

Listens on 127.0.0.1 at one port per TARGET_PORT (ports the kernel picks, written to
PORTS_FILE in TARGET order once listening) and forwards to 127.0.0.1:TARGET_PORT.
SIGUSR1 cuts hard: every connection is closed and the ports refuse connections for
SECONDS. SIGUSR2 cuts silently: for SECONDS everything sent either way is thrown away
(new connections too), then every connection is closed. SIGHUP tears a record: the next
chunk either way (a call or a reply) is forwarded only up to a byte that cannot end an
RPC record (records are whole 4-byte XDR units), then the cut goes on as SIGUSR1's; if
nothing flows for a second, it cuts anyway. After each cut a line goes to CUTS_FILE, so
the test knows when the network is back.

Plain threads and blocking sockets, two per connection: an asyncio version lost track
of a connection accepted around a cut (it stayed open and was never read), which
stalled a writer for good. A socket is closed only by the last thread that uses it, so
a descriptor number is never reused under a thread still reading it; a cut shuts the
sockets down, which wakes every thread blocked on them.
"""
import os
import signal
import socket
import sys
import threading
import time


class Pair:
    """Both sockets of one proxied connection; closed when its last pump ends."""

    def __init__(self, client):
        self.client = client
        self.server = None
        self.users = 0


def shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Tear:
    def __init__(self):
        self.claimed = False
        self.done = threading.Event()
        self.kept = 0


class Proxy:
    def __init__(self, targets, seconds, cuts_file):
        self.targets = targets
        self.seconds = seconds
        self.cuts_file = cuts_file
        self.ports = [0] * len(targets)
        self.lock = threading.Lock()
        self.pairs = set()  # guarded by lock
        self.resets = 0  # guarded by lock: how many times every connection was cut
        self.silent = False
        self.tear = None  # guarded by lock
        self.listeners = []  # (socket, accept thread)

    def listen(self):
        self.listeners = []
        for i, target in enumerate(self.targets):
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", self.ports[i]))
            ls.listen(128)
            self.ports[i] = ls.getsockname()[1]
            t = threading.Thread(target=self.accept_loop, args=(ls, target), daemon=True)
            t.start()
            self.listeners.append((ls, t))

    def stop_listening(self):
        for ls, t in self.listeners:
            shut(ls)  # wakes accept()
            t.join()
            ls.close()
        self.listeners = []

    def accept_loop(self, ls, target):
        while True:
            try:
                client, _ = ls.accept()
            except OSError:
                return  # shut down by a cut
            threading.Thread(target=self.connect, args=(client, target), daemon=True).start()

    def connect(self, client, target):
        pair = Pair(client)
        with self.lock:
            resets = self.resets
            self.pairs.add(pair)
        try:
            server = socket.create_connection(("127.0.0.1", target))
        except OSError:
            server = None
        with self.lock:
            if server is None or self.resets != resets:
                # Refused, or cut while connecting: this connection is cut too.
                self.pairs.discard(pair)
                shut(client)
                client.close()
                if server is not None:
                    shut(server)
                    server.close()
                return
            pair.server = server
            pair.users = 2
        threading.Thread(target=self.pump, args=(pair, client, server), daemon=True).start()
        threading.Thread(target=self.pump, args=(pair, server, client), daemon=True).start()

    def pump(self, pair, src, dst):
        sent = 0  # bytes of this direction's stream forwarded
        try:
            while data := src.recv(1 << 16):
                tear = None
                with self.lock:
                    if self.tear is not None and not self.tear.claimed and len(data) > 1:
                        tear = self.tear
                        tear.claimed = True
                if tear is not None:
                    # Up to a byte that is not at a record boundary (those lie at
                    # multiples of 4 in the stream): the peer gets part of a record.
                    keep = len(data) // 2
                    if (sent + keep) % 4 == 0:
                        keep += 1 if keep + 1 < len(data) else -1
                    dst.sendall(data[:keep])
                    tear.kept = keep
                    tear.done.set()
                    return
                if not self.silent:
                    dst.sendall(data)
                    sent += len(data)
        except OSError:
            pass
        finally:
            shut(src)
            shut(dst)
            with self.lock:
                pair.users -= 1
                last = pair.users == 0
                if last:
                    self.pairs.discard(pair)
            if last:
                pair.client.close()
                pair.server.close()

    def cut_all(self):
        with self.lock:
            self.resets += 1
            for pair in self.pairs:
                shut(pair.client)
                if pair.server is not None:
                    shut(pair.server)

    def cut(self, kind):
        what = kind
        if kind == "torn":
            tear = Tear()
            with self.lock:
                self.tear = tear
            if tear.done.wait(1.0):
                what = f"torn after {tear.kept} bytes"
            else:
                what = "torn: nothing flowed"
            with self.lock:
                self.tear = None
        if kind == "silent":
            self.silent = True
            time.sleep(self.seconds)
            self.cut_all()
            self.silent = False
        else:
            self.stop_listening()
            self.cut_all()
            time.sleep(self.seconds)
            self.listen()
        with open(self.cuts_file, "a") as f:
            f.write(what + "\n")


def main():
    ports_file, cuts_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    # Signals are taken by sigwait in this thread only: every thread started below
    # inherits the mask.
    kinds = {signal.SIGUSR1: "reset", signal.SIGUSR2: "silent", signal.SIGHUP: "torn"}
    wanted = set(kinds) | {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    proxy = Proxy([int(p) for p in sys.argv[4:]], seconds, cuts_file)
    proxy.listen()
    with open(ports_file + ".tmp", "w") as f:
        f.write(" ".join(str(p) for p in proxy.ports) + "\n")
    os.rename(ports_file + ".tmp", ports_file)
    while (sig := signal.sigwait(wanted)) in kinds:
        proxy.cut(kinds[sig])


if __name__ == "__main__":
    main()
