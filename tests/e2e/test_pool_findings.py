"""Findings through the real apiserver: a slice whose pool, as the apiserver holds it plus this
slice, has a problem, and a standard attribute out of its format, get `pool:` / `attribute:`
warnings on `kubectl create --dry-run=server` (the apiserver itself admits both)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DRIVER = "pool-e2e.example.com"
WATCH_SECONDS = 5.0


def _slice(name: str, device: str, **attrs: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": "worker-1",
                     "pool": {"name": "pool-e2e", "generation": 1, "resourceSliceCount": 2},
                     "devices": [{"name": device, "attributes": attrs}]}}


def _warnings(sb: Sandbox, obj: dict[str, Any]) -> list[str]:
    r = sb.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode == 0, f"findings never deny: {r.stderr}"
    return [w for w in warnings_of(r.stderr) if w.startswith(("pool:", "attribute:"))]


def test_the_webhook_warns_about_the_pool_a_slice_joins(sandbox: Sandbox) -> None:
    sb = sandbox
    first = _slice("pool-e2e-0", "gpu-0")
    assert _warnings(sb, first) == []  # the first slice of two: a publish under way
    sb.must("create", "-f", "-", input=json.dumps(first))
    try:
        second = _slice("pool-e2e-1", "gpu-0")
        want = [f"pool: {DRIVER}/pool-e2e: device gpu-0 is defined twice (pool-e2e-0, pool-e2e-1)"]
        deadline = time.monotonic() + WATCH_SECONDS  # the webhook's watch sees the first slice
        while _warnings(sb, second) != want and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _warnings(sb, second) == want
        assert _warnings(sb, _slice("pool-e2e-1", "gpu-1")) == []
        numa = _slice("pool-e2e-1", "gpu-1", **{"resource.kubernetes.io/numaNode": {"int": -1}})
        (got,) = _warnings(sb, numa)
        assert got.startswith("attribute: spec.devices[0].attributes[resource.kubernetes.io/numaNode]: -1 is not")
    finally:
        sb.kubectl("delete", "resourceslice", "pool-e2e-0", "--ignore-not-found")
