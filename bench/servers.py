"""Start and stop real servers on loopback for B2/B5 (same approach as the integration tests)."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

WEBHOOK = [sys.executable, "-m", "webhook"]
ECHO = [sys.executable, "-m", "bench.echo_app"]
ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_certs(out: Path) -> Path:
    subprocess.run([*WEBHOOK, "certs", "--service", "dra-webhook", "--namespace", "dra-webhook",
                    "--out", str(out), "--dev"], check=True, capture_output=True, cwd=ROOT)
    return out


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    certs: Path
    log: Path

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.certs / "ca.crt"))

    def worker_pids(self) -> list[int]:
        """The gunicorn workers (children of the master, which is our child)."""
        return children(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(name: str, cmd: list[str], certs: Path, tmp: Path, *, workers: int, threads: int,
          extra: list[str] | None = None, timeout: float = 60.0) -> Server:
    port = free_port()
    log = tmp / f"{name}-{port}.log"
    full = [*cmd, "--bind", f"127.0.0.1:{port}", "--tls-cert", str(certs / "tls.crt"),
            "--tls-key", str(certs / "tls.key"), "--workers", str(workers), "--threads", str(threads),
            *(extra or [])]
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with log.open("wb") as out:
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    srv = Server(name, proc, port, certs, log)
    deadline = time.monotonic() + timeout
    ctx = srv.ssl_context()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200 and len(srv.worker_pids()) >= workers:
                conn.close()
                return srv
            conn.close()
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.2)
    srv.stop()
    raise RuntimeError(f"{name} did not start within {timeout:.0f} s: {log.read_text()[-2000:]}")


def post(srv: Server, path: str, body: bytes, n: int = 1) -> int:
    """Send ``n`` requests on one connection; returns the last status."""
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=srv.ssl_context(), timeout=60)
    status = 0
    try:
        for _ in range(n):
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            status = r.status
    finally:
        conn.close()
    return status


def connection_spread(port: int, pids: list[int]) -> list[int]:
    """Established connections to local ``port`` held by each of these processes, largest first
    (``/proc/net/tcp`` inodes matched against each process's socket descriptors)."""
    inodes: set[str] = set()
    try:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "01" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(cols[9])
    except OSError:
        return []
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        n = 0
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            n += target.startswith("socket:[") and target[8:-1] in inodes
        out.append(n)
    return sorted(out, reverse=True)


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (``/proc/<pid>/task/*/children``; [] once it is gone)."""
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return pids


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (``/proc/<pid>/stat`` utime + stime)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")
