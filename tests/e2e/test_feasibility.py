"""Feasibility warnings follow the live state: kubectl shows them for claims, templates and
PodGroups nothing can serve, and stops showing them once the apiserver holds ResourceSlices that
make them fit (the webhook's watch sees new slices within 5 s). They never deny.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DRIVER = "e2e.example.com"
WATCH_SECONDS = 5.0


def _class() -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def _claim_spec(count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "acc", "exactly": {"deviceClassName": DRIVER, "count": count}}]}}


def _slice(devices: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "e2e-accelerators"},
            "spec": {"driver": DRIVER, "nodeName": "worker-1",
                     "pool": {"name": "e2e", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"acc-{i}"} for i in range(devices)]}}


SUBJECTS = {
    "claim": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "e2e-two", "namespace": "default"}, "spec": _claim_spec(2)},
    "template": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": "e2e-two-dry", "namespace": "default"}, "spec": {"spec": _claim_spec(2)}},
    "podgroup": {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "e2e-gang", "namespace": "default"},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                          "resourceClaims": [{"name": "acc", "resourceClaimTemplateName": "e2e-two"}]}},
}


def _feasibility(sb: Sandbox, obj: dict[str, Any]) -> list[str]:
    r = sb.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode == 0, f"feasibility must never deny: {r.stderr}"
    return [w for w in warnings_of(r.stderr) if w.startswith("feasibility:")]


def _until(predicate: Any, seconds: float) -> float | None:
    """Seconds until ``predicate()`` held, or None if it never did within ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.2)
    return None


def test_warnings_appear_and_disappear_with_the_live_slices(sandbox: Sandbox):
    sb = sandbox
    sb.must("apply", "-f", "-", input=json.dumps(_class()))
    tpl = {**SUBJECTS["template"], "metadata": {"name": "e2e-two", "namespace": "default"}}
    sb.must("apply", "-f", "-", input=json.dumps(tpl))  # the PodGroup's claims come from it
    try:
        for name, obj in SUBJECTS.items():
            assert _until(lambda o=obj: bool(_feasibility(sb, o)), WATCH_SECONDS) is not None, (
                f"{name}: no feasibility warning while no device of {DRIVER} exists")
        sb.must("create", "-f", "-", input=json.dumps(_slice(1)))  # one device: still short of two
        time.sleep(1)
        for name, obj in SUBJECTS.items():
            assert _feasibility(sb, obj), f"{name}: 1 device cannot serve a request for 2"
        sb.must("apply", "-f", "-", input=json.dumps(_slice(2)))
        for name, obj in SUBJECTS.items():
            took = _until(lambda o=obj: not _feasibility(sb, o), WATCH_SECONDS)
            assert took is not None, f"{name}: warnings still there {WATCH_SECONDS} s after the slice: " \
                                     f"{_feasibility(sb, obj)}"
    finally:
        sb.kubectl("delete", "resourceslice", "e2e-accelerators", "--ignore-not-found")
        sb.kubectl("delete", "resourceclaimtemplate", "e2e-two", "-n", "default", "--ignore-not-found")
        sb.kubectl("delete", "deviceclass", DRIVER, "--ignore-not-found")
    # And back: with the slice gone the claim cannot be served again.
    assert _until(lambda: bool(_feasibility(sb, SUBJECTS["claim"])), WATCH_SECONDS) is not None
