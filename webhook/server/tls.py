"""TLS for gunicorn: TLS 1.2+, modern ciphers, and certificate files re-read when they change.

gunicorn asks its ``ssl_context`` hook for a context on every accepted connection. We cache one
context and rebuild it only when the cert or key file changes (size, mtime or inode), so a
rotated certificate (e.g. a Secret volume update) is served to new connections within a second,
without a restart, while a half-written pair keeps the old context in force.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# ECDHE with AEAD only for TLS 1.2; TLS 1.3 suites are fixed by OpenSSL and all modern.
MODERN_CIPHERS = ("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                  "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                  "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305")


def _stamp(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# gthread worker threads put each connection in blocking mode to read a request; with no timeout
# a client that stops halfway through its handshake or request holds that thread for good, and
# workers x threads such clients stall the server. Every blocking socket operation gives up after
# this long instead (the apiserver sends a whole request at once, and idle keep-alive connections
# wait in the worker's poller, not in a thread).
IO_TIMEOUT_SECONDS = 5.0


class _TimedSSLSocket(ssl.SSLSocket):
    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(IO_TIMEOUT_SECONDS)
        else:
            super().setblocking(False)


class _ServerContext(ssl.SSLContext):
    sslsocket_class = _TimedSSLSocket

    def wrap_socket(self, sock: Any, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        sock.settimeout(IO_TIMEOUT_SECONDS)  # the handshake runs on the wrapped socket's timeout
        return super().wrap_socket(sock, *args, **kwargs)


def build_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    ctx = _ServerContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(MODERN_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    ctx.load_cert_chain(certfile=cert, keyfile=key)
    if client_ca:
        ctx.load_verify_locations(cafile=client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class ReloadingContext:
    """Hands out an SSLContext, rebuilt when the files on disk change (checked at most every
    ``interval`` seconds)."""

    def __init__(self, cert: str, key: str, client_ca: str | None = None, interval: float = 1.0,
                 on_load: Callable[[str], None] | None = None) -> None:
        self.cert, self.key, self.client_ca, self.interval = cert, key, client_ca, interval
        self._lock = threading.Lock()
        self._on_load = on_load
        self._stamps = self._read_stamps()
        self._ctx = build_context(cert, key, client_ca)
        self._checked = time.monotonic()
        if on_load:
            on_load(cert)

    def _read_stamps(self) -> tuple[Any, ...]:
        paths = [self.cert, self.key] + ([self.client_ca] if self.client_ca else [])
        return tuple(_stamp(p) for p in paths)

    def get(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self._ctx
        with self._lock:
            if now - self._checked < self.interval:
                return self._ctx
            self._checked = now
            try:
                stamps = self._read_stamps()
                if stamps != self._stamps:
                    ctx = build_context(self.cert, self.key, self.client_ca)
                    self._ctx, self._stamps = ctx, stamps
                    log.info("tls: certificate reloaded", extra={"cert": self.cert})
                    if self._on_load:
                        self._on_load(self.cert)
            except (OSError, ssl.SSLError, ValueError) as e:
                # Mid-rotation (cert and key not matching yet) or a missing file: keep serving.
                log.warning("tls: keeping the previous certificate: %s", e)
        return self._ctx
