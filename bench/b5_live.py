"""B5, live: the memory a serving worker spends on a state it LISTed from a real kube-apiserver.

The objects are stored straight into etcd under a fresh apiserver's prefix (a bulk load; the
apiserver serves them as if created), then ``dra-webhook serve --kubeconfig`` with one worker
lists and watches them, warms up and answers 3 claim reviews. Held memory is the worker's
``Pss`` (``/proc/PID/smaps_rollup``) and ``VmRSS`` minus the same for a worker whose apiserver
holds one node of the same shape; the floor is the compact JSON of the listed objects (what the
apiserver returned for the kinds the state keeps of it). Needs the rig's binaries (``make
upstream``); n/a without them.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import gen, servers
from bench.common import Row, fmt_bytes

NAME = "B5"
TARGET = 3.0
_PLURALS = {"ResourceSlice": "resourceslices", "Node": "minions", "DeviceClass": "deviceclasses",
            "ResourceClaimTemplate": "resourceclaimtemplates"}
"""The apiserver's etcd key per kind (DRA and core kinds are stored without their group)."""


def shapes(quick: bool) -> list[tuple[str, int, Callable[[int], list[dict[str, Any]]]]]:
    """(label, nodes, generator) of the states measured: B5's rich shape and issue 30's lean one
    at 500 nodes, and the rich shape with one GPU (8 GPU devices and 2 NICs a node) at 500 and
    5,000 (how memory and the time to ready grow with nodes)."""
    if quick:
        return []  # an etcd and an apiserver per run: full mode only
    def one_gpu(n: int) -> list[dict[str, Any]]:
        return gen.cluster(n, gpus=1)
    return [("rich", 500, gen.cluster), ("lean", 500, gen.lean_cluster),
            ("rich 1-GPU", 500, one_gpu), ("rich 1-GPU", 5_000, one_gpu)]


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def _seed(etcd_url: str, prefix: str, objs: list[dict[str, Any]]) -> None:
    """Store ``objs`` under the apiserver's ``prefix`` in etcd, 100 puts per transaction."""
    import requests
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    puts = []
    with requests.Session() as s:
        for o in objs:
            meta = o["metadata"]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", stamp)
            ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
            key = f"{prefix}/{_PLURALS[o['kind']]}/{ns}{meta['name']}"
            puts.append({"requestPut": {"key": _b64(key), "value": _b64(json.dumps(o))}})
            if len(puts) == 100:
                s.post(etcd_url + "/v3/kv/txn", json={"success": puts}, timeout=60).raise_for_status()
                puts = []
        if puts:
            s.post(etcd_url + "/v3/kv/txn", json={"success": puts}, timeout=60).raise_for_status()


def _listed_bytes(api: Any, want: int) -> int:
    """Compact JSON bytes of what the apiserver LISTs of the kinds seeded (waits until it serves
    ``want`` objects: its watch cache fills from etcd)."""
    from tests.rig.rest import Rest
    rest = Rest(api)
    deadline = time.monotonic() + 120
    while True:
        items = [i for kind in _PLURALS for i in rest.list(kind)]
        if len(items) >= want or time.monotonic() > deadline:
            return sum(len(json.dumps(i, separators=(",", ":"))) for i in items)
        time.sleep(0.5)


def _memory(pid: int) -> tuple[int, int]:
    """(Pss, VmRSS) of one process, in bytes (0 when unreadable)."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            pss = next((int(x.split()[1]) * 1024 for x in f if x.startswith("Pss:")), 0)
        with open(f"/proc/{pid}/status") as f:
            rss = next((int(x.split()[1]) * 1024 for x in f if x.startswith("VmRSS:")), 0)
    except OSError:
        pass
    return pss, rss


def _wait_ready(srv: servers.Server, t0: float, timeout: float = 600.0) -> float:
    """Seconds from ``t0`` until ``/readyz`` answers 200 (every kind's first LIST done)."""
    import http.client
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=srv.ssl_context(), timeout=10)
        try:
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return time.monotonic() - t0
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        time.sleep(0.1)
    raise RuntimeError(f"{srv.name} not ready within {timeout:.0f} s")


def _worker(cluster: Any, label: str, objs: list[dict[str, Any]], certs: Path, tmp: Path,
            gates: dict[str, bool]) -> tuple[int, int, int, float]:
    """(Pss, VmRSS, listed JSON bytes, seconds to ready) of a 1-worker server following an
    apiserver that holds ``objs``."""
    from bench.b5_memory import _wait_warmed
    api = cluster.add_apiserver(gates, name=f"b5-{label}".replace(" ", "-"))
    srv = None
    try:
        objs = [o for o in objs if o["kind"] in _PLURALS]
        _seed(cluster.etcd.url, api.prefix, objs)
        size = _listed_bytes(api, len(objs))
        t0 = time.monotonic()
        srv = servers.start(f"b5-{label}", [*servers.WEBHOOK, "serve"], certs, tmp, workers=1, threads=4,
                            timeout=600, extra=["--shutdown-delay", "0", "--kubeconfig", str(api.kubeconfig()),
                                                "--feature-gates", gen.GATES, "--log-level", "warning"])
        ready = _wait_ready(srv, t0)
        _wait_warmed(srv, timeout=600)
        servers.post(srv, "/validate", gen.body(gen.grouped_claim()), n=3)
        time.sleep(0.5)
        pids = srv.worker_pids()
        pss, rss = _memory(pids[0]) if pids else (0, 0)
        return pss, rss, size, ready
    finally:
        if srv is not None:
            srv.stop()
        api.stop()


def live_rows(quick: bool, certs: Path, tmp: Path) -> list[Row]:
    """One row per shape: the worker's Pss held for the state against its listed JSON (none in
    quick mode)."""
    if not shapes(quick):
        return []
    try:
        from tests.rig.cluster import BIN, Cluster
    except ImportError as e:
        return [Row.na(NAME, "state listed from kube-apiserver", f"the test rig cannot be imported: {e}")]
    if not all((BIN / b).exists() for b in ("etcd", "kube-apiserver")):
        return [Row.na(NAME, "state listed from kube-apiserver", "upstream binaries missing: run `make upstream`")]
    from webhook.gates import parse_spec
    gates = parse_spec(gen.GATES)
    rows: list[Row] = []
    cluster = Cluster(tmp / "rig", gates)
    try:
        for label, nodes, make in shapes(quick):
            case = f"{nodes}-node {label} state listed from kube-apiserver, held by one worker (Pss)"
            try:
                objs = make(nodes)
                devices = gen.device_count(objs)
                base_pss, base_rss, _, _ = _worker(cluster, f"{label}-1", make(1), certs, tmp, gates)
                pss, rss, size, ready = _worker(cluster, f"{label}-{nodes}", objs, certs, tmp, gates)
            except (RuntimeError, OSError) as e:
                rows.append(Row.na(NAME, case, str(e).splitlines()[0][:150]))
                continue
            held, held_rss = pss - base_pss, rss - base_rss
            rows.append(Row(NAME, case, fmt_bytes(held), fmt_bytes(size), held / size if size else None,
                            f"≤ {TARGET:g}× its JSON", None if not size else held / size <= TARGET,
                            f"VmRSS held {fmt_bytes(held_rss)} ({held_rss / size:.2f}×); worker Pss "
                            f"{fmt_bytes(pss)} vs {fmt_bytes(base_pss)} with 1 node; {devices} devices, "
                            f"{held / max(devices, 1):.0f} B a device; ready {ready:.1f} s after start; "
                            f"floor = compact JSON of the listed objects"))
    finally:
        cluster.stop()
    return rows
