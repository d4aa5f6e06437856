"""Pods and workloads through the real kube-apiserver and kubectl: `kubectl apply --dry-run=server`
of a Deployment answers "k of N replicas can be placed now", of a Pod whether it can be placed;
the workloads webhook matches dry runs only, so a real write never reaches it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DRIVER = "pods.e2e.example.com"


def _objects() -> list[dict[str, Any]]:
    """A class, two devices on worker-1, and a one-device template, all of a driver of their own."""
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "pods-e2e"},
         "spec": {"driver": DRIVER, "nodeName": "worker-1",
                  "pool": {"name": "pods-e2e", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "acc-0"}, {"name": "acc-1"}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "pods-e2e-one", "namespace": "default"},
         "spec": {"spec": {"devices": {"requests": [{"name": "acc", "exactly": {"deviceClassName": DRIVER}}]}}}},
    ]


def _pod_spec(template: str) -> dict[str, Any]:
    return {"resourceClaims": [{"name": "acc", "resourceClaimTemplateName": template}],
            "containers": [{"name": "c", "image": "registry.example.com/app:1",
                            "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "acc"}]}}]}


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": _pod_spec("pods-e2e-one")}}}


def _pod(name: str, template: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": _pod_spec(template)}


def _feasibility(sb: Sandbox, obj: dict[str, Any], *flags: str) -> list[str]:
    r = sb.kubectl("apply", *flags, "-f", "-", input=json.dumps(obj))
    assert r.returncode == 0, f"feasibility must never deny: {r.stderr}"
    return [w for w in warnings_of(r.stderr) if w.startswith("feasibility:")]


@pytest.fixture
def devices(sandbox: Sandbox) -> Any:
    objs = _objects()
    sandbox.must("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    deadline = time.monotonic() + 10  # until the webhook's watch has the slice: a 2-replica Deployment fits
    while got := _feasibility(sandbox, _deployment("pods-e2e-probe", 2), "--dry-run=server"):
        assert time.monotonic() < deadline, f"the webhook never saw the e2e devices: {got}"
        time.sleep(0.2)
    yield
    for o in reversed(objs):
        sandbox.kubectl("delete", o["kind"].lower(), o["metadata"]["name"], "-n", "default", "--ignore-not-found")


def test_a_deployment_dry_run_says_how_many_replicas_fit(sandbox: Sandbox, devices: Any) -> None:
    got = _feasibility(sandbox, _deployment("pods-e2e-web", 4), "--dry-run=server")
    assert got[0] == ("feasibility: 2 of 4 replicas can be placed now; the 3rd: 0/2 nodes are available: "
                      "2 cannot allocate all claims"), got
    assert any("pods-e2e-web-2-acc" in w and "already in use" in w for w in got[1:]), got


def test_a_real_deployment_write_never_reaches_the_workloads_webhook(sandbox: Sandbox, devices: Any) -> None:
    try:
        assert _feasibility(sandbox, _deployment("pods-e2e-real", 4)) == []
    finally:
        sandbox.kubectl("delete", "deployment", "pods-e2e-real", "-n", "default", "--ignore-not-found")


@pytest.mark.parametrize(("template", "want"), [
    pytest.param("pods-e2e-one", [], id="fits"),
    pytest.param("pods-e2e-missing", [
        "feasibility: the pod cannot be placed now: template default/pods-e2e-missing not found"],
        id="missing-template-named"),
])
def test_a_pod_dry_run_says_whether_it_can_be_placed(sandbox: Sandbox, devices: Any, template: str,
                                                     want: list[str]) -> None:
    assert _feasibility(sandbox, _pod("pods-e2e-pod", template), "--dry-run=server") == want
