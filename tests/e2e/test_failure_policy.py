"""Failure policy and deadlines through the real apiserver.

- The webhook stopped, `failurePolicy: Fail`: the apiserver refuses the write with its own error.
- The webhook stopped, `failurePolicy: Ignore`: the write is admitted.
- `timeoutSeconds: 1` and a claim whose feasibility search is exponential: the answer arrives
  within the apiserver's timeout and says feasibility was not checked in time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DRIVER = "slow.example.com"
SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "e2e-plain"},
         "spec": {"driver": "plain.example.com", "nodeName": "worker-1",
                  "pool": {"name": "plain", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "d0"}]}}


def _slow_state() -> list[dict[str, Any]]:
    """128 devices whose attribute `x` takes 31 values: 32 distinct ones do not exist, and a
    depth-first search only finds that out by trying every combination."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}}
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
           "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}
    big = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "e2e-big"},
           "spec": {"driver": DRIVER, "nodeName": "worker-1",
                    "pool": {"name": "big", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"gpu-{i}", "attributes": {"x": {"int": i % 31}}} for i in range(128)]}}
    return [node, cls, big]


SLOW_CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "e2e-distinct-32", "namespace": "default"},
              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRIVER, "count": 32}}],
                                   "constraints": [{"requests": ["r"], "distinctAttribute": f"{DRIVER}/x"}]}}}


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("failure-policy"), load_examples=False)
    yield sb
    sb.stop()


def _register(sb: Sandbox, policy: str, timeout: int = 5) -> None:
    sb.register({"webhooks": {"timeoutSeconds": timeout, "validating": {"failurePolicy": policy},
                              "mutating": {"failurePolicy": policy}}})


def _dry_run(sb: Sandbox, obj: dict[str, Any]) -> Any:
    return sb.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_stopped_webhook_and_the_failure_policy(rig: Sandbox, policy: str):
    assert rig.webhook is not None
    _register(rig, policy)
    rig.webhook.stop()
    try:
        time.sleep(0.5)  # the configuration is already active (register waited for it)
        r = _dry_run(rig, SLICE)
        if policy == "Fail":
            assert r.returncode != 0
            assert 'failed calling webhook "mutate.dra-webhook.io"' in r.stderr or \
                   'failed calling webhook "validate.dra-webhook.io"' in r.stderr, r.stderr
            assert "connection refused" in r.stderr, r.stderr
        else:
            assert r.returncode == 0, r.stderr
    finally:
        rig.webhook.start()
        _register(rig, "Fail")


def test_slow_feasibility_is_cut_short_within_the_configured_timeout(rig: Sandbox):
    rig.must("apply", "-f", "-", input="\n---\n".join(json.dumps(o) for o in _slow_state()))
    _register(rig, "Fail", timeout=1)
    try:
        deadline = time.monotonic() + 10  # until the webhook's watch has the big slice
        while True:
            r = _dry_run(rig, SLOW_CLAIM)
            feas = [w for w in warnings_of(r.stderr) if w.startswith("feasibility:")]
            if any("cut short" in w for w in feas) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        # With failurePolicy Fail, an answer later than timeoutSeconds would make the apiserver
        # refuse the request itself: success is the apiserver's own proof that we were in time.
        assert r.returncode == 0, f"the apiserver timed out or refused: {r.stderr}"
        assert any("cut short" in w for w in feas), feas
    finally:
        _register(rig, "Fail")
        rig.kubectl("delete", "resourceslice", "e2e-big", "--ignore-not-found")
