"""Denials through the real apiserver: where the webhook denies, kubectl prints the apiserver-style
`Invalid` message with our field causes (and the same object passes with the webhook unregistered).

The webhook's gates are stricter than the apiserver's here: the apiserver runs with
DRAFractionalCapacityRange on, the webhook with it off (the 1.37 default), so a requestPolicy
whose range is only on its step in milli-units is valid for the apiserver and refused by us, as
an apiserver with the gate off refuses it (its values are rounded up to integers first). Gated
scheduling fields are no case for this test: with their gates off the apiserver drops them, and
so do we (tests/e2e/test_gates.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

FRACTIONAL = "DRAFractionalCapacityRange"


def _slice(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "allowMultipleAllocations": True,
                                  "capacity": {"memory": {"value": "10", "requestPolicy": policy}}}]}}


POLICY = "spec.devices[0].capacity[memory].requestPolicy"
CASES = [
    pytest.param(_slice("range-on-a-milli-step", {"default": "1250m",
                                                  "validRange": {"min": "0", "max": "2500m", "step": "1250m"}}),
                 f"{POLICY}.validRange.step", "Invalid value", id="range-max-on-a-milli-step"),
    pytest.param(_slice("whole-max-on-a-milli-step", {"default": "1500m",
                                                    "validRange": {"min": "0", "max": "3", "step": "1500m"}}),
                 f"{POLICY}.validRange.step", "Invalid value", id="whole-max-on-a-milli-step"),
]


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("denials"), {FRACTIONAL: True}, webhook_gates={FRACTIONAL: False},
                 load_examples=False)
    yield sb
    sb.stop()


@pytest.mark.parametrize(("obj", "field", "reason"), CASES)
def test_webhook_denial_reads_like_the_apiservers_own(strict: Sandbox, obj: dict[str, Any], field: str,
                                                       reason: str):
    r = strict.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode != 0, "the webhook must deny it"
    name = obj["metadata"]["name"]
    # Our 422 status travels through the apiserver unchanged, so kubectl renders it exactly as it
    # renders the apiserver's own validation errors: the message head and one line per cause.
    assert r.stderr.startswith(f'The {obj["kind"]} "{name}" is invalid: '), r.stderr
    assert f"{field}: {reason}: " in r.stderr, r.stderr
    # Without our webhook the apiserver (the gate on) accepts the same object.
    bare = strict.cluster.apiservers[0]
    strict.unregister()
    try:
        ok = bare.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
        assert ok.returncode == 0, ok.stderr
    finally:
        strict.register()
