"""Fixtures of the container tests: the image `make image` builds (built here if it is missing or
stale: image/build.sh is idempotent), and the chart's pod run from it by podman.

A failure to build the image or to run podman is a test error with the output, never a skip.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.container.pod import Pod, podman
from tests.rig.cluster import REPO, Cluster, gate_spec
from tests.rig.sandbox import NAMESPACE, render_chart

BUILD_TIMEOUT = 1800
#: The apiserver serves scheduling.k8s.io/v1beta1 (GenericWorkload) and keeps the fields of two
#: gates the webhook has off, so a strip (DRADeviceCompatibilityGroups) and a denial
#: (DRAFractionalCapacityRange) both come from the webhook.
APISERVER_GATES = {"GenericWorkload": True, "DRADeviceCompatibilityGroups": True, "DRAFractionalCapacityRange": True}
WEBHOOK_GATES = {"GenericWorkload": True, "DRADeviceCompatibilityGroups": False, "DRAFractionalCapacityRange": False}
TLS_SECRET = "dra-webhook-tls"


@pytest.fixture(scope="session")
def image() -> str:
    """The image's name, after `image/build.sh` (seconds when nothing changed)."""
    r = subprocess.run([str(REPO / "image" / "build.sh")], capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                       cwd=REPO)
    if r.returncode != 0:
        pytest.fail(f"image/build.sh failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}")
    return (REPO / ".cache" / "image" / "name").read_text().strip()


def make_certs(out: Path, service: str = "dra-webhook") -> dict[str, bytes]:
    """A serving pair for 127.0.0.1 and the Service names (`dra-webhook certs --dev`): tls.crt,
    tls.key, ca.crt, as a kubernetes.io/tls Secret holds them."""
    subprocess.run([sys.executable, "-m", "webhook", "certs", "--service", service, "--namespace", NAMESPACE,
                    "--out", str(out), "--dev"], check=True, capture_output=True, timeout=60, cwd=REPO)
    return {n: (out / n).read_bytes() for n in ("tls.crt", "tls.key", "ca.crt")}


def chart_values(url: str, ca_pem: str, gates: dict[str, bool]) -> dict[str, Any]:
    """The chart as the rig installs it: the apiserver calls `url` (the pod on the host network)
    and trusts `ca_pem`; the serving pair comes from an existing Secret."""
    return {"webhooks": {"url": url},
            "certs": {"mode": "existingSecret", "existingSecret": {"name": TLS_SECRET, "caBundle": ca_pem}},
            "featureGates": gates}


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def kubectl_must(cluster: Cluster, *args: str, input: str | None = None) -> str:
    r = cluster.api.kubectl(*args, input=input)
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def wait_webhook_active(cluster: Cluster, timeout: float = 60) -> None:
    """Until the apiserver calls the webhook: a dry-run claim on a class nobody has gets our warning."""
    probe = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "container-probe", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "container-probe"}}]}}}
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        r = cluster.api.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe))
        last = r.stderr
        if "feasibility:" in r.stderr:
            return
        time.sleep(0.3)
    raise AssertionError(f"the apiserver does not call the container after {timeout} s: {last}")


class Deployed:
    """The rig's apiserver with the chart's release in it, and one pod of it run by podman."""

    def __init__(self, cluster: Cluster, pod: Pod, objects: list[dict[str, Any]], certs: dict[str, bytes]) -> None:
        self.cluster, self.pod, self.objects, self.certs = cluster, pod, objects, certs
        self.ca_file = pod.workdir / "ca.crt"
        self.ca_file.write_bytes(certs["ca.crt"])

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.pod.port}"

    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.cluster.api.kubectl(*args, input=input)


@pytest.fixture(scope="module")
def deployed(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """etcd and kube-apiserver 1.37, the chart's release applied to it (RBAC, ConfigMap, Secret,
    Service, Deployment...), its pod run from the image with the ServiceAccount's token mounted
    as a kubelet mounts it (`--in-cluster`), and the webhook configurations registered last."""
    d = tmp_path_factory.mktemp("container")
    cluster = Cluster(d, APISERVER_GATES)
    pod: Pod | None = None
    try:
        certs = make_certs(d / "certs")
        first = render_chart(chart_values("https://127.0.0.1:1", certs["ca.crt"].decode(), WEBHOOK_GATES))
        port = Pod(first, d, "probe").port
        objects = render_chart(chart_values(f"https://127.0.0.1:{port}", certs["ca.crt"].decode(), WEBHOOK_GATES))
        pod = Pod(objects, d, "dra-webhook-0", secrets={TLS_SECRET: certs},
                  apiserver=("127.0.0.1", cluster.api.port))
        assert pod.image == image, f"the chart runs {pod.image}, make image built {image}"
        assert port_free(port), f"port {port} (the chart's containerPort, host network) is in use on this machine"
        kubectl_must(cluster, "create", "namespace", NAMESPACE)
        kubectl_must(cluster, "create", "secret", "tls", TLS_SECRET, "-n", NAMESPACE,
                     "--cert", str(d / "certs" / "tls.crt"), "--key", str(d / "certs" / "tls.key"))
        configs = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
        rest = [o for o in objects if o not in configs]
        kubectl_must(cluster, "apply", "--server-side", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": rest}))
        (sa,) = [o for o in objects if o["kind"] == "ServiceAccount"]
        token = kubectl_must(cluster, "create", "token", sa["metadata"]["name"], "-n", NAMESPACE,
                             "--duration", "2h").strip()
        pod.service_account = {"token": token.encode(), "ca.crt": cluster.pki.ca.read_bytes(),
                               "namespace": NAMESPACE.encode()}
        pod.start()
        deployed = Deployed(cluster, pod, objects, certs)
        wait_ready(deployed)
        kubectl_must(cluster, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                    "items": configs}))
        wait_webhook_active(cluster)
        yield deployed
    finally:
        if pod is not None:
            (d / "container.log").write_text(pod.logs() if pod.started else "")
            pod.remove()
        cluster.stop()


def wait_ready(dep: Deployed) -> None:
    """As a kubelet: the startup probe within its budget, then readiness (the state synced)."""
    import requests

    def get(path: str) -> requests.Response:
        return requests.get(dep.url + path, timeout=2, verify=str(dep.ca_file))

    startup = dep.pod.probe("startupProbe")
    budget = startup["periodSeconds"] * startup["failureThreshold"]
    dep.pod.wait_until(lambda: get(startup["httpGet"]["path"]).status_code == 200, budget, "the startup probe")
    ready = dep.pod.probe("readinessProbe")
    dep.pod.wait_until(lambda: get(ready["httpGet"]["path"]).status_code == 200, 60, "readiness")


__all__ = ["APISERVER_GATES", "WEBHOOK_GATES", "Deployed", "chart_values", "gate_spec", "make_certs", "podman"]
