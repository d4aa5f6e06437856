"""The real `dra-webhook serve`: gunicorn over TLS on loopback, real HTTPS requests."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import threading
import time

import pytest
import requests
from cryptography import x509

from tests.builders import PODGROUP, SLICE, review
from tests.integration.conftest import make_certs, start_server

pytestmark = pytest.mark.integration


def post(server, path, body, **kw):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(server.url + path, data=data, verify=str(server.certs / "ca.crt"),
                         headers={"Content-Type": "application/json"}, timeout=10, **kw)


@pytest.mark.parametrize("path", ["/mutate", "/validate"])
@pytest.mark.parametrize("obj", [SLICE, PODGROUP], ids=["resourceslice", "podgroup"])
def test_admission_over_https(server, path, obj):
    r = post(server, path + "?timeout=5s", review(obj, uid="uid-42"))
    assert r.status_code == 200
    out = r.json()
    assert out["kind"] == "AdmissionReview" and out["response"]["uid"] == "uid-42"


def test_operational_endpoints(server):
    ca = str(server.certs / "ca.crt")
    assert requests.get(server.url + "/healthz", verify=ca, timeout=5).json()["status"] == "ok"
    assert requests.get(server.url + "/readyz", verify=ca, timeout=5).status_code == 200
    post(server, "/validate", review(SLICE))
    metrics = requests.get(server.url + "/metrics", verify=ca, timeout=5).text
    assert "dra_webhook_admission_requests_total" in metrics
    assert "dra_webhook_cert_expiry_timestamp_seconds" in metrics
    configz = requests.get(server.url + "/configz", verify=ca, timeout=5).json()
    assert configz["featureGates"]["GenericWorkload"] is False


@pytest.mark.parametrize(("body", "code"), [
    pytest.param(b"not json", 400, id="non-json"),
    pytest.param(b'{"kind": "Nope"}', 400, id="not-an-admissionreview"),
    pytest.param(b"\xff\xfe", 400, id="non-utf8"),
    pytest.param(b"[" * 3000 + b"]" * 3000, 400, id="deep"),
    pytest.param(b" " * (4 * 1024 * 1024), 413, id="4mib"),
])
def test_bad_input_then_keeps_serving(server, body, code):
    r = post(server, "/validate", body)
    assert r.status_code == code and r.json()["code"] == code
    assert post(server, "/validate", review(SLICE)).status_code == 200


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_are_served(server, version):
    ctx = server.ssl_context()
    ctx.minimum_version = ctx.maximum_version = version
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            assert t.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]


def test_server_context_refuses_old_protocols_and_weak_ciphers(certs_dir):
    from webhook.server.tls import build_context
    ctx = build_context(str(certs_dir / "tls.crt"), str(certs_dir / "tls.key"))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    names = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names and all(n.startswith("ECDHE-") and ("GCM" in n or "CHACHA20" in n) for n in names)


def _served_serial(server) -> int:
    ctx = server.ssl_context()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            der = t.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def test_certificate_rotation_without_restart_or_failures(tmp_path):
    certs = make_certs(tmp_path / "certs")
    srv = start_server(certs, tmp_path)
    try:
        before = _served_serial(srv)
        failures: list[str] = []
        done = threading.Event()

        def load() -> None:
            sess = requests.Session()
            while not done.is_set():
                try:
                    r = post(srv, "/validate", review(SLICE))
                    if r.status_code != 200:
                        failures.append(str(r.status_code))
                except Exception as e:  # noqa: BLE001
                    failures.append(repr(e))
            sess.close()

        t = threading.Thread(target=load)
        t.start()
        time.sleep(0.5)
        staging = tmp_path / "new"
        shutil.copytree(certs, staging)
        make_certs(staging)  # same CA, new serving key and certificate
        for name in ("tls.key", "tls.crt"):  # two atomic renames, as a Secret volume update does
            shutil.copy(staging / name, certs / f".{name}.new")
            (certs / f".{name}.new").replace(certs / name)
        after = before
        deadline = time.monotonic() + 10
        while after == before and time.monotonic() < deadline:
            time.sleep(0.2)
            after = _served_serial(srv)
        time.sleep(0.5)
        done.set()
        t.join()
        assert after != before, "new certificate not served within 10 s"
        assert after == x509.load_pem_x509_certificate((certs / "tls.crt").read_bytes()).serial_number
        assert failures == []
    finally:
        assert srv.stop() == 0


def test_client_certificates_required_with_client_ca(tmp_path, certs_dir):
    srv = start_server(certs_dir, tmp_path, "--client-ca", str(certs_dir / "ca.crt"))
    try:
        ok = requests.get(srv.url + "/healthz", verify=str(certs_dir / "ca.crt"),
                          cert=(str(certs_dir / "tls.crt"), str(certs_dir / "tls.key")), timeout=5)
        assert ok.status_code == 200
        with pytest.raises(requests.exceptions.RequestException):
            requests.get(srv.url + "/healthz", verify=str(certs_dir / "ca.crt"), timeout=5)
    finally:
        srv.stop()


def test_allocator_model_is_warmed_in_the_background(server):
    ca = str(server.certs / "ca.crt")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not requests.get(server.url + "/configz", verify=ca,
                                                            timeout=5).json()["allocatorWarmed"]:
        time.sleep(0.2)
    assert requests.get(server.url + "/configz", verify=ca, timeout=5).json()["allocatorWarmed"] is True
    assert "allocator model warmed" in server.log.read_text()


def test_an_empty_cluster_listing_serves_an_empty_state(tmp_path, certs_dir):
    """`kubectl get ... -o json` of an empty cluster is an empty List: the server starts on it
    (the state is read in the master before any worker starts) and is ready."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "cluster.json").write_text('{"apiVersion":"v1","kind":"List","items":[]}')
    srv = start_server(certs_dir, tmp_path, "--cluster-state", str(state))
    try:
        ca = str(certs_dir / "ca.crt")
        assert requests.get(srv.url + "/readyz", verify=ca, timeout=5).status_code == 200
        state_desc = requests.get(srv.url + "/configz", verify=ca, timeout=5).json()["state"]
        assert sum(state_desc["objects"].values()) == 0, state_desc
    finally:
        assert srv.stop() == 0
    assert "Traceback" not in srv.log.read_text()
