"""Broken pods: the chart's pod (tests/container/pod.py) with one thing wrong -- a certificate
mount missing or unreadable by the pod's user, a key that is not the certificate's, no writable
/tmp, no service account, a state directory it cannot read -- exits with status 2 and one line
that says what, before any worker starts; never a traceback. And the state an empty cluster lists
to (an empty List) is an empty state: the pod starts and is ready.

No apiserver is needed: each of these fails before the first request (the service account points
at a port nothing listens on).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from tests.container.conftest import TLS_SECRET, WEBHOOK_GATES, chart_values, make_certs, port_free
from tests.container.pod import Pod
from tests.rig.sandbox import NAMESPACE, render_chart

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    d = tmp_path_factory.mktemp("fault-certs")
    return {"good": make_certs(d / "good"), "other": make_certs(d / "other")}


def _pod(tmp: Path, certs: dict[str, dict[str, bytes]], image: str) -> Pod:
    good = certs["good"]
    objects = render_chart(chart_values("https://127.0.0.1:8443", good["ca.crt"].decode(), WEBHOOK_GATES))
    pod = Pod(objects, tmp, "dra-webhook-fault", secrets={TLS_SECRET: dict(good)},
              service_account={"token": b"not-a-real-token", "ca.crt": good["ca.crt"], "namespace": NAMESPACE.encode()},
              apiserver=("127.0.0.1", 1))
    assert pod.image == image
    return pod


def _missing_cert_mount(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.mounts_dropped.add("tls")


def _unreadable_cert(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.secret_mode = 0o600  # owned by root here, the pod runs as 65532


def _key_of_another_cert(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.secrets[TLS_SECRET]["tls.key"] = certs["other"]["tls.key"]


def _read_only_tmp(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.mounts_dropped.add("tmp")


def _no_service_account(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.service_account = None


def _unreadable_state_dir(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    state = tmp / "state"
    state.mkdir()
    (state / "cluster.json").write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    os.chmod(state, 0o700)
    pod.extra_volumes[str(state)] = ("/state", "ro")
    pod.args = [a for a in pod.args if a != "--in-cluster"] + ["--cluster-state=/state"]


def _state_dir_not_a_directory(pod: Pod, tmp: Path, certs: dict[str, dict[str, bytes]]) -> None:
    pod.args = [a for a in pod.args if a != "--in-cluster"] + ["--cluster-state=/etc/dra-webhook/config/config.yaml"]


Fault = Callable[[Pod, Path, dict[str, dict[str, bytes]]], None]
FAULTS: list[tuple[str, Fault, tuple[str, ...]]] = [
    ("missing-cert-mount", _missing_cert_mount, ("--tls-cert /etc/dra-webhook/tls/tls.crt: no such file",)),
    ("cert-unreadable-by-the-pods-user", _unreadable_cert,
     ("/etc/dra-webhook/tls/tls.crt", "cannot read it as uid 65532", "Permission denied")),
    ("key-of-another-certificate", _key_of_another_cert, ("do not make a usable pair",)),
    ("read-only-tmp", _read_only_tmp, ("no writable temporary directory", "emptyDir")),
    ("no-service-account", _no_service_account, ("in-cluster config:",)),
    ("state-dir-unreadable", _unreadable_state_dir,
     ("--cluster-state /state: cannot read the directory as uid 65532: Permission denied",)),
    ("state-dir-not-a-directory", _state_dir_not_a_directory, ("--cluster-state", "not a directory")),
]


@pytest.mark.parametrize(("fault", "says"), [pytest.param(f, s, id=i) for i, f, s in FAULTS])
def test_a_broken_pod_exits_2_with_one_line(image: str, certs: dict[str, dict[str, bytes]], tmp_path: Path,
                                             fault: Fault, says: tuple[str, ...]) -> None:
    pod = _pod(tmp_path, certs, image)
    fault(pod, tmp_path, certs)
    r = pod.run_to_exit(timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stdout + r.stderr, r.stderr
    assert lines[0].startswith("dra-webhook serve: ") and all(w in lines[0] for w in says), lines[0]


def test_an_empty_list_is_an_empty_state(image: str, certs: dict[str, dict[str, bytes]], tmp_path: Path) -> None:
    pod = _pod(tmp_path, certs, image)
    state = tmp_path / "state"
    state.mkdir()
    (state / "cluster.json").write_text('{"apiVersion":"v1","kind":"List","items":[]}')
    os.chmod(state, 0o755)
    os.chmod(state / "cluster.json", 0o644)
    pod.extra_volumes[str(state)] = ("/state", "ro")
    pod.args = [a for a in pod.args if a != "--in-cluster"] + ["--cluster-state=/state"]
    assert port_free(pod.port), f"port {pod.port} is in use on this machine"
    ca = tmp_path / "ca.crt"
    ca.write_bytes(certs["good"]["ca.crt"])
    pod.start()
    try:
        pod.wait_until(lambda: requests.get(f"https://127.0.0.1:{pod.port}/readyz", timeout=2,
                                            verify=str(ca)).status_code == 200, 60, "readiness")
        configz = requests.get(f"https://127.0.0.1:{pod.port}/configz", timeout=2, verify=str(ca)).json()
        assert configz["state"]["source"] == "dir:/state" and sum(configz["state"]["objects"].values()) == 0, configz
        assert "Traceback" not in pod.logs()
    finally:
        pod.remove()
