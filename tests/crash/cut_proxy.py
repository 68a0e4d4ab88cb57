#!/usr/bin/env python3
"""cut_proxy.py - a TCP proxy in front of an NFS server whose network the test can cut.

    cut_proxy.py PORTS_FILE CUTS_FILE SECONDS TARGET_PORT...

Listens on 127.0.0.1 at one port per TARGET_PORT (ports the kernel picks, written to
PORTS_FILE in TARGET order once listening) and forwards to 127.0.0.1:TARGET_PORT.
SIGUSR1 cuts hard: every connection is reset and the ports refuse connections for
SECONDS. SIGUSR2 cuts silently: for SECONDS everything sent either way is thrown away
(new connections too), then every connection is reset. SIGHUP tears a record: the next
chunk either way (a call or a reply) is forwarded only up to a byte that cannot end an
RPC record (records are whole 4-byte XDR units), then the cut goes on as SIGUSR1's; if
nothing flows for a second, it cuts anyway. After each cut a line goes to CUTS_FILE, so
the test knows when the network is back.
"""
import asyncio
import os
import signal
import sys


class Proxy:
    def __init__(self, targets, seconds, cuts_file):
        self.targets = targets
        self.seconds = seconds
        self.cuts_file = cuts_file
        self.ports = [0] * len(targets)
        self.servers = []
        self.connections = set()  # the transports of both sides of every connection
        self.silent = False
        self.cutting = False
        self.tear = None  # a future the next chunk completes, once it is torn

    async def listen(self):
        self.servers = []
        for i, target in enumerate(self.targets):
            server = await asyncio.start_server(
                lambda r, w, t=target: self.forward(r, w, t), "127.0.0.1", self.ports[i],
                reuse_address=True)
            self.ports[i] = server.sockets[0].getsockname()[1]
            self.servers.append(server)

    async def forward(self, client_r, client_w, target):
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_w.transport.abort()
            return
        pair = (client_w.transport, server_w.transport)
        self.connections.update(pair)
        try:
            await asyncio.gather(self.pump(client_r, server_w), self.pump(server_r, client_w))
        finally:
            self.connections.difference_update(pair)
            for t in pair:
                t.abort()

    async def pump(self, src, dst):
        sent = 0  # bytes of this direction's stream forwarded
        try:
            while data := await src.read(1 << 16):
                if self.tear is not None and not self.tear.done() and len(data) > 1:
                    # Up to a byte that is not at a record boundary (those lie at
                    # multiples of 4 in the stream): the peer gets part of a record.
                    keep = len(data) // 2
                    if (sent + keep) % 4 == 0:
                        keep += 1 if keep + 1 < len(data) else -1
                    dst.write(data[:keep])
                    await dst.drain()
                    self.tear.set_result(keep)
                    return
                if not self.silent:
                    dst.write(data)
                    await dst.drain()
                    sent += len(data)
        except (ConnectionError, OSError):
            pass
        finally:
            dst.transport.abort()

    def reset_all(self):
        for t in list(self.connections):
            t.abort()
        self.connections.clear()

    async def cut(self, silent, torn=False):
        if self.cutting:
            return
        self.cutting = True
        what = "silent" if silent else "reset"
        if torn:
            self.tear = asyncio.get_running_loop().create_future()
            try:
                what = f"torn after {await asyncio.wait_for(asyncio.shield(self.tear), 1.0)} bytes"
            except asyncio.TimeoutError:
                what = "torn: nothing flowed"
            self.tear = None
        if silent:
            self.silent = True
            await asyncio.sleep(self.seconds)
            self.reset_all()
            self.silent = False
        else:
            for server in self.servers:
                server.close()
            self.reset_all()
            await asyncio.sleep(self.seconds)
            await self.listen()
        self.cutting = False
        with open(self.cuts_file, "a") as f:
            f.write(what + "\n")


async def main():
    ports_file, cuts_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    proxy = Proxy([int(p) for p in sys.argv[4:]], seconds, cuts_file)
    await proxy.listen()
    with open(ports_file + ".tmp", "w") as f:
        f.write(" ".join(str(p) for p in proxy.ports) + "\n")
    os.rename(ports_file + ".tmp", ports_file)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, lambda: asyncio.ensure_future(proxy.cut(False)))
    loop.add_signal_handler(signal.SIGUSR2, lambda: asyncio.ensure_future(proxy.cut(True)))
    loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(proxy.cut(False, True)))
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
