"""Real servers for integration tests: `dra-webhook serve` (gunicorn over TLS) on loopback."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = [sys.executable, "-m", "webhook"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    certs: Path
    log: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def ssl_context(self, client_cert: bool = False) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        if client_cert:
            ctx.load_cert_chain(str(self.certs / "tls.crt"), str(self.certs / "tls.key"))
        return ctx

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def make_certs(out: Path) -> Path:
    subprocess.run([*BIN, "certs", "--service", "dra-webhook", "--namespace", "dra-webhook",
                    "--out", str(out), "--dev"], check=True, capture_output=True)
    return out


def start_server(certs: Path, tmp: Path, *extra: str, env: dict[str, str] | None = None,
                 wait_ready: bool = True) -> Server:
    port = free_port()
    log = tmp / f"server-{port}.log"
    cmd = [*BIN, "serve", "--bind", f"127.0.0.1:{port}", "--tls-cert", str(certs / "tls.crt"),
           "--tls-key", str(certs / "tls.key"), "--workers", "2", "--shutdown-delay", "0", *extra]
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env)
    srv = Server(proc, port, certs, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if not wait_ready:
                return srv
            import requests
            r = requests.get(srv.url + "/healthz", verify=str(certs / "ca.crt"),
                             cert=(str(certs / "tls.crt"), str(certs / "tls.key")), timeout=2)
            if r.status_code == 200:
                return srv
        except OSError:
            pass
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.1)
    srv.stop()
    raise AssertionError(f"server did not start: {log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def certs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("state")
    (d / "node.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n")
    return d


@pytest.fixture(scope="module")
def server(certs_dir: Path, state_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(certs_dir, tmp_path_factory.mktemp("srv"), "--cluster-state", str(state_dir))
    yield srv
    srv.stop()
