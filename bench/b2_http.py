"""B2: ``dra-webhook serve`` against an echo app under the same gunicorn/TLS settings.

For each traffic shape (keep-alive, a new TLS connection per request) the suite measures the
saturation throughput of both servers (closed loop, ``clients`` processes), then offers both the
same fixed load (half of the slower server's saturation throughput) and compares p50/p99.
The webhook gets a small generated cluster state, so a ResourceClaim review includes the
feasibility check, as in production.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from bench import gen, servers
from bench.common import Row, fmt_time
from bench.loadgen import LoadResult, run_load
from bench.servers import cpu_seconds

NAME = "B2"


def _write_state(d: Path, nodes: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                "items": gen.cluster(nodes)}))


def run(quick: bool, workers: int = 2, threads: int = 4) -> list[Row]:
    try:
        import webhook.server.runner  # noqa: F401
    except ImportError as e:
        return [Row.na(NAME, "http", f"{e.name} missing")]
    duration, max_req, clients = (1.5, 300, 2) if quick else (6.0, 6000, 4)
    bodies = {"claim-cel": gen.body(gen.claim())}
    if not quick:
        bodies["slice-partitionable-64"] = gen.body(gen.b1_objects()["slice-partitionable-64"])
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dra-bench-") as tmp_s:
        tmp = Path(tmp_s)
        certs = servers.make_certs(tmp / "certs")
        _write_state(tmp / "state", 2)
        try:
            hook = servers.start("webhook", [*servers.WEBHOOK, "serve"], certs, tmp, workers=workers,
                                 threads=threads, extra=["--shutdown-delay", "0", "--cluster-state",
                                                         str(tmp / "state"), "--feature-gates", gen.GATES])
        except RuntimeError as e:
            return [Row.na(NAME, "http", str(e).splitlines()[0][:150])]
        try:
            echo = servers.start("echo", servers.ECHO, certs, tmp, workers=workers, threads=threads)
        except RuntimeError as e:
            hook.stop()
            return [Row.na(NAME, "http", str(e).splitlines()[0][:150])]
        try:
            cafile = str(certs / "ca.crt")
            for body_name, body in bodies.items():
                for srv in (hook, echo):  # warm up: CEL caches, allocator model, TLS session setup
                    servers.post(srv, "/validate", body, n=10)
                for mode in ("keepalive", "new"):
                    if quick and mode == "new" and body_name != "claim-cel":
                        continue
                    rows += _compare(body_name, mode, hook, echo, cafile, body, clients, duration, max_req)
        finally:
            hook.stop()
            echo.stop()
    return rows


def _compare(body_name: str, mode: str, hook: servers.Server, echo: servers.Server, cafile: str,
             body: bytes, clients: int, duration: float, max_req: int) -> list[Row]:
    case = f"{body_name} {mode}"

    def load(srv: servers.Server, rate: float) -> LoadResult:
        return run_load(srv.port, cafile, "/validate", body, mode=mode, clients=clients,
                        duration=duration, max_requests=max_req, rate=rate)

    cpu: dict[str, float] = {}

    def saturate(key: str, srv: servers.Server) -> LoadResult:
        pids = srv.worker_pids()
        before = cpu_seconds(pids)
        res = load(srv, 0.0)
        cpu[key] = (cpu_seconds(pids) - before) / len(res.latencies) if res.latencies else float("nan")
        return res

    sat_h, sat_e = saturate("hook", hook), saturate("echo", echo)
    ratio = sat_h.throughput / sat_e.throughput if sat_e.throughput else None
    rows = [Row(NAME, f"{case} saturation ({clients} clients)", f"{sat_h.throughput:.0f} req/s",
                f"{sat_e.throughput:.0f} req/s", ratio, "≥ 50% of echo",
                None if ratio is None else ratio >= 0.5,
                f"webhook p50 {fmt_time(sat_h.p50)} p99 {fmt_time(sat_h.p99)} (n={len(sat_h.latencies)}, "
                f"errors {sat_h.errors}); echo p50 {fmt_time(sat_e.p50)} p99 {fmt_time(sat_e.p99)} "
                f"(n={len(sat_e.latencies)}, errors {sat_e.errors})")]
    c_ratio = cpu["hook"] / cpu["echo"] if cpu["echo"] > 0 else None
    rows.append(Row(NAME, f"{case} CPU per request (workers, /proc)", f"{cpu['hook'] * 1e3:.2f} ms",
                    f"{cpu['echo'] * 1e3:.2f} ms", c_ratio, "≤ 2.5× echo", None if c_ratio is None else c_ratio <= 2.5,
                    f"worker utime+stime over the saturation run / answered requests "
                    f"({len(sat_h.latencies)} webhook, {len(sat_e.latencies)} echo); clock tick "
                    f"{1e3 / os.sysconf('SC_CLK_TCK'):.0f} ms"))
    rate = max(1.0, round(0.5 * min(sat_h.throughput, sat_e.throughput)))
    fix_h, fix_e = load(hook, rate), load(echo, rate)
    ratio = fix_h.p99 / fix_e.p99 if fix_e.p99 > 0 else None
    rows.append(Row(NAME, f"{case} fixed {rate:.0f} req/s p99", fmt_time(fix_h.p99), fmt_time(fix_e.p99),
                    ratio, "p99 ≤ 2× echo", None if ratio is None else ratio <= 2.0,
                    f"webhook p50 {fmt_time(fix_h.p50)} (n={len(fix_h.latencies)}, errors {fix_h.errors}, "
                    f"{fix_h.throughput:.0f} req/s); echo p50 {fmt_time(fix_e.p50)} "
                    f"(n={len(fix_e.latencies)}, errors {fix_e.errors})"))
    return rows
