"""The image, run as the chart's pod (tests/container/pod.py), serves the real kube-apiserver 1.37:
kubectl through the apiserver gets our denials with field causes, our gate strips with their
warning and feasibility warnings that follow the live state the pod lists and watches with the
chart's ServiceAccount; the probes, /metrics, the process's identity and read-only root; and
last, termination as a kubelet does it: the preStop sleep, SIGTERM, draining, exit within the
grace period.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
import requests

from tests.container.conftest import Deployed
from tests.e2e.conftest import warnings_of
from tests.e2e.test_gates import _seed

pytestmark = pytest.mark.e2e

DRIVER = "container.example.com"


def _get(dep: Deployed, path: str) -> requests.Response:
    return requests.get(dep.url + path, timeout=5, verify=str(dep.ca_file))


def _feasibility(dep: Deployed, obj: dict[str, Any]) -> list[str]:
    r = dep.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode == 0, r.stderr
    return [w for w in warnings_of(r.stderr) if w.startswith("feasibility:")]


def _until(pred: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


def test_the_probes_answer_as_the_chart_declares_them(deployed: Deployed) -> None:
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = deployed.pod.probe(kind)
        r = _get(deployed, probe["httpGet"]["path"])
        assert r.status_code == 200, (kind, r.text)
    ready = _get(deployed, deployed.pod.probe("readinessProbe")["httpGet"]["path"]).json()
    assert ready == {"ready": True, "checks": {"certs": True, "state": True, "notDraining": True}}


def test_it_runs_as_the_charts_user_on_a_read_only_root(deployed: Deployed) -> None:
    from tests.container.pod import podman
    r = podman("exec", deployed.pod.name, "python", "-c",
               "import os\ntry:\n open('/opt/x', 'w')\nexcept OSError as e:\n print(e.strerror)\n"
               "print(os.getuid(), os.getgid(), sorted(os.getgroups()))\n"
               "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
               "print(open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])", check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines == ["Read-only file system", "65532 65532 [65532]", "0000000000000000", "1"], lines


def test_a_denial_comes_back_with_its_field_cause(deployed: Deployed) -> None:
    """The apiserver keeps DRAFractionalCapacityRange on, the webhook has it off: a range step in
    milli-units is ours to refuse."""
    policy = {"default": "1250m", "validRange": {"min": "0", "max": "2500m", "step": "1250m"}}
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "milli-step"},
           "spec": {"driver": DRIVER, "nodeName": "worker-1", "pool": {"name": "p", "generation": 1,
                                                                       "resourceSliceCount": 1},
                    "devices": [{"name": "d0", "allowMultipleAllocations": True,
                                 "capacity": {"memory": {"value": "10", "requestPolicy": policy}}}]}}
    denied = {"webhook": "validate", "kind": "ResourceSlice", "decision": "denied", "dry_run": "true"}
    before = _count(deployed, "dra_webhook_admission_requests_total", denied)
    r = deployed.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode != 0
    # Our denial reads as the apiserver's own Invalid status, with the field cause.
    assert r.stderr.startswith('The ResourceSlice "milli-step" is invalid: '), r.stderr
    assert "spec.devices[0].capacity[memory].requestPolicy.validRange.step: Invalid value: " in r.stderr, r.stderr
    assert _count(deployed, "dra_webhook_admission_requests_total", denied) == before + 1, "not the pod's denial"


def test_a_gated_field_is_stripped_with_a_warning(deployed: Deployed) -> None:
    obj = _seed("seed-000-resourceslice-compatibility-groups.yaml", "ResourceSlice")
    obj["metadata"]["name"] = "container-groups"
    r = deployed.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj))
    assert r.returncode == 0, r.stderr
    try:
        assert any(w.startswith("DRADeviceCompatibilityGroups is off: removed") for w in warnings_of(r.stderr)), \
            r.stderr
        stored = json.loads(r.stdout)
        assert not any(cc.get("compatibilityGroups") for dev in stored["spec"]["devices"]
                       for cc in dev.get("consumesCounters", [])), stored["spec"]
    finally:
        deployed.kubectl("delete", "resourceslice", "container-groups", "--ignore-not-found")


def test_feasibility_follows_the_live_state(deployed: Deployed) -> None:
    """No device of the class: a warning. The slice created through the apiserver reaches the pod's
    watch (as the chart's ServiceAccount) and the warning goes; deleted, it comes back."""
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
           "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "two", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "acc", "exactly": {"deviceClassName": DRIVER,
                                                                           "count": 2}}]}}}
    slc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "container-accs"},
           "spec": {"driver": DRIVER, "nodeName": "worker-1",
                    "pool": {"name": "accs", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"acc-{i}"} for i in range(2)]}}
    assert deployed.kubectl("apply", "-f", "-", input=json.dumps(cls)).returncode == 0
    try:
        assert _until(lambda: bool(_feasibility(deployed, claim)), 10), "no warning while no device exists"
        assert deployed.kubectl("create", "-f", "-", input=json.dumps(slc)).returncode == 0
        assert _until(lambda: not _feasibility(deployed, claim), 10), _feasibility(deployed, claim)
    finally:
        deployed.kubectl("delete", "resourceslice", "container-accs", "--ignore-not-found")
        deployed.kubectl("delete", "deviceclass", DRIVER, "--ignore-not-found")
    assert _until(lambda: bool(_feasibility(deployed, claim)), 10), "the warning did not come back"


def _count(dep: Deployed, metric: str, labels: dict[str, str] | None = None) -> float:
    """The sum of ``metric`` over the series whose labels include ``labels`` (all the pod's workers)."""
    total = 0.0
    for series, value in re.findall(rf"^{metric}\{{([^}}]*)\}} (\S+)$", _get(dep, "/metrics").text, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', series))
        if all(have.get(k) == v for k, v in (labels or {}).items()):
            total += float(value)
    return total


def test_metrics_count_what_the_apiserver_sent(deployed: Deployed) -> None:
    def total() -> float:
        return _count(deployed, "dra_webhook_admission_requests_total")

    before = total()
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "counted", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}}}
    _feasibility(deployed, claim)
    assert total() >= before + 2  # /mutate and /validate, summed over the pod's workers
    text = _get(deployed, "/metrics").text
    assert re.search(r"^dra_webhook_state_ready(\{[^}]*\})? 1\.0$", text, re.M), text[:2000]


def test_termination_as_a_kubelet_does_it(deployed: Deployed) -> None:
    """preStop sleep (still serving), then SIGTERM: /readyz fails at once while admission is still
    served through the shutdown delay, then the process exits 0 within the grace period."""
    pod = deployed.pod
    assert pod.pre_stop_seconds > 0 and pod.grace_seconds > pod.pre_stop_seconds
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "draining", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}}}
    started = time.monotonic()
    served_in_pre_stop = 0
    while time.monotonic() - started < pod.pre_stop_seconds:  # the kubelet sleeps; the pod serves on
        assert _feasibility(deployed, claim), "not served during preStop"
        served_in_pre_stop += 1
    assert served_in_pre_stop >= 1
    pod.signal("TERM")
    term_at = time.monotonic()
    r = _get(deployed, "/readyz")
    assert r.status_code == 503 and r.json()["checks"]["notDraining"] is False, r.text
    assert _feasibility(deployed, claim), "admission must still be served right after SIGTERM"
    code = pod.wait_exit(pod.grace_seconds - pod.pre_stop_seconds)
    assert code == 0, (code, pod.logs()[-3000:])
    took = time.monotonic() - term_at
    assert took < pod.grace_seconds - pod.pre_stop_seconds
    logs = pod.logs()
    assert "Traceback" not in logs and "Shutting down: Master" in logs, logs[-3000:]
