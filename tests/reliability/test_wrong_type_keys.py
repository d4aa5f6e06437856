"""Names of the wrong JSON type where the rules index entries by name: the pipeline answers, it
never raises (each case raised TypeError: a list is no dict key). Found by the fuzz test and by
replacing every field of the example manifests with values of other types."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.strategies import check_response
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import KNOWN, FeatureGates

ALL_ON = FeatureGates().with_overrides({n: True for n, g in KNOWN.items() if not g.locked})

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-counters"},
         "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                  "pool": {"name": "gpu-pool", "generation": 1, "resourceSliceCount": 2},
                  "sharedCounters": [{"name": ["gpu-0-memory"], "counters": {"memory": {"value": "8Gi"}}}]}}
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
         "status": {"allocation": {"devices": {"results": [
             {"request": "gpu", "driver": ["dra.example.com"], "pool": "p", "device": "d"}]}},
             "devices": [{"driver": "dra.example.com", "pool": "p", "device": "d"}]}}
WORKLOAD = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"compositePodGroupTemplates": [{"name": ["a"], "podGroupTemplates": []}],
                     "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}}


def _review(obj: dict[str, Any], old: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    plurals = {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims", "Workload": "workloads"}
    plural = plurals[obj["kind"]]
    req = {"uid": "5e2f1a3c-0000-4000-8000-000000000001", "operation": "UPDATE",
           "kind": {"group": group, "version": version, "kind": obj["kind"]},
           "resource": {"group": group, "version": version, "resource": plural},
           "name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", ""),
           "userInfo": {"username": "test"}, "object": obj, "oldObject": old}
    if subresource:
        req["subResource"] = subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


@pytest.mark.parametrize(("obj", "subresource"), [
    pytest.param(SLICE, "", id="slice-counter-set-name-a-list-on-update"),
    pytest.param(CLAIM, "status", id="claim-allocated-driver-a-list-on-status-update"),
    pytest.param(WORKLOAD, "", id="workload-composite-template-name-a-list-on-update"),
])
@pytest.mark.parametrize("endpoint", ["validate", "mutate"])
def test_a_name_of_the_wrong_type_is_answered(obj: dict[str, Any], subresource: str, endpoint: str) -> None:
    doc = _review(copy.deepcopy(obj), copy.deepcopy(obj), subresource)
    out, _ = review(doc, Settings(gates=ALL_ON), endpoint=endpoint)
    check_response(doc, out, endpoint)
