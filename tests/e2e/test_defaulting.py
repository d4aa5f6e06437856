"""Capacity defaulting end to end: the real apiserver applies the patch from /mutate, stores an
object that passes its own validation, and the stored claim's capacity requests are explicit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

# eth1 (examples/cluster, pool net-pool): shareable, bandwidth 10G, requestPolicy default 1M,
# validRange min 1M step 8. The selector keeps the class's other, non-shareable devices out.
ETH1 = ('"name" in device.attributes["dra.example.com"] && '
        'device.attributes["dra.example.com"].name == "eth1"')


def _request(name: str, capacity: dict[str, str] | None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "resource.example.com", "selectors": [{"cel": {"expression": ETH1}}]}
    if capacity is not None:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


def test_stored_claim_has_explicit_capacity_requests(sandbox: Sandbox):
    sb = sandbox
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "e2e-bandwidth", "namespace": "default"},
             "spec": {"devices": {"requests": [_request("omitted", None),
                                               _request("unaligned", {"bandwidth": "1000001"})]}}}
    r = sb.kubectl("create", "-f", "-", input=json.dumps(claim))
    try:
        assert r.returncode == 0, r.stderr
        assert "capacity bandwidth 1000001 rounds up to 1000008 (step 8)" in warnings_of(r.stderr)
        stored = json.loads(sb.must("get", "resourceclaim", "e2e-bandwidth", "-n", "default", "-o", "json"))
        got = {q["name"]: q["exactly"].get("capacity") for q in stored["spec"]["devices"]["requests"]}
        assert got == {"omitted": {"requests": {"bandwidth": "1M"}},
                       "unaligned": {"requests": {"bandwidth": "1000008"}}}
        # What was stored passes the apiserver's own validation again: a no-op server-side apply.
        again = sb.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-",
                           input=json.dumps({k: stored[k] for k in ("apiVersion", "kind", "spec")} |
                                            {"metadata": {"name": "e2e-bandwidth", "namespace": "default"}}))
        assert again.returncode == 0, again.stderr
    finally:
        sb.kubectl("delete", "resourceclaim", "e2e-bandwidth", "-n", "default", "--ignore-not-found")


def test_opted_out_claim_is_stored_as_written(sandbox: Sandbox):
    sb = sandbox
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "e2e-opt-out", "namespace": "default",
                          "annotations": {"dra-webhook.io/capacity-defaulting": "off"}},
             "spec": {"devices": {"requests": [_request("omitted", None)]}}}
    r = sb.kubectl("create", "-f", "-", input=json.dumps(claim))
    try:
        assert r.returncode == 0, r.stderr
        stored = json.loads(sb.must("get", "resourceclaim", "e2e-opt-out", "-n", "default", "-o", "json"))
        assert "capacity" not in stored["spec"]["devices"]["requests"][0]["exactly"]
    finally:
        sb.kubectl("delete", "resourceclaim", "e2e-opt-out", "-n", "default", "--ignore-not-found")
