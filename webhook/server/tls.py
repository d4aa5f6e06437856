"""TLS for gunicorn: TLS 1.2+, modern ciphers, and certificate files re-read when they change.

gunicorn asks its ``ssl_context`` hook for a context on every accepted connection. Each worker
builds one context when it starts (and exits if it cannot: see ``runner``) and rebuilds it only
when the cert or key file changes (size, mtime or inode), so a rotated certificate (e.g. a
Secret volume update) is served to new connections within a second, without a restart, while a
half-written or broken pair keeps the last good context in force. ``problem()`` says why the
files on disk do not load, for ``/readyz``.
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


# Pool threads put a connection in blocking mode to parse its request and write the answer. The
# request is already in memory (the worker's event loop read it, see worker.py), so what can
# still block is writing the answer to a client that does not read it, and reading a body the
# loop did not buffer (far over the size limit). Every blocking socket operation gives up after
# this long, so such a client holds a thread for that long at most.
IO_TIMEOUT_SECONDS = 5.0


class _TimedSSLSocket(ssl.SSLSocket):
    def setblocking(self, flag: bool) -> None:
        """Blocking mode means ``IO_TIMEOUT_SECONDS`` per operation, never forever."""
        if flag:
            self.settimeout(IO_TIMEOUT_SECONDS)
        else:
            super().setblocking(False)


class _ServerContext(ssl.SSLContext):
    sslsocket_class = _TimedSSLSocket

    def wrap_socket(self, sock: Any, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        """Wrap with the IO timeout already set (the handshake runs under it)."""
        sock.settimeout(IO_TIMEOUT_SECONDS)  # the handshake runs on the wrapped socket's timeout
        return super().wrap_socket(sock, *args, **kwargs)


def build_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    """A server context: TLS 1.2+, ECDHE/AEAD ciphers, no compression, optional client certificates."""
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
        """Build the first context; raises (OSError, ssl.SSLError) when the files do not load."""
        self.cert, self.key, self.client_ca, self.interval = cert, key, client_ca, interval
        self._lock = threading.Lock()
        self._on_load = on_load
        self._stamps = self._read_stamps()
        self._ctx = build_context(cert, key, client_ca)
        self._checked = time.monotonic()
        self._problem: str | None = None
        if on_load:
            on_load(cert)

    def _read_stamps(self) -> tuple[Any, ...]:
        paths = [self.cert, self.key] + ([self.client_ca] if self.client_ca else [])
        return tuple(_stamp(p) for p in paths)

    def get(self) -> ssl.SSLContext:
        """The context for a new connection (the files are checked at most every ``interval``)."""
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self._ctx
        with self._lock:
            if now - self._checked < self.interval:
                return self._ctx
            self._checked = now
            try:
                stamps = self._read_stamps()
            except OSError:
                self._failed(diagnose(self.cert, self.key, self.client_ca))
                return self._ctx
            # While the files do not load, try again every interval: a rotation writes them
            # one by one, and a stamp taken mid-write may equal the final one.
            if stamps != self._stamps or self._problem is not None:
                try:
                    ctx = build_context(self.cert, self.key, self.client_ca)
                except (OSError, ssl.SSLError, ValueError):
                    self._failed(diagnose(self.cert, self.key, self.client_ca))
                    return self._ctx
                self._ctx, self._stamps, self._problem = ctx, stamps, None
                log.info("tls: certificate reloaded", extra={"cert": self.cert})
                if self._on_load:
                    self._on_load(self.cert)
        return self._ctx

    def _failed(self, why: str) -> None:
        """Mid-rotation (cert and key not matching yet) or a broken file: keep serving the last
        good context; log once per new reason."""
        if why != self._problem:
            log.warning("tls: keeping the previous certificate: %s", why)
        self._problem = why

    def problem(self) -> str | None:
        """Why the files on disk are not a loadable, matching pair (None when they are)."""
        self.get()
        return self._problem


def diagnose(cert: str, key: str, client_ca: str | None = None) -> str:
    """A readable reason why ``build_context`` fails for these files (OpenSSL's is not)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    def read(path: str) -> bytes | str:
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            return f"{path}: cannot read: {e.strerror or e}"

    cert_pem, key_pem = read(cert), read(key)
    if isinstance(cert_pem, str):
        return cert_pem
    if isinstance(key_pem, str):
        return key_pem
    try:
        certificate = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return f"{cert}: not a PEM certificate"
    try:
        private = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return f"{key}: not an unencrypted PEM private key"
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    enc = serialization.Encoding.DER
    if private.public_key().public_bytes(enc, pub) != certificate.public_key().public_bytes(enc, pub):
        return f"{key} does not match the certificate in {cert}"
    if client_ca:
        ca = read(client_ca)
        return ca if isinstance(ca, str) else f"{client_ca}: not a usable CA bundle"
    return "the certificate and key do not load (OpenSSL refused them)"
