"""Certificate rotation under sustained concurrent load: 0 failed requests, the new certificate is
served within seconds, and ``dra_webhook_cert_expiry_timestamp_seconds`` moves to its notAfter."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from cryptography import x509

from tests.builders import PODGROUP, SLICE, review
from tests.integration.conftest import BIN
from tests.reliability.conftest import post, start_server

pytestmark = pytest.mark.integration

CLIENTS = 6


def _certs(out: Path, days: int) -> Path:
    subprocess.run([*BIN, "certs", "--service", "dra-webhook", "--namespace", "dra-webhook",
                    "--out", str(out), "--dev", "--days", str(days)], check=True, capture_output=True)
    return out


def _served(srv) -> x509.Certificate:
    ctx = srv.ssl_context()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            der = t.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der)


def _expiry_metric(srv) -> float | None:
    text = requests.get(srv.url + "/metrics", verify=str(srv.certs / "ca.crt"), timeout=5).text
    for line in text.splitlines():
        if line.startswith("dra_webhook_cert_expiry_timestamp_seconds"):
            return float(line.split()[-1])
    return None


def test_rotation_under_concurrent_load_drops_nothing_and_updates_the_expiry_metric(tmp_path):
    certs = _certs(tmp_path / "certs", days=365)
    srv = start_server(certs, tmp_path, "--threads", "4")
    failures: list[str] = []
    counts = [0] * CLIENTS
    done = threading.Event()

    def client(i: int) -> None:
        # Half the clients keep connections alive (as the apiserver does), half reconnect each time
        # so that new TLS handshakes happen all through the rotation.
        sess = requests.Session() if i % 2 == 0 else None
        while not done.is_set():
            try:
                r = post(srv, "/validate?timeout=5s", review(SLICE if i % 3 else PODGROUP), session=sess)
                if r.status_code != 200 or "response" not in r.json():
                    failures.append(f"client {i}: HTTP {r.status_code}")
                counts[i] += 1
            except Exception as e:  # noqa: BLE001 - every failure is a finding
                failures.append(f"client {i}: {e!r}")
        if sess is not None:
            sess.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    try:
        old = _served(srv)
        old_metric = _expiry_metric(srv)
        assert old_metric == pytest.approx(old.not_valid_after_utc.timestamp())
        for t in threads:
            t.start()
        time.sleep(1.0)
        staging = _certs(Path(shutil.copytree(certs, tmp_path / "staging")), days=30)
        for name in ("tls.key", "tls.crt"):  # two atomic renames, key first, as kubelet's volume swap
            shutil.copy(staging / name, certs / f".{name}.new")
            (certs / f".{name}.new").replace(certs / name)
        new_cert = x509.load_pem_x509_certificate((certs / "tls.crt").read_bytes())
        rotated_at = time.monotonic()
        served = old
        while served.serial_number != new_cert.serial_number and time.monotonic() - rotated_at < 10:
            time.sleep(0.2)
            served = _served(srv)
        took = time.monotonic() - rotated_at
        time.sleep(1.5)  # keep the load on after the switch: both workers pick the new pair up
        metric = _expiry_metric(srv)
        done.set()
        for t in threads:
            t.join(timeout=15)
        assert served.serial_number == new_cert.serial_number, "new certificate not served within 10 s"
        assert took < 5, f"new certificate served only after {took:.1f}s"
        assert metric == pytest.approx(new_cert.not_valid_after_utc.timestamp()), (metric, old_metric)
        assert metric < old_metric  # 30-day certificate replaced the 365-day one
        assert failures == [], failures[:10]
        assert all(c > 5 for c in counts), counts  # every client really ran during the rotation
    finally:
        done.set()
        assert srv.stop() == 0
