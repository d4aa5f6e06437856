"""The gunicorn worker: gthread's thread pool, fed only with requests that have fully arrived.

Stock ``gthread`` hands every new connection to a pool thread, which then runs the TLS handshake
and waits for the request: an idle or slow client (slowloris) holds one of the few threads for
seconds, and a few hundred of them starve the server. This worker keeps each connection in the
worker's event loop until one whole request is in memory: the handshake and every read before
that are non-blocking steps of the loop, under one deadline for the whole request
(``REQUEST_TIMEOUT_SECONDS``, from accept or from the first byte on a kept-alive connection).
Only then does a pool thread parse and answer it, from the buffer. An idle connection costs a
file descriptor and a few KiB, never a thread. Closing a connection (linger for the client's
FIN) happens in the loop as well.

What stays gthread's: the thread pool, request handling, keep-alive bookkeeping and graceful
stop. What this class adds: the pre-request stage, eviction of the oldest unfinished
connection when the worker is full, ``Connection: close`` on every answer once draining
starts, a longer keep-alive linger when stopping (see ``runner``), and balanced accepts.

Balanced accepts: the workers share one listening socket and the kernel wakes all of them for
each new connection; whichever is quickest takes it, so a few long-lived keep-alive connections
(the apiserver's) often all land on one worker and leave the other cores idle (measured: 4+0
in one of five runs, halving throughput). Each worker posts its open connection count on a
``ConnectionBoard`` shared with its siblings, and stops listening while it holds more
connections than the least loaded live sibling; a sibling that has not posted for
``balance.BOARD_STALE_SECONDS`` (stuck, or gone) is not counted, so accepting never waits on it. Pinned to gunicorn 27,
whose ``ThreadWorker`` internals (``poller``, ``nr_conns``, ``enqueue_req``...) it builds on.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import resource
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook.server.balance import ConnectionBoard

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 10.0
"""Whole-request deadline: TLS handshake (new connections), headers and body must all arrive
within this time. The apiserver sends a request at once; a client that trickles bytes is cut."""
CLOSE_LINGER_SECONDS = 2.0
"""After the answer of a closing connection: how long to wait for the client's FIN."""
DRAIN_LINGER_SECONDS = 5.0
"""When the worker stops: how long kept-alive connections stay open for one more request, which
is answered with ``Connection: close`` (a client may be sending on them already)."""
MAX_HEADER_BYTES = 64 * 1024
"""A request head larger than this is refused with 431 (gunicorn's own limits are lower)."""
YIELD_RECHECK_SECONDS = 0.02
"""How often a worker that has stopped listening for balance looks at the board again."""
MAX_PENDING = 2048
"""Connections per worker still in the pre-request stage; past it the oldest is dropped."""
BUFFER_BUDGET_BYTES = 128 * 1024 * 1024
"""Request bytes held by one worker's pre-request stage at most; past it the oldest goes."""
NOTIFY_SECONDS = 1.0

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*([0-9]+)[ \t]*(?=\r\n)", re.I)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding[ \t]*:[^\r\n]*chunked", re.I)
_LAST_CHUNK = re.compile(rb"(?:^|\r\n)0+[ \t]*(?:;[^\r\n]*)?\r\n(?:[^\r\n]+\r\n)*\r\n\Z")
_NO_FD = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _answer(status: str) -> bytes:
    """A complete HTTP/1.1 answer sent by the loop itself (no pool thread involved)."""
    body = b'{"error": "%s", "code": %s}' % (status.encode(), status.split()[0].encode())
    return (b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s") % (status.encode(), len(body), body)


REQUEST_TIMEOUT = _answer("408 Request Timeout")
HEADERS_TOO_LARGE = _answer("431 Request Header Fields Too Large")


def request_complete(buf: bytearray | bytes, max_body: int) -> bool | None:
    """Whether ``buf`` (the bytes received so far) holds a whole request.

    True when the head and a ``Content-Length`` body are in (or the body is over ``max_body``,
    which the app refuses without reading it, or it is chunked and its last chunk is in); False
    while more must come; None when the head is over ``MAX_HEADER_BYTES``. Only framing is
    looked at here: gunicorn's parser validates the request in the pool thread.
    """
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None if len(buf) > MAX_HEADER_BYTES else False
    if end > MAX_HEADER_BYTES:
        return None
    have = len(buf) - end - 4
    if _CHUNKED.search(buf, 0, end + 2):
        return have > max_body or _LAST_CHUNK.search(bytes(buf[-8192:])) is not None
    m = _CONTENT_LENGTH.search(buf, 0, end + 2)
    if m is None:
        return True  # no body, or a malformed length that gunicorn answers with 400
    need = int(m.group(1)) if len(m.group(1)) < 19 else max_body + 1
    return need > max_body or have >= need


class _Conn(TConn):  # type: ignore[misc]
    """A gthread connection plus what the pre-request stage needs."""

    def __init__(self, cfg: Any, sock: Any, client: Any, server: Any) -> None:
        super().__init__(cfg, sock, client, server)
        self.buf = bytearray()
        self.handshaken = False
        self.events = selectors.EVENT_READ
        self.stage = "new"
        """new | reading | closing | handed (in a pool thread or kept alive) | gone."""
        self.epoch = 0
        """Incremented each time the connection enters a timed stage (see the deques)."""


class AdmissionWorker(ThreadWorker):  # type: ignore[misc]
    """gthread with the pre-request stage described in the module docstring."""

    max_body = 3 * 1024 * 1024
    """Bodies up to this size are buffered by the loop (the runner sets the configured limit)."""
    board: ConnectionBoard | None = None
    """Shared with the sibling workers (the runner sets one per configuration); None: no balancing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (deadline, epoch, conn) in deadline order; an entry is stale once the connection
        # left the stage (or entered it again: a new epoch), and is skipped when reached.
        self.reading: deque[tuple[float, int, _Conn]] = deque()
        self.closing: deque[tuple[float, int, _Conn]] = deque()
        self.n_reading = 0
        self.buffered = 0
        self.draining = False
        """Set on SIGTERM: every answer from then on closes its connection."""
        self.max_pending = MAX_PENDING
        self.on_drop: Callable[[str], None] = lambda reason: None
        """Called with a reason (timeout, evicted, tls, too-large) for each dropped connection."""
        self.slot: int | None = None
        self.yielding = False
        """More connections than the least loaded live sibling: not listening for now."""

    def init_process(self) -> None:
        """Raise the open-files limit and size the pre-request stage by it, then run gthread's set-up."""
        self.max_pending = min(MAX_PENDING, _raise_fd_limit() // 2)
        self._notified = 0.0
        super().init_process()

    def notify(self) -> None:
        """Tell the master we are alive, at most every ``NOTIFY_SECONDS`` (gthread does it on
        every loop turn, one syscall per request; the master only looks every few seconds).
        Called at the top of every loop turn, so the connection board is kept here too."""
        now = time.monotonic()
        if self.board is not None:
            self._balance(self.board, now)
        if now - self._notified >= NOTIFY_SECONDS:
            self._notified = now
            super().notify()

    # ------------------------------------------------------------------ balancing
    def _balance(self, board: ConnectionBoard, now: float) -> None:
        pid = os.getpid()
        if not self.alive:  # draining: never accepts again, so no sibling may wait for us
            if self.slot is not None:
                board.release(self.slot, pid)
                self.slot = None
            self.yielding = False
            return
        if self.slot is None or not board.post(self.slot, pid, self.nr_conns, now):
            self.slot = board.claim(pid, now)
            if self.slot is None:
                self.yielding = False
                return
        fewest = board.fewest_elsewhere(self.slot, now)
        self.yielding = fewest is not None and self.nr_conns > fewest
        if self.yielding and self._accepting:
            super().set_accept_enabled(False)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """gthread's poll, but a yielding worker looks again within ``YIELD_RECHECK_SECONDS``:
        its siblings' counts change without waking it, and two workers may both yield for a
        moment on counts one turn old; neither may then stay deaf for a whole second."""
        super().wait_for_and_dispatch_events(min(timeout, YIELD_RECHECK_SECONDS) if self.yielding else timeout)

    def set_accept_enabled(self, enabled: bool) -> None:
        """gthread's switch, except that a yielding worker stays deaf (the loop asks again each turn)."""
        super().set_accept_enabled(enabled and not self.yielding)

    # ------------------------------------------------------------------ accepting
    def accept(self, listener: socket.socket) -> None:
        """Accept one waiting connection and start its handshake in the loop. One per wake-up,
        as gthread does: the workers share the listening socket, and a worker that took a whole
        burst would get every connection of a few keep-alive clients (one busy core, one idle)."""
        try:
            raw, addr = listener.accept()
        except BlockingIOError:
            return
        except OSError as e:
            if e.errno in _NO_FD:  # out of descriptors: make room, the client retries
                self._evict("evicted")
                return
            if e.errno in (errno.ECONNABORTED, errno.EINTR):
                return
            raise
        self.nr_conns += 1
        try:
            raw.setblocking(False)
            tls = gsock.ssl_context(self.cfg).wrap_socket(
                raw, server_side=True, do_handshake_on_connect=False,
                suppress_ragged_eofs=self.cfg.suppress_ragged_eofs)
            tls.setblocking(False)
        except (OSError, ValueError) as e:
            log.debug("tls: cannot wrap a new connection: %s", e)
            self.nr_conns -= 1
            raw.close()
            return
        conn = _Conn(self.cfg, tls, addr, listener.getsockname())
        self._start_reading(conn, time.monotonic())
        self.poller.register(tls, selectors.EVENT_READ, partial(self._on_event, conn))
        if self.n_reading > self.max_pending:
            self._evict("evicted")

    def on_client_socket_readable(self, conn: _Conn, client: Any) -> None:
        """A kept-alive connection has bytes again: read the next request in the loop (usually
        all of it at once, and then it goes straight to a thread)."""
        self.keepalived_conns.remove(conn)
        self._start_reading(conn, time.monotonic())
        conn.events = 0  # still registered for on_client_socket_readable: _want re-registers
        self._step(conn)

    def _start_reading(self, conn: _Conn, now: float) -> None:
        conn.stage, conn.events = "reading", selectors.EVENT_READ
        conn.epoch += 1
        self.reading.append((now + REQUEST_TIMEOUT_SECONDS, conn.epoch, conn))
        self.n_reading += 1

    # ------------------------------------------------------------------ the pre-request stage
    def _on_event(self, conn: _Conn, _fileobj: Any) -> None:
        if conn.stage == "closing":
            self._linger(conn)
        elif conn.stage == "reading":
            self._step(conn)

    def _step(self, conn: _Conn) -> None:
        """Advance the handshake, then read what is there; hand off once the request is whole."""
        sock = conn.sock
        # Bytes already held (pipelined behind the last request) may be a whole request.
        done = request_complete(conn.buf, self.max_body) if conn.buf else False
        try:
            if not conn.handshaken:
                sock.do_handshake()
                conn.handshaken = True
            limit = self.max_body + MAX_HEADER_BYTES
            while done is False and len(conn.buf) <= limit:  # a fast sender cannot keep the loop here
                data = sock.recv(65536)
                if not data:
                    self._drop(conn, None)
                    return
                conn.buf += data
                self.buffered += len(data)
                done = request_complete(conn.buf, self.max_body)
                if done is not False:  # whole (or refused): no need to ask for more
                    break
        except ssl.SSLWantReadError:
            self._want(conn, selectors.EVENT_READ)
        except ssl.SSLWantWriteError:
            self._want(conn, selectors.EVENT_WRITE)
        except (ssl.SSLError, OSError) as e:
            log.debug("connection from %s dropped before its request: %s", conn.client, e)
            self._drop(conn, "tls" if not conn.handshaken else None)
            return
        if done is None:
            self._refuse(conn, HEADERS_TOO_LARGE, "too-large")
        elif done:
            self._hand_off(conn)
        elif self.buffered > BUFFER_BUDGET_BYTES:
            self._evict("evicted")

    def _want(self, conn: _Conn, events: int) -> None:
        if conn.events != events:
            conn.events = events
            self.poller.modify(conn.sock, events, partial(self._on_event, conn))

    def _hand_off(self, conn: _Conn) -> None:
        """The whole request is in memory: give it to a pool thread (gthread's ``handle``)."""
        self.poller.unregister(conn.sock)
        self._leave_reading(conn, "handed")
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(bytes(conn.buf))
        conn.buf = bytearray()
        conn.initialized = conn.data_ready = True
        self.enqueue_req(conn)

    def _leave_reading(self, conn: _Conn, stage: str) -> None:
        if conn.stage == "reading":
            self.n_reading -= 1
            self.buffered -= len(conn.buf)
        conn.stage = stage

    # ------------------------------------------------------------------ after the answer
    def finish_request(self, conn: _Conn, fs: Future[Any]) -> None:
        """Back on the loop after a pool thread answered: keep alive, read on, or close."""
        try:
            keep = fs.result() if not fs.cancelled() else False
        except Exception:  # noqa: BLE001 - gthread's handle() catches its own errors
            keep = False
        if keep is True and conn.parser is not None:
            conn.sock.setblocking(False)
            ahead = conn.parser.unreader.take_buffered()  # a pipelined next request
            if ahead or conn.sock.pending():  # (pending: decrypted, so epoll would not say)
                self._start_reading(conn, time.monotonic())
                conn.buf += ahead
                self.buffered += len(ahead)
                self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_event, conn))
                self._step(conn)
                return
            conn.set_timeout()
            if not self.alive:
                conn.timeout = min(conn.timeout, time.monotonic() + DRAIN_LINGER_SECONDS)
            self.keepalived_conns.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self.on_client_socket_readable, conn))
            return
        self._close_politely(conn, registered=False)

    def _close_politely(self, conn: _Conn, *, registered: bool) -> None:
        """Half-close, then wait in the loop (not in a thread) for the client's FIN."""
        try:
            conn.sock.setblocking(False)
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            if registered:
                self.poller.unregister(conn.sock)
            self._forget(conn)
            return
        self._leave_reading(conn, "closing")
        conn.epoch += 1
        self.closing.append((time.monotonic() + CLOSE_LINGER_SECONDS, conn.epoch, conn))
        if registered:
            self.poller.modify(conn.sock, selectors.EVENT_READ, partial(self._on_event, conn))
        else:
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_event, conn))

    def _linger(self, conn: _Conn) -> None:
        try:
            if conn.sock.recv(65536):
                return
        except (BlockingIOError, ssl.SSLWantReadError):
            return
        except OSError:
            pass
        self._drop(conn, None)

    def _refuse(self, conn: _Conn, answer: bytes, reason: str) -> None:
        """Send a short error answer (best effort, never blocking) and close."""
        try:
            conn.sock.send(answer)
        except (OSError, ssl.SSLError):
            self._drop(conn, reason)
            return
        self.on_drop(reason)
        self._close_politely(conn, registered=True)

    # ------------------------------------------------------------------ dropping
    def _drop(self, conn: _Conn, reason: str | None) -> None:
        """Close a connection that is registered with the poller."""
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if reason:
            self.on_drop(reason)
        self._forget(conn)

    def _forget(self, conn: _Conn) -> None:
        self._leave_reading(conn, "gone")
        self.nr_conns -= 1
        try:
            conn.sock.close()
        except OSError:
            pass

    def _evict(self, reason: str) -> None:
        """Drop the oldest connection still in the pre-request stage."""
        while self.reading:
            _, epoch, conn = self.reading.popleft()
            if conn.stage == "reading" and conn.epoch == epoch:
                self._drop(conn, reason)
                return

    def murder_pending(self) -> None:
        """Runs every loop turn: cut requests past their deadline, end finished lingers."""
        now = time.monotonic()
        for queue, stage in ((self.reading, "reading"), (self.closing, "closing")):
            while queue:
                deadline, epoch, conn = queue[0]
                live = conn.stage == stage and conn.epoch == epoch
                if live and deadline > now:
                    break
                queue.popleft()
                if not live:
                    continue
                if stage == "reading" and conn.handshaken and conn.buf:
                    self._refuse(conn, REQUEST_TIMEOUT, "timeout")
                else:
                    self._drop(conn, "timeout" if stage == "reading" else None)
        super().murder_pending()

    # ------------------------------------------------------------------ draining
    def handle_request(self, req: Any, conn: Any) -> Any:
        """gthread's request handling; once draining, the answer closes the connection."""
        if self.draining:
            req.must_close = True  # gunicorn then answers with "Connection: close"
        return super().handle_request(req, conn)

    def _cap_keepalive(self, deadline: float) -> None:
        """When stopping, kept-alive connections get ``DRAIN_LINGER_SECONDS`` for one more request."""
        super()._cap_keepalive(max(deadline, time.monotonic() + DRAIN_LINGER_SECONDS))


def _raise_fd_limit() -> int:
    """Lift this process's soft limit on open files to the hard limit; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return int(soft)
