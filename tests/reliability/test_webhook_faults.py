"""Faults on the webhook's side, seen by the real kube-apiserver 1.37: the pods webhook's blast
radius, two replicas behind a load balancer through a rolling restart, and a certificate rotation.

One rig for the module: etcd, kube-apiserver, two `dra-webhook serve` replicas (gunicorn over TLS,
2 workers each, one serving certificate) and HAProxy (Debian's package) on loopback in front of
them, passing TLS through and health-checking each replica's `/readyz`, as a Service follows
its pods' readiness. The webhook configurations are the chart's, registered by URL.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from tests.reliability.controlplane import Create, CreateLoad, percentile, wait_until
from tests.rig.cluster import REPO
from tests.rig.faults import HAProxy, pause, resume
from tests.rig.sandbox import NAMESPACE, RELEASE, Sandbox, Webhook

# The test's own clients meet replicas that stop: their unclosed sockets are not the webhook's.
pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

POD_TIMEOUT = 4
"""timeoutSeconds of the webhooks in the blast-radius tests."""
RATE = 50.0
"""Creates per second through the apiserver in the replica tests."""
SHUTDOWN_DELAY = 2.0


class Rig:
    def __init__(self, sb: Sandbox, b: Webhook, lb: HAProxy) -> None:
        self.sb, self.b, self.lb = sb, b, lb
        assert sb.webhook is not None
        self.a = sb.webhook

    def register(self, policy: str = "Fail", timeout: int = 5, url: str | None = None,
                 ca: str | None = None) -> None:
        """The chart's configurations, both webhooks under ``policy``, the pods webhooks on."""
        self.sb.register({"webhooks": {"url": url or self.lb.url, "timeoutSeconds": timeout,
                                       "validating": {"failurePolicy": policy},
                                       "mutating": {"failurePolicy": policy}, "pods": {"enabled": True}},
                          "certs": {"existingSecret": {"caBundle": ca or self.a.ca_pem}}})


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    workdir = tmp_path_factory.mktemp("webhook-faults")
    args = ("--shutdown-delay", str(SHUTDOWN_DELAY))
    sb = Sandbox(workdir, load_examples=False, webhook_args=args)
    lb = None
    b = None
    try:
        assert sb.webhook is not None
        b = Webhook(workdir / "replica-b", sb.webhook.gates, args)
        shutil.rmtree(b.certs)
        shutil.copytree(sb.webhook.certs, b.certs)  # one Secret, mounted by both replicas
        b.kubeconfig = sb.webhook.kubeconfig
        b.start()
        lb = HAProxy(workdir, [("a", sb.webhook.port), ("b", b.port)])
        lb.wait({"a": "UP", "b": "UP"})
        r = Rig(sb, b, lb)
        r.register()
        yield r
    finally:
        if lb is not None:
            lb.stop()
        if b is not None:
            b.stop()
        sb.stop()


# -- the pods webhook's blast radius ------------------------------------------------------------


def _pod(name: str, group: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.example/app:1"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": "gang"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _create(rig: Rig, obj: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    r = rig.sb.kubectl("create", "-f", "-", input=json.dumps(obj), timeout=120)
    took = time.monotonic() - start
    if r.returncode == 0:
        rig.sb.kubectl("delete", "pod", obj["metadata"]["name"], "-n", "default", "--wait=false")
    return r, took


def _kill(webhook: Webhook) -> None:
    assert webhook.proc is not None
    os.killpg(webhook.proc.pid, 9)
    webhook.proc.popen.wait(30)
    webhook.stop()


@pytest.mark.parametrize("fault", ["killed", "hung"])
@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_pods_webhook_blast_radius(rig: Rig, policy: str, fault: str):
    """Registered at replica A directly (no load balancer to route around it), A killed -9 or
    stopped with SIGSTOP. A pod without a scheduling group never reaches the webhook (the chart's
    matchCondition): created at once, whatever the policy. A pod with one gets the policy's
    answer: Fail refuses it, Ignore admits it; a hung webhook costs each of the two pods
    webhooks (mutating, then validating) its timeoutSeconds, never more."""
    rig.register(policy, timeout=POD_TIMEOUT, url=rig.a.url)
    tag = f"{policy.lower()}-{fault}"
    assert rig.a.proc is not None
    proc = rig.a.proc
    if fault == "killed":
        _kill(rig.a)
    else:
        pause(proc)
    try:
        plain, plain_took = _create(rig, _pod(f"plain-{tag}", group=False))
        grouped, grouped_took = _create(rig, _pod(f"grouped-{tag}", group=True))
    finally:
        if fault == "hung":
            resume(proc)
        else:
            rig.a.start()
    print(f"\n{tag}: plain pod {plain_took:.2f} s, pod in a scheduling group {grouped_took:.2f} s "
          f"({'created' if grouped.returncode == 0 else 'refused'})")
    assert plain.returncode == 0, plain.stderr
    # kubectl alone takes 0.3-1.2 s here (more on a loaded machine); a call to a hung webhook
    # would take POD_TIMEOUT at least.
    assert plain_took < POD_TIMEOUT, plain_took
    calls = 1 if policy == "Fail" else 2  # Fail stops at the first (mutating) webhook
    assert grouped_took < calls * POD_TIMEOUT + 5, grouped_took
    if fault == "hung":
        assert grouped_took >= POD_TIMEOUT, "the apiserver waited for the hung webhook"
    if policy == "Fail":
        assert grouped.returncode != 0
        assert 'failed calling webhook "mutate-pods.dra-webhook.io"' in grouped.stderr, grouped.stderr
    else:
        assert grouped.returncode == 0, grouped.stderr
    rig.register()  # back to the load balancer, Fail


# -- replicas under load ------------------------------------------------------------------------


def _summary(results: list[Create]) -> str:
    lat = [r.seconds for r in results]
    return (f"{len(results)} creates, p50 {percentile(lat, 0.5) * 1000:.0f} ms, "
            f"p99 {percentile(lat, 0.99) * 1000:.0f} ms")


def _wrong(results: list[Create]) -> list[str]:
    return [f"{r.status} warned={r.warned} {r.error}" for r in results if r.status != 201 or not r.warned]


def _steady(rig: Rig, seconds: float, prefix: str) -> list[Create]:
    load = CreateLoad(rig.sb.api, RATE, prefix=prefix).start()
    time.sleep(seconds)
    return load.stop()


def test_rolling_restart_of_two_replicas_under_load_loses_no_create(rig: Rig):
    rig.sb.unregister()
    wait_until(lambda: "feasibility:" not in rig.sb.kubectl(
        "create", "--dry-run=server", "-f", "-", input=json.dumps(_probe_claim())).stderr, 30, "no webhook")
    baseline = _steady(rig, 8, "base")
    rig.register()
    steady = _steady(rig, 8, "steady")
    assert _wrong(steady) == []

    load = CreateLoad(rig.sb.api, RATE, prefix="roll").start()
    started = time.monotonic()
    try:
        for name, replica in (("a", rig.a), ("b", rig.b)):
            assert replica.proc is not None
            code = replica.proc.stop(timeout=60)      # SIGTERM: unready at once, drains, exits
            replica.proc = None
            assert code == 0, f"replica {name} did not drain cleanly ({code})"
            rig.lb.wait({name: "DOWN"})
            replica.start()                           # until its /readyz is 200 (state synced)
            rig.lb.wait({name: "UP"})
    finally:
        results = load.stop()
    took = time.monotonic() - started
    base_p99 = percentile([r.seconds for r in baseline], 0.99)
    p99 = percentile([r.seconds for r in results], 0.99)
    print(f"\nno webhook: {_summary(baseline)}\nwebhook, steady: {_summary(steady)}\n"
          f"rolling restart ({took:.0f} s): {_summary(results)}; p99 added {1000 * (p99 - base_p99):.0f} ms")
    assert len(results) >= RATE * took * 0.5, "the load kept its pace roughly"
    assert _wrong(results) == [], "every create must be admitted with our warning"


def _probe_claim() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "probe", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nobody"}}]}}}


# -- certificate rotation -----------------------------------------------------------------------


def _serving_serial(port: int) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_certificate_rotation_as_cert_manager_does_fails_no_create(rig: Rig, tmp_path: Path):
    """New CA first (the caBundle holds old and new), then the new serving pair in both replicas'
    files, then the old CA leaves the bundle; creates flow through the apiserver all along."""
    new = tmp_path / "new"
    subprocess.run([sys.executable, "-m", "webhook", "certs", "--service", RELEASE, "--namespace", NAMESPACE,
                    "--out", str(new), "--dev"], check=True, capture_output=True, timeout=60, cwd=REPO)
    old_ca, new_ca = rig.a.ca_pem, (new / "ca.crt").read_text()
    new_serial = x509.load_pem_x509_certificate((new / "tls.crt").read_bytes()).serial_number
    load = CreateLoad(rig.sb.api, RATE / 2, prefix="rotate").start()
    try:
        time.sleep(3)
        rig.register(ca=old_ca + new_ca)
        time.sleep(3)
        for replica in (rig.a, rig.b):
            _replace(replica.certs / "tls.key", (new / "tls.key").read_bytes())
            _replace(replica.certs / "tls.crt", (new / "tls.crt").read_bytes())
        wait_until(lambda: all(_serving_serial(r.port) == new_serial for r in (rig.a, rig.b)), 30,
                   "both replicas serving the new certificate")
        time.sleep(3)
        rig.register(ca=new_ca)
        time.sleep(3)
    finally:
        results = load.stop()
    for replica in (rig.a, rig.b):  # the rest of the module trusts the new CA
        _replace(replica.certs / "ca.crt", new_ca.encode())
    print(f"\ncertificate rotation: {_summary(results)}")
    assert len(results) > 100
    assert _wrong(results) == []
