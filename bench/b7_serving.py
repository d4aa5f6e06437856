"""B7: what the event-loop worker costs, against stock gunicorn ``gthread``, in the same run.

Both servers are ``dra-webhook serve`` with the same app, TLS context, 2 workers x 4 threads
and state; only the worker class differs (``bench.stock_server`` is the "before"). For each
traffic shape (keep-alive; a new TLS connection per request) both are driven to saturation by
the same closed-loop clients, alternately, several rounds; the medians of throughput and of
server CPU per request (master and workers, from /proc) are compared. Target: the event-loop
worker loses at most 10 % on either.

Balance: the same event-loop server with 2 workers against itself with 1 worker, 4 keep-alive
clients at saturation, alternating rounds; target >= 1.7x (the connections must spread over
the workers). The spread is sampled in the middle of each run: established connections on the
server port held by each worker (``/proc/<pid>/fd`` against ``/proc/net/tcp``).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
from pathlib import Path

from bench import gen, servers
from bench.b2_http import _write_state
from bench.common import Row
from bench.loadgen import run_load
from bench.servers import cpu_seconds

NAME = "B7"
STOCK = [sys.executable, "-m", "bench.stock_server"]


def run(quick: bool, workers: int = 2, threads: int = 4) -> list[Row]:
    rounds, duration, clients = (1, 1.5, 2) if quick else (3, 5.0, 4)
    body = gen.body(gen.claim())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dra-bench-b6-") as tmp_s:
        tmp = Path(tmp_s)
        certs = servers.make_certs(tmp / "certs")
        _write_state(tmp / "state", 2)
        extra = ["--shutdown-delay", "0", "--cluster-state", str(tmp / "state"), "--feature-gates", gen.GATES]
        try:
            new = servers.start("event-loop", [*servers.WEBHOOK, "serve"], certs, tmp, workers=workers,
                                threads=threads, extra=extra)
        except RuntimeError as e:
            return [Row.na(NAME, "serving", str(e).splitlines()[0][:150])]
        try:
            old = servers.start("gthread", STOCK, certs, tmp, workers=workers, threads=threads, extra=extra)
        except RuntimeError as e:
            new.stop()
            return [Row.na(NAME, "serving", str(e).splitlines()[0][:150])]
        try:
            for srv in (new, old):
                servers.post(srv, "/validate", body, n=20)  # warm: CEL, allocator model
            for mode in ("keepalive", "new"):
                rows += _compare(mode, new, old, str(certs / "ca.crt"), body, rounds, duration, clients)
        finally:
            new.stop()
            old.stop()
        rows.append(_balance(certs, tmp, extra, body, rounds, duration, threads))
    return rows


BALANCE_CLIENTS = 4
BALANCE_TARGET = 1.7


def _balance(certs: Path, tmp: Path, extra: list[str], body: bytes, rounds: int, duration: float,
             threads: int) -> Row:
    """2 workers against 1 worker with 4 keep-alive clients: throughput ratio and connection spread."""
    case = f"claim-cel keepalive {BALANCE_CLIENTS} clients: 2 workers vs 1 worker throughput"
    try:
        one = servers.start("one-worker", [*servers.WEBHOOK, "serve"], certs, tmp, workers=1, threads=threads,
                            extra=extra)
    except RuntimeError as e:
        return Row.na(NAME, case, str(e).splitlines()[0][:150])
    try:
        two = servers.start("two-workers", [*servers.WEBHOOK, "serve"], certs, tmp, workers=2, threads=threads,
                            extra=extra)
    except RuntimeError as e:
        one.stop()
        return Row.na(NAME, case, str(e).splitlines()[0][:150])
    cafile = str(certs / "ca.crt")
    tput: dict[str, list[float]] = {"one": [], "two": []}
    spreads: list[list[int]] = []
    try:
        for srv in (one, two):
            servers.post(srv, "/validate", body, n=20)
        for _ in range(rounds):
            for key, srv in (("one", one), ("two", two)):
                sampled: list[list[int]] = []
                timer = threading.Timer(0.3 + duration / 2, lambda s=srv, out=sampled: out.append(
                    servers.connection_spread(s.port, s.worker_pids())))
                timer.start()
                res = run_load(srv.port, cafile, "/validate", body, mode="keepalive", clients=BALANCE_CLIENTS,
                               duration=duration, max_requests=1_000_000)
                timer.join()
                tput[key].append(res.throughput)
                if key == "two" and sampled:
                    spreads.append(sampled[0])
    finally:
        one.stop()
        two.stop()
    t_two, t_one = statistics.median(tput["two"]), statistics.median(tput["one"])
    ratio = t_two / t_one if t_one else None
    runs = {k: ", ".join(f"{x:.0f}" for x in v) for k, v in tput.items()}
    shown = "; ".join("+".join(str(n) for n in s) for s in spreads)
    return Row(NAME, case, f"{t_two:.0f} req/s", f"{t_one:.0f} req/s", ratio, f"≥ {BALANCE_TARGET:g}×",
               None if ratio is None else ratio >= BALANCE_TARGET,
               f"{rounds} alternating rounds of {duration:g} s; runs 2 workers {runs['two']} / 1 worker "
               f"{runs['one']} req/s; connections per worker mid-run: {shown or '?'}")


def _saturate(srv: servers.Server, cafile: str, body: bytes, mode: str, duration: float,
              clients: int) -> tuple[float, float]:
    """(requests/s, server CPU seconds per request) of one closed-loop run."""
    pids = [srv.proc.pid, *srv.worker_pids()]
    before = cpu_seconds(pids)
    res = run_load(srv.port, cafile, "/validate", body, mode=mode, clients=clients, duration=duration,
                   max_requests=1_000_000)
    used = cpu_seconds(pids) - before
    n = len(res.latencies)
    return res.throughput, (used / n if n else float("inf"))


def _compare(mode: str, new: servers.Server, old: servers.Server, cafile: str, body: bytes,
             rounds: int, duration: float, clients: int) -> list[Row]:
    tput: dict[str, list[float]] = {"new": [], "old": []}
    cpu: dict[str, list[float]] = {"new": [], "old": []}
    for _ in range(rounds):  # alternate, so drift in the machine's load hits both alike
        for key, srv in (("old", old), ("new", new)):
            t, c = _saturate(srv, cafile, body, mode, duration, clients)
            tput[key].append(t)
            cpu[key].append(c)
    t_new, t_old = statistics.median(tput["new"]), statistics.median(tput["old"])
    c_new, c_old = statistics.median(cpu["new"]), statistics.median(cpu["old"])
    t_ratio = t_new / t_old if t_old else None
    c_ratio = c_new / c_old if c_old else None
    runs = {k: ", ".join(f"{x:.0f}" for x in v) for k, v in tput.items()}
    ctx = (f"{rounds} alternating rounds of {duration:g} s, {clients} clients; "
           f"runs new {runs['new']} / old {runs['old']} req/s")
    return [
        Row(NAME, f"claim-cel {mode} throughput: event loop vs gthread", f"{t_new:.0f} req/s", f"{t_old:.0f} req/s",
            t_ratio, "≥ 0.9× gthread", None if t_ratio is None else t_ratio >= 0.9, ctx),
        Row(NAME, f"claim-cel {mode} CPU per request: event loop vs gthread", f"{c_new * 1e3:.2f} ms",
            f"{c_old * 1e3:.2f} ms", c_ratio, "≤ 1.1× gthread", None if c_ratio is None else c_ratio <= 1.1,
            "server CPU (master + workers, /proc utime+stime) / answered requests"),
    ]
