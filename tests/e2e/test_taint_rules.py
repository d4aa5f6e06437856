"""DeviceTaintRules and DeviceClasses through the real apiserver: the chart routes both kinds to
the webhook, the impact preview answers `kubectl create --dry-run=server`, and the webhook's live
state follows rules (a claim's feasibility warning names a rule created a moment before).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import warnings_of
from tests.e2e.test_feasibility import WATCH_SECONDS, _until
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

DRIVER = "taint-e2e.example.com"
V1 = "resource.k8s.io/v1"


def _class(selector: str = f'device.driver == "{DRIVER}"') -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": selector}}]}}


def _claim(name: str, count: int) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "acc", "exactly": {"deviceClassName": DRIVER,
                                                                            "count": count}}]}}}


def _rule(selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": V1, "kind": "DeviceTaintRule", "metadata": {"name": "taint-e2e-maintenance"}, "spec": spec}


SLICE = {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "taint-e2e"},
         "spec": {"driver": DRIVER, "nodeName": "worker-1", "pool": {"name": "taint-e2e", "generation": 1,
                                                                       "resourceSliceCount": 1},
                  "devices": [{"name": "acc-0"}, {"name": "acc-1"}]}}


def _warnings(sb: Sandbox, obj: dict[str, Any]) -> list[str]:
    r = sb.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(obj))
    assert r.returncode == 0, f"never a denial: {r.stderr}"
    return warnings_of(r.stderr)


def test_rules_and_classes_reach_the_webhook_and_get_the_impact_preview(sandbox: Sandbox):
    sb = sandbox
    for obj in (_class(), SLICE, _claim("taint-e2e-pending", 2)):
        sb.must("apply", "-f", "-", input=json.dumps(obj))
    on_acc_0 = _rule({"driver": DRIVER, "device": "acc-0"})
    preview = "feasibility: 1 pending claim would no longer fit: default/taint-e2e-pending"
    try:
        # Routed: only the webhook says a rule without a selector selects nothing.
        assert "spec.deviceSelector is not set: this DeviceTaintRule selects no device" in _warnings(sb, _rule())
        # The preview needs the slice and the pending claim in the webhook's live state.
        assert _until(lambda: preview in _warnings(sb, on_acc_0), WATCH_SECONDS) is not None, \
            _warnings(sb, on_acc_0)
        narrowed = _class(f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "x"')
        r = sb.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(narrowed))
        assert r.returncode == 0 and preview in warnings_of(r.stderr), r.stderr
        # The live state follows rules: once stored, the rule shows in a claim's feasibility.
        sb.must("create", "-f", "-", input=json.dumps(_rule({"driver": DRIVER})))
        # (long names are shortened in the middle to keep the warning within 120 characters)
        assert _until(lambda: any("of DeviceTaintRule taint" in w and "on acc-0" in w
                                  for w in _warnings(sb, _claim("taint-e2e-one", 1))),
                      WATCH_SECONDS) is not None, _warnings(sb, _claim("taint-e2e-one", 1))
    finally:
        sb.kubectl("delete", "devicetaintrule", "taint-e2e-maintenance", "--ignore-not-found")
        sb.kubectl("delete", "resourceclaim", "taint-e2e-pending", "-n", "default", "--ignore-not-found")
        sb.kubectl("delete", "resourceslice", "taint-e2e", "--ignore-not-found")
        sb.kubectl("delete", "deviceclass", DRIVER, "--ignore-not-found")
