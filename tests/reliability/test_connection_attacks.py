"""Connection attacks on the real server (2 workers x 4 threads, TLS, loopback).

Before the event-loop worker, 8 slow-header connections held every worker thread (no answer
for 30 s), 16 idle TCP sockets delayed the next request by ~10 s and 2 new idle sockets per
second ended in timeouts within a minute. Now connections wait in the workers' event loops
until a whole request has arrived, under one deadline (``REQUEST_TIMEOUT_SECONDS``).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from typing import Any

import pytest

from bench.attacks import ConnectionAttack
from tests.builders import SLICE, review
from tests.reliability.conftest import server_fixture
from webhook.server.worker import REQUEST_TIMEOUT_SECONDS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROBE_SECONDS = 40.0
PROBE_INTERVAL = 0.2


attacked_server = server_fixture("attacked")


def _probe(srv: Any, ctx: ssl.SSLContext) -> tuple[float, str]:
    """One /validate on a fresh TLS connection: (seconds, "ok" or what went wrong)."""
    body = json.dumps(review(SLICE)).encode()
    started = time.monotonic()
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=10)
    try:
        conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        allowed = json.loads(resp.read())["response"]["allowed"]
        outcome = "ok" if resp.status == 200 and allowed is True else f"HTTP {resp.status}"
    except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
        outcome = repr(e)[:200]
    finally:
        conn.close()
    return time.monotonic() - started, outcome


def test_slow_and_idle_connections_do_not_starve_the_server(attacked_server):
    """500 slow-header TLS connections and 500 idle TCP connections held open (re-opened when
    the server closes them), plus 20 new idle connections per second: fresh-connection reviews
    still answer with p99 < 1 s and none fails."""
    srv = attacked_server
    ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
    attack = ConnectionAttack(srv.port, str(srv.certs / "ca.crt"), slow=500, idle=500,
                              new_idle_per_second=20).start()
    latencies: list[float] = []
    failures: list[str] = []
    try:
        end = time.monotonic() + PROBE_SECONDS
        while time.monotonic() < end:
            took, outcome = _probe(srv, ctx)
            (latencies if outcome == "ok" else failures).append(took if outcome == "ok" else outcome)
            time.sleep(max(0.0, PROBE_INTERVAL - took))
    finally:
        counts = attack.stop()
    # The attack really ran at the asked size (else this test would prove nothing).
    assert counts.max_open.get("slow", 0) >= 500 and counts.max_open.get("idle", 0) >= 500, counts
    assert counts.opened.get("new", 0) >= 20 * PROBE_SECONDS * 0.8, counts
    assert counts.closed_by_server.get("slow", 0) >= 500, counts  # cut at the request deadline
    assert failures == [], failures[:5]
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(f"\nprobes {len(latencies)}: p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; attacker {counts}")
    assert len(latencies) >= 150
    assert p99 < 1.0, f"p99 {p99:.3f}s"


def _tls(srv: Any) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=REQUEST_TIMEOUT_SECONDS + 10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def _read_all(s: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            data = s.recv(65536)
        except (ssl.SSLError, OSError):
            return out
        if not data:
            return out
        out += data


# (case, bytes sent after the TLS handshake (None: no handshake, a ClientHello cut short), what comes back)
DEADLINE_CASES = [
    ("idle-after-the-handshake-is-closed-silently", b"", b""),
    ("unfinished-headers-get-408", b"POST /validate HTTP/1.1\r\nHost: x\r\n", b"HTTP/1.1 408 "),
    ("unfinished-body-gets-408", b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 100\r\n\r\n{", b"HTTP/1.1 408 "),
    ("unfinished-tls-handshake-is-closed", None, b""),
]


def test_a_request_must_arrive_whole_within_the_deadline(attacked_server):
    """Each case on its own connection, all at once (they each take the deadline)."""
    results: dict[str, tuple[bytes, float]] = {}

    def run(case: str, sends: bytes | None) -> None:
        started = time.monotonic()
        if sends is None:
            with socket.create_connection(("127.0.0.1", attacked_server.port), timeout=30) as s:
                s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                got = _read_all(s)
        else:
            with _tls(attacked_server) as s:
                s.sendall(sends)
                got = _read_all(s)
        results[case] = (got, time.monotonic() - started)

    threads = [threading.Thread(target=run, args=(case, sends)) for case, sends, _ in DEADLINE_CASES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for case, _, answer in DEADLINE_CASES:
        got, took = results[case]
        assert got.startswith(answer) and (answer or got == b""), (case, got[:200])
        assert REQUEST_TIMEOUT_SECONDS - 0.5 <= took <= REQUEST_TIMEOUT_SECONDS + 2.5, (case, took)


def test_a_huge_request_head_gets_431_at_once(attacked_server):
    with _tls(attacked_server) as s:
        s.sendall(b"POST /validate HTTP/1.1\r\n" + b"X-Pad: " + b"a" * (80 * 1024))
        got = _read_all(s)
    assert got.startswith(b"HTTP/1.1 431 "), got[:200]


def test_pipelined_requests_on_one_connection_are_all_answered(attacked_server):
    """The loop keeps what follows a request (a pipelined next one) and serves it next."""
    body = json.dumps(review(SLICE)).encode()
    one = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with _tls(attacked_server) as s:
        s.sendall(one * 3 + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = _read_all(s)
    assert got.count(b"HTTP/1.1 200 ") == 4, got[:500]
    assert got.count(b'"allowed":true') == 3
