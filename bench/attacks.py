"""Connection attacks on a TLS server, from a separate process: slow headers, idle sockets.

    attack = ConnectionAttack(port, cafile, slow=500, idle=500, new_idle_per_second=20)
    attack.start(); ...; counts = attack.stop()

One event loop (non-blocking sockets, one process, so the attacker's GIL is not the test's)
keeps up to ``slow`` TLS connections that send request headers one byte every
``byte_interval`` seconds and never finish, ``idle`` TCP connections that send nothing, and
``idle_tls`` connections that finish the TLS handshake and then send nothing. Whatever the
server closes is opened again, as a determined attacker would. On top of that it opens
``new_idle_per_second`` fresh idle TCP connections per second and leaves them open. Used by
``tests/reliability/test_connection_attacks.py`` and as background load in ``make soak``.
"""

from __future__ import annotations

import multiprocessing as mp
import selectors
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

HEADER = (b"POST /validate HTTP/1.1\r\nHost: dra-webhook\r\nContent-Type: application/json\r\n"
          + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 64) for i in range(200)))


@dataclass
class _Sock:
    kind: str  # slow | idle | idle_tls | new
    sock: Any
    state: str = "connecting"  # connecting | handshake | open
    sent: int = 0
    next_send: float = 0.0


@dataclass
class Counts:
    """What the attacker did and saw; the last sample of ``open_*`` is the level it held."""

    opened: dict[str, int] = field(default_factory=dict)
    closed_by_server: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    open_now: dict[str, int] = field(default_factory=dict)
    max_open: dict[str, int] = field(default_factory=dict)


class ConnectionAttack:
    """Runs ``_attack`` in a child process until ``stop()``."""

    def __init__(self, port: int, cafile: str, *, slow: int = 0, idle: int = 0, idle_tls: int = 0,
                 new_idle_per_second: float = 0.0, byte_interval: float = 2.0,
                 host: str = "127.0.0.1") -> None:
        self.args = (host, port, cafile, slow, idle, idle_tls, new_idle_per_second, byte_interval)
        ctx = mp.get_context("fork")
        self._stop = ctx.Event()
        self._ready = ctx.Event()
        self._out: Any = ctx.Queue()
        self._proc = ctx.Process(target=_attack, args=(*self.args, self._stop, self._ready, self._out),
                                 daemon=True)

    def start(self, wait: float = 60.0) -> ConnectionAttack:
        """Start, and wait until the standing connections are all open (at most ``wait`` s)."""
        self._proc.start()
        self._ready.wait(wait)
        return self

    def stop(self) -> Counts:
        """Stop, close every connection, return what happened."""
        self._stop.set()
        counts: Counts = self._out.get(timeout=30)
        self._proc.join(timeout=10)
        return counts


def _attack(host: str, port: int, cafile: str, slow: int, idle: int, idle_tls: int, rate: float,
            byte_interval: float, stop: Any, ready: Any, out: Any) -> None:
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    sel = selectors.DefaultSelector()
    socks: dict[int, _Sock] = {}
    counts = Counts()
    want = {"slow": slow, "idle": idle, "idle_tls": idle_tls}
    live = {"slow": 0, "idle": 0, "idle_tls": 0, "new": 0}

    def bump(table: dict[str, int], kind: str) -> None:
        table[kind] = table.get(kind, 0) + 1

    def open_one(kind: str) -> None:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setblocking(False)
        try:
            raw.connect_ex((host, port))
        except OSError:
            raw.close()
            bump(counts.failed, kind)
            return
        s = _Sock(kind, raw)
        socks[raw.fileno()] = s
        sel.register(raw, selectors.EVENT_WRITE, s)
        live[kind] += 1
        bump(counts.opened, kind)

    def close(s: _Sock, by_server: bool) -> None:
        try:
            sel.unregister(s.sock)
        except (KeyError, ValueError):
            pass
        socks.pop(s.sock.fileno(), None)
        s.sock.close()
        live[s.kind] -= 1
        if by_server:
            bump(counts.closed_by_server, s.kind)

    def connected(s: _Sock) -> None:
        err = s.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            bump(counts.failed, s.kind)
            close(s, False)
            return
        if s.kind in ("idle", "new"):
            s.state = "open"
            sel.modify(s.sock, selectors.EVENT_READ, s)
            return
        fd = s.sock.fileno()
        s.sock = ctx.wrap_socket(s.sock, server_hostname="localhost", do_handshake_on_connect=False)
        socks[fd] = s
        s.state = "handshake"
        handshake(s)

    def handshake(s: _Sock) -> None:
        try:
            s.sock.do_handshake()
        except ssl.SSLWantReadError:
            sel.modify(s.sock, selectors.EVENT_READ, s)
            return
        except ssl.SSLWantWriteError:
            sel.modify(s.sock, selectors.EVENT_WRITE, s)
            return
        except (ssl.SSLError, OSError):
            close(s, True)
            return
        s.state = "open"
        s.next_send = time.monotonic()
        sel.modify(s.sock, selectors.EVENT_READ, s)

    def readable(s: _Sock) -> None:
        try:
            data = s.sock.recv(65536)
        except (ssl.SSLWantReadError, BlockingIOError):
            return
        except (ssl.SSLError, OSError):
            data = b""
        if not data:  # the server closed it (a 408 answer may come first)
            close(s, True)

    def trickle(now: float) -> None:
        for s in list(socks.values()):
            if s.kind == "slow" and s.state == "open" and now >= s.next_send:
                try:
                    s.sock.send(HEADER[s.sent % len(HEADER):s.sent % len(HEADER) + 1])
                    s.sent += 1
                except (ssl.SSLWantWriteError, BlockingIOError):
                    pass
                except (ssl.SSLError, OSError):
                    close(s, True)
                    continue
                s.next_send = now + byte_interval

    next_new = time.monotonic()
    next_trickle = 0.0
    while not stop.is_set():
        now = time.monotonic()
        for kind, n in want.items():
            for _ in range(min(50, n - live[kind])):  # ramp up (and re-open) in steps
                open_one(kind)
        if rate > 0 and now >= next_new and ready.is_set():
            open_one("new")
            next_new += 1.0 / rate
        if all(live[k] >= n for k, n in want.items()) and all(
                s.state == "open" for s in socks.values() if s.kind != "new"):
            ready.set()
        for key, events in sel.select(timeout=0.05):
            s = key.data
            if s.state == "connecting":
                connected(s)
            elif s.state == "handshake":
                handshake(s)
            elif events & selectors.EVENT_READ:
                readable(s)
        if now >= next_trickle:
            trickle(now)
            next_trickle = now + 0.1
        for kind, n in live.items():
            counts.open_now[kind] = n
            counts.max_open[kind] = max(counts.max_open.get(kind, 0), n)
    for s in list(socks.values()):
        close(s, False)
    out.put(counts)
