"""The certificates the chart generates are accepted by a client that checks the Service names
against the CA the chart injects as caBundle, exactly as the kube-apiserver does
(ServerName `<svc>.<ns>.svc`, verified against `clientConfig.caBundle`).
"""

from __future__ import annotations

import base64
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chart.helpers import SERVICE, Rendered

GOOD_NAMES = [f"{SERVICE}.dra-system.svc", f"{SERVICE}.dra-system", SERVICE,
              f"{SERVICE}.dra-system.svc.cluster.local"]
BAD_NAMES = ["dra-webhook.other-namespace.svc", "localhost", f"{SERVICE}.dra-system.svc.evil.example"]


@pytest.fixture
def chart_certs(default: Rendered, tmp_path: Path) -> Path:
    """tls.crt / tls.key from the rendered Secret and ca.crt from the rendered caBundle."""
    (vol,) = [v for v in default.one("Deployment")["spec"]["template"]["spec"]["volumes"]
              if v["name"] == "tls"]
    secret = vol["secret"]["secretName"]
    (tmp_path / "tls.crt").write_bytes(default.secret_data(secret, "tls.crt"))
    (tmp_path / "tls.key").write_bytes(default.secret_data(secret, "tls.key"))
    bundle = default.one("ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"]
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(bundle))
    return tmp_path


def _client_context(certs: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(certs / "ca.crt"))
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    return ctx


def _get(port: int, certs: Path, server_name: str, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with _client_context(certs).wrap_socket(raw, server_hostname=server_name) as tls:
            tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
            resp = http.client.HTTPResponse(tls)
            resp.begin()
            resp.read()
            return resp.status


@pytest.fixture
def stdlib_tls_server(chart_certs: Path) -> Iterator[int]:
    """A minimal TLS server (stdlib) presenting the chart's serving certificate; answers 200."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(chart_certs / "tls.crt"), str(chart_certs / "tls.key"))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                conn.settimeout(5)
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    stop.set()
    thread.join(timeout=5)
    listener.close()


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_chart_cert_is_trusted_for_every_service_name(stdlib_tls_server: int, chart_certs: Path, name: str):
    assert _get(stdlib_tls_server, chart_certs, name, "/healthz") == 200


@pytest.mark.parametrize("name", BAD_NAMES)
def test_chart_cert_is_refused_for_other_names(stdlib_tls_server: int, chart_certs: Path, name: str):
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch|match"):
        _get(stdlib_tls_server, chart_certs, name, "/healthz")


def test_chart_cert_is_refused_against_another_ca(stdlib_tls_server: int, chart_certs: Path, tmp_path: Path):
    from tests.chart.helpers import render

    other = render({})  # a fresh install generates a different CA
    bundle = other.one("ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"]
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "ca.crt").write_bytes(base64.b64decode(bundle))
    with pytest.raises(ssl.SSLCertVerificationError):
        _get(stdlib_tls_server, wrong, f"{SERVICE}.dra-system.svc", "/healthz")


def _server_command() -> list[str]:
    exe = Path(sys.executable).parent / "dra-webhook"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("dra-webhook")
    if found:
        return [found]
    return [sys.executable, "-m", "webhook"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
def test_real_server_with_chart_certs_is_accepted_for_the_service_name(chart_certs: Path, tmp_path: Path):
    cmd = _server_command()
    probe = subprocess.run([*cmd, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and "--tls-cert" in probe.stdout, probe.stderr[-2000:]
    port = _free_port()
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "serve", "--bind", f"127.0.0.1:{port}", "--tls-cert", str(chart_certs / "tls.crt"),
             "--tls-key", str(chart_certs / "tls.key"), "--workers", "1", "--threads", "2",
             "--shutdown-delay", "0"],
            stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        name = f"{SERVICE}.dra-system.svc"
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline and status != 200:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                status = _get(port, chart_certs, name, "/healthz")
            except (TimeoutError, ConnectionError, ssl.SSLEOFError, http.client.HTTPException):
                time.sleep(0.2)
        assert status == 200, log.read_text()[-3000:]
        with pytest.raises(ssl.SSLCertVerificationError):
            _get(port, chart_certs, "dra-webhook.wrong-namespace.svc", "/healthz")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
