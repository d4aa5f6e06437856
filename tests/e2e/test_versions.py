"""resource.k8s.io v1beta1 and v1beta2 writes through the real apiserver (serving both) and our webhook.

Two registrations. The chart's: rules list v1 only, with ``matchPolicy: Equivalent``, so the
apiserver converts the object to v1 before it calls us (naming the client's version in
``requestKind``) and applies our patch to the v1 object. And one whose rules list the older
versions too: the apiserver then sends the object in the version it came in, and our patch must
apply to that shape.

The webhook's gates are behind the cluster's (DRADeviceCompatibilityGroups and
DRADerivedAttributes on in the apiserver, off in the webhook), so our strips are what removes
those fields: an object stored without them shows the apiserver applied our patch, and a patch
in the wrong shape would fail the write (failurePolicy Fail). DRAFractionalCapacityRange is on in
the apiserver and off in the webhook, so a milli-step requestPolicy is ours to deny.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import REPO, warnings_of
from tests.rig.cluster import gate_spec
from tests.rig.sandbox import Sandbox, render_chart

pytestmark = pytest.mark.e2e

AHEAD = {"DRADeviceCompatibilityGroups": True, "DRADerivedAttributes": True, "DRAFractionalCapacityRange": True}
BEHIND = {g: False for g in AHEAD}
OLDER = ["v1", "v1beta2", "v1beta1"]


def _slice(version: str, name: str) -> dict[str, Any]:
    consumption = {"counterSet": "set-a", "counters": {"memory": {"value": "40Gi"}}, "compatibilityGroups": ["a"]}
    device: dict[str, Any] = {"name": "gpu-0", "consumesCounters": [consumption]}
    if version == "v1beta1":
        device = {"name": "gpu-0", "basic": {"consumesCounters": [consumption]}}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 2},
                     "devices": [device]}}  # set-a is in the pool's other slice (1.37: not in one with devices)


def _claim(version: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "gpu.example.com", "derivedAttributes": [
        {"name": "gpu.example.com/numa", "expression": "device.attributes['gpu.example.com'].numa"}]}
    request = {"name": "gpu", **body} if version == "v1beta1" else {"name": "gpu", "exactly": body}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [request], "constraints": [
                {"requests": ["gpu"], "matchAttribute": "gpu.example.com/numa"}]}}}


def _stripped_slice(v1: dict[str, Any]) -> bool:
    return all("compatibilityGroups" not in c for d in v1["spec"]["devices"] for c in d.get("consumesCounters", []))


def _stripped_claim(v1: dict[str, Any]) -> bool:
    return all("derivedAttributes" not in r.get("exactly", {}) for r in v1["spec"]["devices"]["requests"])


CASES = [
    pytest.param(_slice, "resourceslices", _stripped_slice, "v1beta1", id="slice-v1beta1"),
    pytest.param(_slice, "resourceslices", _stripped_slice, "v1beta2", id="slice-v1beta2"),
    pytest.param(_claim, "resourceclaims", _stripped_claim, "v1beta1", id="claim-v1beta1"),
    pytest.param(_claim, "resourceclaims", _stripped_claim, "v1beta2", id="claim-v1beta2"),
]


@pytest.fixture(scope="module")
def behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("versions"), AHEAD, webhook_gates=BEHIND, load_examples=False)
    yield sb
    sb.stop()


@pytest.fixture(params=["chart-v1-equivalent", "older-versions-listed"])
def registration(request: pytest.FixtureRequest, behind: Sandbox) -> Iterator[str]:
    """The chart's webhook configurations as rendered, or with the older versions in their rules."""
    if request.param == "older-versions-listed":
        kinds = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        configs = [c for c in render_chart(behind.chart_values({})) if c["kind"] in kinds]
        for c in configs:
            for w in c["webhooks"]:
                for rule in w["rules"]:
                    if rule["apiGroups"] == ["resource.k8s.io"]:
                        rule["apiVersions"] = OLDER
        behind.must("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": configs}))
        behind.wait_webhook_active()
    yield request.param
    if request.param == "older-versions-listed":
        behind.register()


def _calls(sb: Sandbox, name: str) -> list[dict[str, Any]]:
    """The webhook's log lines of the reviews of object ``name`` (/mutate and /validate)."""
    assert sb.webhook is not None and sb.webhook.proc is not None
    lines = [json.loads(line) for line in sb.webhook.proc.log.read_text().splitlines() if line.startswith("{")]
    return [r for r in lines if r.get("msg") == "admission review" and r.get("object_name") == name]


def _review(sb: Sandbox, obj: dict[str, Any], tmp: Any) -> dict[str, Any]:
    """`dra-webhook review --as-webhook` of ``obj`` with the webhook's gates: its AdmissionReview."""
    f = tmp / "obj.json"
    f.write_text(json.dumps(obj))
    assert sb.webhook is not None
    done = subprocess.run([sys.executable, "-m", "webhook", "review", "-f", str(f), "--no-feasibility", "--as-webhook",
                           "--feature-gates", gate_spec(sb.webhook.gates), "-o", "json"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


@pytest.mark.parametrize(("make", "plural", "stripped", "version"), CASES)
def test_a_write_in_an_older_version_gets_our_patch_in_its_shape(behind: Sandbox, registration: str, make: Any,
                                                                 plural: str, stripped: Any, version: str,
                                                                 tmp_path: Any) -> None:
    name = f"{version}-{registration}"
    obj = make(version, name)
    ns = ["-n", "default"] if plural == "resourceclaims" else []
    made = behind.kubectl("create", "-f", "-", input=json.dumps(obj))
    try:
        assert made.returncode == 0, made.stderr
        v1 = json.loads(behind.must("get", f"{plural}.v1.resource.k8s.io", name, *ns, "-o", "json"))
        assert v1["apiVersion"] == "resource.k8s.io/v1"
        assert stripped(v1), json.dumps(v1["spec"])
        # What kubectl showed is what `review` says offline (its deprecation note is the
        # apiserver's own warning, sent with every write in these versions; feasibility aside).
        offline = _review(behind, obj, tmp_path)["response"]
        shown = {w for w in warnings_of(made.stderr) if not w.startswith("feasibility:")}
        assert shown == set(offline["warnings"]), made.stderr
        assert any("is off: removed" in w for w in offline["warnings"])
        # The version each webhook call came in: as written when the rules list it, else v1
        # with the client's version beside it.
        calls = _calls(behind, name)
        assert calls and {(c["version"], c.get("request_version")) for c in calls} == (
            {(version, None)} if registration == "older-versions-listed" else {("v1", version)}), calls
    finally:
        behind.kubectl("delete", plural, name, *ns, "--ignore-not-found")


def test_a_v1beta1_denial_reads_as_the_apiserver_reports_it(behind: Sandbox, registration: str,
                                                            tmp_path: Any) -> None:
    """Our 422 for a v1beta1 slice: a handwritten check, so the apiserver's v1 path (no ``basic``)."""
    policy = {"default": "1250m", "validRange": {"min": "0", "max": "2500m", "step": "1250m"}}
    obj = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "milli-step"},
           "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                    "pool": {"name": "milli-step", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "basic": {"allowMultipleAllocations": True, "capacity": {
                        "memory": {"value": "10", "requestPolicy": copy.deepcopy(policy)}}}}]}}
    r = behind.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode != 0, "the webhook must deny it"
    field = "spec.devices[0].capacity[memory].requestPolicy.validRange.step"
    assert 'The ResourceSlice "milli-step" is invalid: ' in r.stderr and f"{field}: Invalid value" in r.stderr
    offline = _review(behind, obj, tmp_path)["response"]
    assert [c["field"] for c in offline["status"]["details"]["causes"]] == [field]
