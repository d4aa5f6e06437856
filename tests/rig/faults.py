"""Faults of the rig's control plane, injected for real: signals to processes, etcd compaction
and restart, objects seeded straight into etcd, and HAProxy in front of webhook replicas.

Additive to `cluster.py` (nothing there changes): every helper takes the rig's own objects
(`Proc`, `ApiServer`, `Etcd`) and acts on the processes they started.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import requests

from tests.rig.cluster import ApiServer, Etcd, RigError
from tests.rig.procs import Proc, free_port

ETCD_TXN_OPS = 128
"""etcd's default --max-txn-ops: puts per seeding transaction."""


def pause(proc: Proc) -> None:
    """SIGSTOP the process group: the process hangs with its sockets open (a hung apiserver)."""
    os.killpg(proc.pid, signal.SIGSTOP)


def resume(proc: Proc) -> None:
    os.killpg(proc.pid, signal.SIGCONT)


def kill9_apiserver(api: ApiServer) -> None:
    """kill -9 the apiserver (no graceful close of its streams); `api.start()` brings it back on
    the same port."""
    assert api.proc is not None
    os.killpg(api.proc.pid, signal.SIGKILL)
    api.proc.popen.wait(timeout=30)
    api.proc.stop()  # forgets the pid
    api.proc = None


def _etcd_session() -> requests.Session:
    s = requests.Session()
    s.trust_env = False
    return s


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def etcd_revision(etcd: Etcd) -> int:
    """etcd's current revision (its gRPC gateway)."""
    r = _etcd_session().post(etcd.url + "/v3/kv/range", json={"key": _b64("/")}, timeout=10)
    r.raise_for_status()
    return int(r.json()["header"]["revision"])


def compact_etcd(etcd: Etcd) -> int:
    """Compact etcd up to its current revision, as the apiserver's periodic compaction does; every
    older revision is gone (a watch from one gets "too old resource version"). The revision."""
    rev = etcd_revision(etcd)
    r = _etcd_session().post(etcd.url + "/v3/kv/compaction", json={"revision": str(rev), "physical": True},
                             timeout=30)
    r.raise_for_status()
    return rev


def restart_etcd(etcd: Etcd, down_seconds: float = 0.0) -> None:
    """Stop etcd (SIGTERM), wait ``down_seconds``, start it again on the same ports and data."""
    cmd, log = etcd.proc.cmd, etcd.proc.log
    etcd.proc.stop()
    time.sleep(down_seconds)
    etcd.proc = Proc("etcd", cmd, log)
    etcd.proc.wait_until(lambda: requests.get(etcd.url + "/health", timeout=1).ok, 60, "health")


def seed_through_etcd(etcd: Etcd, api: ApiServer, objects: Iterable[dict[str, Any]]) -> int:
    """Store objects straight into the apiserver's etcd keys, as JSON (the apiserver reads JSON
    and protobuf alike, and its watch cache picks them up like any write). For fixtures of tens
    of thousands of objects: through the apiserver they are created at ~150/s on this machine.
    Each object gets a uid and a creationTimestamp; returns how many were stored."""
    session = _etcd_session()
    n = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch:
            r = session.post(etcd.url + "/v3/kv/txn", json={"success": batch}, timeout=60)
            r.raise_for_status()
            batch.clear()

    for obj in objects:
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        batch.append({"requestPut": {"key": _b64(_etcd_key(api, obj)), "value": _b64(json.dumps(obj))}})
        n += 1
        if len(batch) >= ETCD_TXN_OPS:
            flush()
    flush()
    return n


def _etcd_key(api: ApiServer, obj: dict[str, Any]) -> str:
    """The apiserver's storage key: ``<prefix>/<plural>/[<namespace>/]<name>`` (DRA, scheduling
    and core kinds are stored without their group)."""
    plural = {"ResourceClaim": "resourceclaims", "DeviceClass": "deviceclasses", "Node": "minions"}[obj["kind"]]
    meta = obj["metadata"]
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{api.prefix}/{plural}/{ns}{meta['name']}"


# -- HAProxy ---------------------------------------------------------------------------------


class HAProxy:
    """HAProxy (Debian's package) on loopback in front of webhook replicas: TLS passed through
    (``mode tcp``), each backend health-checked with ``GET /readyz`` over TLS, as a Service's
    endpoints follow readiness probes."""

    def __init__(self, workdir: Path, backends: list[tuple[str, int]], *, inter_ms: int = 300) -> None:
        exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not os.path.exists(exe):
            raise RigError("haproxy is not installed (the Makefile's `haproxy` target installs Debian's package)")
        self.dir = workdir / "haproxy"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.stats = self.dir / "stats.sock"
        servers = "\n".join(
            f"    server {name} 127.0.0.1:{port} check check-ssl verify none inter {inter_ms} fall 1 rise 2"
            for name, port in backends)
        # redispatch + retries: a connection refused by a stopped backend is tried on the next one.
        (self.dir / "haproxy.cfg").write_text(f"""global
    stats socket {self.stats} mode 600 level admin
defaults
    mode tcp
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    retries 3
    option redispatch
frontend webhooks
    bind 127.0.0.1:{self.port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
{servers}
""")
        self.proc = Proc("haproxy", [exe, "-db", "-f", str(self.dir / "haproxy.cfg")], self.dir / "haproxy.log")
        self.proc.wait_until(lambda: bool(self.states()), 30, "its stats socket")

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def states(self) -> dict[str, str]:
        """Backend name -> UP / DOWN (from the stats socket)."""
        import socket
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.stats))
            s.sendall(b"show stat\n")
            data = b"".join(iter(lambda: s.recv(65536), b""))
        rows = [line.split(",") for line in data.decode().splitlines() if line and not line.startswith("#")]
        return {r[1]: r[17].split()[0] for r in rows if r[0] == "replicas" and r[1] not in ("FRONTEND", "BACKEND")}

    def wait(self, want: dict[str, str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while any((got := self.states()).get(k) != v for k, v in want.items()):
            if time.monotonic() > deadline:
                raise RigError(f"haproxy backends {got}, waited for {want}")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.stop(timeout=5)


__all__ = ["HAProxy", "compact_etcd", "etcd_revision", "kill9_apiserver", "pause", "restart_etcd", "resume",
           "seed_through_etcd"]
