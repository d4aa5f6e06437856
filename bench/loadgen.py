"""A small HTTPS load generator: client *processes* (not threads: the GIL would make the client
the bottleneck), each with one connection at a time.

Modes: ``keepalive`` reuses one connection per client; ``new`` opens a fresh TLS connection per
request (``Connection: close``). Loads: closed loop (saturation: each client sends the next
request as soon as the answer arrives) or a fixed offered rate (open loop: requests are scheduled
at fixed times and latency counts from the scheduled time, so a slow server is not hidden by
the client waiting for it). Every run is bounded by a request count and a duration.
"""

from __future__ import annotations

import http.client
import multiprocessing as mp
import ssl
import time
from dataclasses import dataclass

from bench.common import percentile


@dataclass
class LoadResult:
    latencies: list[float]
    errors: int
    seconds: float

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds > 0 else 0.0

    @property
    def p50(self) -> float:
        return percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 99)


def _client(args: tuple[int, str, str, bytes, str, float, int, float, float]) -> tuple[list[float], int, float]:
    port, cafile, path, body, mode, duration, max_requests, rate, start_at = args
    ctx = ssl.create_default_context(cafile=cafile)
    headers = {"Content-Type": "application/json"}
    if mode == "new":
        headers["Connection"] = "close"
    lat: list[float] = []
    errors = 0
    conn: http.client.HTTPSConnection | None = None
    while time.time() < start_at:  # all clients start together
        time.sleep(0.001)
    t0 = time.perf_counter()
    end = t0 + duration
    i = 0
    while i < max_requests:
        scheduled = t0 + i / rate if rate > 0 else time.perf_counter()
        if scheduled >= end:
            break
        now = time.perf_counter()
        if now >= end:
            break
        if scheduled > now:
            time.sleep(scheduled - now)
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
            conn.request("POST", path, body, headers)
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
            if mode == "new" or r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            ok = False
            if conn is not None:
                conn.close()
            conn = None
        done = time.perf_counter()
        if ok:
            lat.append(done - scheduled)
        else:
            errors += 1
    elapsed = time.perf_counter() - t0
    if conn is not None:
        conn.close()
    return lat, errors, elapsed


def run_load(port: int, cafile: str, path: str, body: bytes, *, mode: str, clients: int,
             duration: float, max_requests: int, rate: float = 0.0) -> LoadResult:
    """``rate`` > 0: a fixed offered load in requests/s (split over the clients); 0: saturation."""
    per_rate = rate / clients if rate > 0 else 0.0
    per_max = max(1, max_requests // clients)
    start_at = time.time() + 0.3
    ctx = mp.get_context("fork")
    with ctx.Pool(clients) as pool:
        parts = pool.map(_client, [(port, cafile, path, body, mode, duration, per_max, per_rate, start_at)
                                   for _ in range(clients)])
    lat = [x for p in parts for x in p[0]]
    return LoadResult(lat, sum(p[1] for p in parts), max(p[2] for p in parts))
