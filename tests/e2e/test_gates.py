"""Gate matrix, end to end: apiserver gate on/off x webhook gate on/off, for the gated fields of the
seed examples (`DRADeviceCompatibilityGroups`, `DRAConsumableCapacity`, `DRAWorkloadResourceClaims`).

For each combination the objects are created for real and read back. A gated field is stored
only when both gates are on: with the webhook's gate off our /mutate strips it and says so in a
warning naming the gate; with only the apiserver's gate off the apiserver drops it on write
itself. Then ratcheting: an apiserver restarted with the gate off, and a webhook with it off,
keep the groups of a stored slice on UPDATE because the old object already uses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import REPO, warnings_of
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

SEEDS = REPO / "examples" / "seeds"
GATES = ("DRADeviceCompatibilityGroups", "DRAConsumableCapacity", "DRAWorkloadResourceClaims")
ON = dict.fromkeys(GATES, True)
OFF = dict.fromkeys(GATES, False)


def _seed(name: str, kind: str) -> dict[str, Any]:
    """The seed file's object of ``kind`` (for slices: the one with devices)."""
    (doc,) = [d for d in yaml.safe_load_all((SEEDS / name).read_text())
              if d and d["kind"] == kind and (kind != "ResourceSlice" or "devices" in d["spec"])]
    return doc


def _groups(obj: dict[str, Any]) -> list[Any]:
    return [cc.get("compatibilityGroups") for d in obj["spec"]["devices"] for cc in d.get("consumesCounters", [])]


def _has_groups(obj: dict[str, Any]) -> bool:
    return any(_groups(obj))


def _has_consumable(obj: dict[str, Any]) -> bool:
    dev = obj["spec"]["devices"][0]
    return "allowMultipleAllocations" in dev or "requestPolicy" in dev["capacity"]["bandwidth"]


def _has_claim_capacity(obj: dict[str, Any]) -> bool:
    return "capacity" in obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def _has_pg_claims(obj: dict[str, Any]) -> bool:
    return bool(obj["spec"].get("resourceClaims"))


# (id, seed file, kind, gate, "is the gated field stored?")
CASES: list[tuple[str, str, str, str, Callable[[dict[str, Any]], bool]]] = [
    ("compatibility-groups", "seed-000-resourceslice-compatibility-groups.yaml", "ResourceSlice",
     "DRADeviceCompatibilityGroups", _has_groups),
    ("consumable-capacity-slice", "seed-000-resourceslice-consumable-capacity.yaml", "ResourceSlice",
     "DRAConsumableCapacity", _has_consumable),
    ("consumable-capacity-template", "seed-000-resourceclaimtemplate-bandwidth.yaml", "ResourceClaimTemplate",
     "DRAConsumableCapacity", _has_claim_capacity),
    ("workload-resource-claims", "seed-003-podgroup-resourceclaims.yaml", "PodGroup",
     "DRAWorkloadResourceClaims", _has_pg_claims),
]
# Fewest restarts: the webhook toggles, then the apiserver, then the webhook again.
COMBOS = [(True, True), (True, False), (False, False), (False, True)]

_PLURAL = {"ResourceSlice": "resourceslices", "ResourceClaimTemplate": "resourceclaimtemplates",
           "PodGroup": "podgroups.scheduling.k8s.io"}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("gates"), ON, load_examples=False)
    yield sb
    sb.stop()


def _switch(sb: Sandbox, api_on: bool, webhook_on: bool) -> None:
    want_api, want_wh = {**sb.gates, **(ON if api_on else OFF)}, {**sb.gates, **(ON if webhook_on else OFF)}
    assert sb.webhook is not None
    if sb.api.gates != want_api:
        sb.api.restart(want_api)
    if sb.webhook.gates != want_wh:
        sb.webhook.restart(want_wh)
    sb.wait_webhook_active()


def _create(sb: Sandbox, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    r = sb.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj))
    assert r.returncode == 0, r.stderr
    kind, meta = obj["kind"], obj["metadata"]
    ns = ["-n", meta["namespace"]] if meta.get("namespace") else []
    stored = json.loads(sb.must("get", _PLURAL[kind], meta["name"], *ns, "-o", "json"))
    return stored, warnings_of(r.stderr)


@pytest.mark.parametrize(("api_on", "webhook_on"), COMBOS,
                         ids=[f"apiserver-{'on' if a else 'off'}-webhook-{'on' if w else 'off'}" for a, w in COMBOS])
def test_stored_objects_and_warnings(matrix: Sandbox, api_on: bool, webhook_on: bool):
    _switch(matrix, api_on, webhook_on)
    tag = f"{'on' if api_on else 'off'}-{'on' if webhook_on else 'off'}"
    for cid, seed, kind, gate, stored_has in CASES:
        obj = _seed(seed, kind)
        obj["metadata"]["name"] = f"{obj['metadata']['name']}-{tag}"
        if kind != "ResourceSlice":
            obj["metadata"]["namespace"] = "default"
        stored, warnings = _create(matrix, obj)
        assert stored_has(stored) == (api_on and webhook_on), f"{cid}: stored {stored['spec']}"
        strip = [w for w in warnings if w.startswith(f"{gate} is off: removed")]
        assert bool(strip) == (not webhook_on), f"{cid}: warnings {warnings}"


def test_stored_groups_survive_an_update_with_the_gate_off_everywhere(matrix: Sandbox):
    _switch(matrix, True, True)
    obj = _seed("seed-000-resourceslice-compatibility-groups.yaml", "ResourceSlice")
    obj["metadata"]["name"] = "ratchet-devices"
    stored, _ = _create(matrix, obj)
    before = _groups(stored)
    assert any(before)
    _switch(matrix, False, False)
    patch = [{"op": "add", "path": "/spec/devices/0/attributes", "value": {"model": {"string": "a100"}}}]
    r = matrix.kubectl("patch", "resourceslice", "ratchet-devices", "--type=json", "-p", json.dumps(patch))
    assert r.returncode == 0, r.stderr
    assert not [w for w in warnings_of(r.stderr) if "removed" in w], r.stderr
    after = json.loads(matrix.must("get", "resourceslice", "ratchet-devices", "-o", "json"))
    assert after["spec"]["devices"][0]["attributes"] == {"model": {"string": "a100"}}
    assert _groups(after) == before, "the groups the stored slice used must be kept on UPDATE"
    # A new slice written now loses them: the gate is off and nothing old uses them.
    fresh = {**obj, "metadata": {"name": "ratchet-fresh"}}
    stored_fresh, warnings = _create(matrix, fresh)
    assert not _has_groups(stored_fresh)
    assert any(w.startswith("DRADeviceCompatibilityGroups is off: removed") for w in warnings)
