"""B5: memory. (1) Resident memory a serving worker spends on the 500-node state (after the
first feasibility check built the allocator model) against that state's JSON size on disk;
(2) growth across 10,000 requests (must be flat); (3) tracemalloc peak of one in-process review
of the 128-device slice against its body size.

(1) is measured on real ``dra-webhook serve`` workers (1 worker each): RSS with the big state
minus RSS with a 1-node state, so the interpreter, Flask and the libraries cancel out. The same
for states a worker LISTs from a real kube-apiserver (``b5_live.py``): the rich shape and issue
30's lean one at 500 nodes, and 5,000 nodes of the rich shape with one GPU a node.
"""

from __future__ import annotations

import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench import gen, servers
from bench.common import Row, fmt_bytes, rss_bytes

NAME = "B5"
TARGET = 3.0
NODES_PER_FILE = 50


def write_state(d: Path, nodes: int) -> int:
    """The generated cluster as JSON files (split: the loader caps one file at 32 MiB); returns bytes."""
    d.mkdir(parents=True, exist_ok=True)
    objs = gen.cluster(nodes)
    shared = [o for o in objs if o["kind"] in ("DeviceClass", "ResourceClaimTemplate")]
    per_node = [o for o in objs if o not in shared]
    chunks = [shared] + [per_node[i:i + 4 * NODES_PER_FILE] for i in range(0, len(per_node), 4 * NODES_PER_FILE)]
    total = 0
    for i, chunk in enumerate(chunks):
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": chunk}, separators=(",", ":"))
        (d / f"state-{i:03d}.json").write_text(text)
        total += len(text.encode())
    return total


def _wait_warmed(srv: servers.Server, timeout: float = 300.0) -> None:
    import json
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"https://127.0.0.1:{srv.port}/configz", context=srv.ssl_context(),
                                    timeout=10) as r:
            if json.loads(r.read()).get("allocatorWarmed"):
                return
        time.sleep(0.2)
    raise RuntimeError("allocator warm-up did not finish")


def _worker_rss(srv: servers.Server) -> int:
    pids = srv.worker_pids()
    return rss_bytes(pids[0]) if pids else 0


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    nodes = 20 if quick else 500
    requests = 50 if quick else 10_000
    claim_body = gen.body(gen.grouped_claim())
    with tempfile.TemporaryDirectory(prefix="dra-bench-mem-") as tmp_s:
        tmp = Path(tmp_s)
        certs = servers.make_certs(tmp / "certs")
        size = write_state(tmp / "big", nodes)
        write_state(tmp / "small", 1)
        started: list[servers.Server] = []
        try:
            def serve(name: str, state: Path) -> servers.Server:
                s = servers.start(name, [*servers.WEBHOOK, "serve"], certs, tmp, workers=1, threads=4,
                                  timeout=300, extra=["--shutdown-delay", "0", "--cluster-state", str(state),
                                                      "--feature-gates", gen.GATES, "--log-level", "warning"])
                started.append(s)
                _wait_warmed(s)  # the background warm-up builds the model and device views
                servers.post(s, "/validate", claim_body, n=3)
                time.sleep(0.2)
                return s
            small = serve("small", tmp / "small")
            big = serve("big", tmp / "big")
            base, full = _worker_rss(small), _worker_rss(big)
            held = full - base
            ratio = held / size if size else None
            rows.append(Row(NAME, f"{nodes}-node state held by one worker", fmt_bytes(held), fmt_bytes(size),
                            ratio, f"≤ {TARGET:g}× its JSON", None if ratio is None else ratio <= TARGET,
                            f"worker RSS {fmt_bytes(full)} vs {fmt_bytes(base)} with a 1-node state; "
                            f"floor = JSON size on disk; includes the allocator model"))
            # Caches fill during the first reviews (compiled CEL, selector results, metrics
            # series): growth is measured after a warm-up, and the warm-up's own shown beside it.
            start = _worker_rss(big)
            servers.post(big, "/validate", claim_body, n=requests // 10)
            before = _worker_rss(big)
            servers.post(big, "/validate", claim_body, n=requests)
            after = _worker_rss(big)
            rows.append(Row(NAME, f"RSS growth over {requests} claim reviews", fmt_bytes(after - before),
                            fmt_bytes(before), (after - before) / before if before else None,
                            "flat (< 2%)", None if not before else (after - before) / before < 0.02,
                            f"worker RSS before {fmt_bytes(before)}, after {fmt_bytes(after)}; the "
                            f"{requests // 10} reviews of warm-up before took it from {fmt_bytes(start)}"))
        except RuntimeError as e:
            rows.append(Row.na(NAME, f"{nodes}-node state held by one worker", str(e).splitlines()[0][:150]))
        finally:
            for s in started:
                s.stop()
        from bench.b5_live import live_rows
        rows += live_rows(quick, certs, tmp)
    rows.append(_per_request_peak())
    return rows


def _per_request_peak() -> Row:
    case = "per-request peak, slice-plain-128 /validate"
    try:
        from bench.b1_admission import pipeline_call
    except ImportError as e:
        return Row.na(NAME, case, f"{e.name} missing")
    body = gen.body(gen.b1_objects()["slice-plain-128"])
    call = pipeline_call(body, "validate")
    if isinstance(call, str):
        return Row.na(NAME, case, call)
    call()
    peaks = []
    tracemalloc.start()
    try:
        for _ in range(5):
            tracemalloc.reset_peak()
            start, _ = tracemalloc.get_traced_memory()
            call()
            _, peak = tracemalloc.get_traced_memory()
            peaks.append(peak - start)
        end_current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    peak = sorted(peaks)[len(peaks) // 2]
    # The decoded body is the unavoidable part: json.loads of it, measured the same way.
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        s0, _ = tracemalloc.get_traced_memory()
        doc = json.loads(body)
        _, floor = tracemalloc.get_traced_memory()
        del doc
    finally:
        tracemalloc.stop()
    floor -= s0
    return Row(NAME, case, fmt_bytes(peak), fmt_bytes(floor), peak / floor if floor else None,
               "(context)", None, f"floor = peak of json.loads of the body ({fmt_bytes(len(body))} on the wire)")
