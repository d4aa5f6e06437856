"""The pipeline's own decisions: what runs on which endpoint, and how state trouble is reported."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from tests.builders import review
from webhook.admission.pipeline import review as run_review
from webhook.admission.response import decode_patch
from webhook.config import Settings
from webhook.state.base import ClusterSnapshot, StaticState
from webhook.state.files import from_dir

EXAMPLES = from_dir("examples/cluster")

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "too-many", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {
             "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 9}}]}}}


class SourceWithHealth(StaticState):
    """A state source with a chosen readiness and health (as the live source reports them)."""

    def __init__(self, snap: ClusterSnapshot, ready: bool = True, message: str | None = None) -> None:
        super().__init__(snap)
        self._ready, self._message = ready, message

    def ready(self) -> bool:
        return self._ready

    def health(self) -> dict[str, Any]:
        return {"ready": self._ready, "stale": self._message is not None, "message": self._message}


def warnings_of(obj, state, **kw):
    resp, _ = run_review(review(obj, **kw), Settings(), state, endpoint="validate")
    return resp["response"].get("warnings", [])


def test_infeasible_claim_gets_feasibility_warnings_and_stays_allowed():
    resp, _ = run_review(review(CLAIM), Settings(), StaticState(EXAMPLES), endpoint="validate")
    assert resp["response"]["allowed"] is True
    ws = resp["response"]["warnings"]
    assert ws and all(w.startswith("feasibility: ") for w in ws)


def test_unsynced_state_says_so_instead_of_guessing():
    assert warnings_of(CLAIM, SourceWithHealth(EXAMPLES, ready=False)) == [
        "feasibility: not checked, cluster state is not synced yet"]


def test_stale_state_is_named_in_the_warnings():
    ws = warnings_of(CLAIM, SourceWithHealth(EXAMPLES, message="state is stale (last sync 93 s ago)"))
    assert ws[0] == "feasibility: state is stale (last sync 93 s ago); the answer may be out of date"
    assert len(ws) >= 2


@pytest.mark.parametrize(("op", "dry_run", "checked"), [
    pytest.param("CREATE", False, True, id="create"),
    pytest.param("UPDATE", False, False, id="update-not-checked"),
    pytest.param("UPDATE", True, True, id="update-dry-run-checked"),
])
def test_feasibility_runs_on_create_and_on_every_dry_run(op, dry_run, checked):
    old = copy.deepcopy(CLAIM) if op == "UPDATE" else None
    _, out = run_review(review(CLAIM, op=op, old=old, dry_run=dry_run), Settings(), StaticState(EXAMPLES),
                        endpoint="validate")
    assert out.feasibility_checked is checked
    assert bool(out.feasibility) is checked


def test_no_time_left_skips_the_check_with_a_warning():
    resp, _ = run_review(review(CLAIM), Settings(), StaticState(EXAMPLES), endpoint="validate",
                         deadline=time.monotonic() + 0.1)  # below the 0.5 s margin
    assert resp["response"]["warnings"] == ["feasibility: not checked, no time left before the request deadline"]


def test_validate_never_patches_and_mutate_never_denies():
    bad = copy.deepcopy(CLAIM)
    bad["spec"]["devices"]["requests"][0]["exactly"]["count"] = -1
    v, _ = run_review(review(bad), Settings(), StaticState(EXAMPLES), endpoint="validate")
    m, _ = run_review(review(bad), Settings(), StaticState(EXAMPLES), endpoint="mutate")
    assert v["response"]["allowed"] is False and "patch" not in v["response"]
    assert m["response"]["allowed"] is True and "status" not in m["response"]


def test_review_endpoint_returns_patch_and_verdict_together():
    groups = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "generation": 1,
                                                                              "resourceSliceCount": 1},
                       "devices": [{"name": "d", "consumesCounters": [
                           {"counterSet": "c", "counters": {"m": {"value": "1"}}, "compatibilityGroups": ["x"]}]}]}}
    resp, _ = run_review(review(groups), Settings(), None, endpoint="review")
    assert resp["response"]["allowed"] is True
    assert decode_patch(resp) == [{"op": "remove", "path": "/spec/devices/0/consumesCounters/0/compatibilityGroups"}]


UNHEALTHY = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "unhealthy"},
             "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "worker-2-gpus"},
                      "taint": {"key": "example.com/unhealthy", "effect": "NoExecute"}}}
EVICTION = "feasibility: NoExecute would evict the pods of 1 allocated claim: default/training-gpu"


@pytest.mark.parametrize(("op", "dry_run", "subresource", "want"), [
    pytest.param("CREATE", False, "", [EVICTION], id="create"),
    pytest.param("CREATE", True, "", [EVICTION], id="create-dry-run"),
    pytest.param("UPDATE", False, "", [EVICTION], id="update-from-none"),
    pytest.param("UPDATE", False, "status", [], id="status-update-no-preview"),
])
def test_a_device_taint_rule_gets_the_impact_preview(op, dry_run, subresource, want):
    old = None
    if op == "UPDATE":
        old = copy.deepcopy(UNHEALTHY)
        old["spec"]["taint"]["effect"] = "None"
        old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(UNHEALTHY)
    if old is not None:
        new["metadata"]["resourceVersion"] = "1"
        if subresource:
            new["spec"] = copy.deepcopy(old["spec"])
    doc = review(new, op=op, old=old, dry_run=dry_run)
    doc["request"]["subResource"] = subresource
    resp, out = run_review(doc, Settings(), StaticState(EXAMPLES), endpoint="validate")
    assert resp["response"]["allowed"] is True
    assert resp["response"].get("warnings", []) == want
    assert out.feasibility_checked is (subresource == "")


def test_no_impact_preview_when_feasibility_is_off():
    resp, _ = run_review(review(UNHEALTHY), Settings(feasibility=False), StaticState(EXAMPLES), endpoint="validate")
    assert resp["response"].get("warnings", []) == []


class CountingState(StaticState):
    """A state source that counts how often a review reads it."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        super().__init__(snap)
        self.reads = 0

    def snapshot(self) -> ClusterSnapshot:
        self.reads += 1
        return super().snapshot()


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "training-gpu"}]}}
SLICE_OBJ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
             "spec": {"driver": "gpu.example.com", "nodeName": "n", "devices": [{"name": "d"}],
                      "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}


@pytest.mark.parametrize(("obj", "op", "endpoint", "settings", "reads"), [
    pytest.param(CLAIM, "CREATE", "mutate", Settings(), 1, id="claim-mutate-create-defaulting"),
    pytest.param(CLAIM, "CREATE", "mutate", Settings(capacity_defaulting=False), 0, id="claim-mutate-no-defaulting"),
    pytest.param(CLAIM, "UPDATE", "mutate", Settings(), 0, id="claim-mutate-update"),
    pytest.param(CLAIM, "CREATE", "validate", Settings(), 1, id="claim-validate-feasibility"),
    pytest.param(CLAIM, "CREATE", "validate", Settings(feasibility=False), 0, id="claim-validate-no-feasibility"),
    pytest.param(POD, "CREATE", "mutate", Settings(), 0, id="pod-mutate"),
    pytest.param(POD, "CREATE", "validate", Settings(feasibility=False), 1, id="pod-validate-state-notes"),
    pytest.param(SLICE_OBJ, "CREATE", "mutate", Settings(), 0, id="slice-mutate"),
    pytest.param(SLICE_OBJ, "CREATE", "validate", Settings(), 1, id="slice-validate-pool-lint"),
    pytest.param(CLAIM, "CREATE", "review", Settings(feasibility=False), 1, id="claim-review-defaulting"),
])
def test_the_state_is_read_once_and_only_when_a_step_needs_it(obj, op, endpoint, settings, reads):
    state = CountingState(EXAMPLES)
    old = copy.deepcopy(obj) if op == "UPDATE" else None
    run_review(review(obj, op=op, old=old), settings, state, endpoint=endpoint)
    assert state.reads == reads
