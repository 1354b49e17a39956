"""The script's one way out: a forwarder on 127.0.0.1:<port> relaying each connection to the platform's
egress proxy socket (see --egress-port in harness.py)."""

import os

from . import OUT_FD

EGRESS_SOCKET = "/run/tapyard/egress.sock"
RELAY_BUFFER = 1 << 18


def start_egress_forwarder(port):
    """Listens before the script starts (so its first request finds the port open), then relays in a
    process of its own: a script busy with the CPU or blocked in C code never stalls its own traffic."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    if os.fork() != 0:
        listener.close()
        return
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(OUT_FD)
        relay(listener)
    finally:
        os._exit(0)


class RelayEnd:
    """One socket of a relayed connection: what waits to be written to it, and whether it ended."""

    def __init__(self, sock):
        self.sock = sock
        self.peer = None
        self.out = bytearray()
        self.eof = False
        self.shut = False


def relay(listener):
    """Copies bytes between each accepted TCP connection and a new connection to the egress socket."""
    """Copies bytes between each accepted TCP connection and a new connection to the egress socket."""
    import selectors
    import socket

    read, write = selectors.EVENT_READ, selectors.EVENT_WRITE
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, read)
    registered = set()

    def watch(end):
        if end.sock.fileno() < 0:
            return
        events = 0
        if not end.eof and len(end.peer.out) < RELAY_BUFFER:
            events |= read
        if end.out:
            events |= write
        if events and end.sock in registered:
            sel.modify(end.sock, events, end)
        elif events:
            sel.register(end.sock, events, end)
            registered.add(end.sock)
        elif end.sock in registered:
            sel.unregister(end.sock)
            registered.discard(end.sock)

    def close(end):
        for e in (end, end.peer):
            if e.sock in registered:
                sel.unregister(e.sock)
                registered.discard(e.sock)
            e.sock.close()

    def settle(end):
        """Passes an end of stream on once its bytes are written; True when the pair is closed."""
        for e in (end, end.peer):
            if e.eof and not e.peer.out and not e.peer.shut:
                try:
                    e.peer.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                e.peer.shut = True
        if end.eof and end.peer.eof and not end.out and not end.peer.out:
            close(end)
            return True
        return False

    while True:
        for key, mask in sel.select():
            if key.fileobj is listener:
                try:
                    client, _ = listener.accept()
                except OSError:
                    continue
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    upstream.connect(EGRESS_SOCKET)
                except OSError:
                    client.close()
                    upstream.close()
                    continue
                client.setblocking(False)
                upstream.setblocking(False)
                a, b = RelayEnd(client), RelayEnd(upstream)
                a.peer, b.peer = b, a
                watch(a)
                watch(b)
                continue
            end = key.data
            if end.sock.fileno() < 0:
                continue
            try:
                if mask & read:
                    data = end.sock.recv(1 << 16)
                    if data:
                        end.peer.out += data
                    else:
                        end.eof = True
                if mask & write and end.out:
                    del end.out[: end.sock.send(end.out)]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                close(end)
                continue
            if not settle(end):
                watch(end)
                watch(end.peer)
