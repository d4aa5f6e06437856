"""The issue's `null` list items and map values, each as the real 1.37 apiserver judges it: a null
item is the zero value of its type, defaulted and validated (`webhook/admission/decode.py`).

Each row holds upstream's answer as `kubectl create --dry-run=server` gave it; without Go the rows
check `dra-webhook review` against those answers, with Go the apiserver is asked again.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.differential.compare import compare
from tests.differential.oracle import ApiOracle
from tests.differential.ours import our_verdict
from tests.differential.profiles import profiles

SLICE: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                         "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                                  "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}}
CLAIM: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "c", "namespace": "default"},
                         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
CLASS: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "d"},
                         "spec": {}}
EXACTLY = ("spec", "devices", "requests", 0, "exactly")


def at(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    node: Any = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


def _selector_slice() -> dict[str, Any]:
    s = at(SLICE, ("spec", "devices"), [{"name": "d"}])
    del s["spec"]["nodeName"]
    s["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "In", "values": [None]}]}]}
    return s


NAME = "spec.devices[0].name"
#: (object, upstream's causes as (field, reason); [] when it admits it, stored: what it stores there)
ROWS = [
    pytest.param(at(SLICE, ("spec", "devices"), [None]), {(NAME, "FieldValueInvalid")}, id="slice-devices"),
    pytest.param(at(SLICE, ("spec", "devices"), [{"name": "d", "consumesCounters": [None]}]),
                 {("spec.devices[0].consumesCounters[0].counterSet", "FieldValueRequired"),
                  ("spec.devices[0].consumesCounters[0].counters", "FieldValueRequired")},
                 id="slice-consumes-counters"),
    pytest.param(at(SLICE, ("spec", "sharedCounters"), [None]),
                 {("spec.sharedCounters[0].name", "FieldValueRequired"),
                  ("spec.sharedCounters[0].counters", "FieldValueRequired")}, id="slice-shared-counters"),
    pytest.param(at(CLAIM, ("spec", "devices", "constraints"), [None]),
                 {("spec.devices.constraints[0]", "FieldValueRequired")}, id="claim-constraints"),
    pytest.param(at(CLAIM, ("spec", "devices", "config"), [None]),
                 {("spec.devices.config[0].opaque", "FieldValueRequired")}, id="claim-config"),
    pytest.param(at(CLASS, ("spec", "config"), [None]), {("spec.config[0].opaque", "FieldValueRequired")},
                 id="class-config"),
    pytest.param(at(CLAIM, (*EXACTLY, "tolerations"), [None]), set(), id="claim-tolerations"),
    pytest.param(at(CLAIM, (*EXACTLY, "capacity"), {"requests": {"memory": None}}), set(), id="claim-capacity"),
    pytest.param(_selector_slice(), set(), id="slice-node-selector-values"),
    pytest.param(at(CLAIM, ("spec", "devices", "requests"), [None]),
                 {("spec.devices.requests[0].name", "FieldValueInvalid"),
                  ("spec.devices.requests[0]", "FieldValueRequired")}, id="claim-requests"),
]
#: What upstream stores for the rows it admits (the part that a null item became).
STORED = {
    "claim-tolerations": ((*EXACTLY[1:], "tolerations"), [{"operator": "Equal"}]),
    "claim-capacity": ((*EXACTLY[1:], "capacity"), {"requests": {"memory": "0"}}),
    "slice-node-selector-values": (("nodeSelector", "nodeSelectorTerms", 0, "matchExpressions", 0, "values"), [""]),
}


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


@pytest.mark.parametrize(("obj", "causes"), ROWS)
def test_review_reads_null_items_as_the_apiserver(request: pytest.FixtureRequest, obj: dict[str, Any],
                                                  causes: set[tuple[str, str]]) -> None:
    ours = our_verdict(obj, {})
    assert ours.causes == causes
    assert ours.allowed == (not causes)
    case = request.node.callspec.id
    if case in STORED:
        path, want = STORED[case]
        assert ours.stored is not None and _get(ours.stored["spec"], path) == want


@pytest.mark.differential
@pytest.mark.parametrize(("obj", "causes"), ROWS)
def test_the_apiserver_still_answers_so(api_oracle: ApiOracle, request: pytest.FixtureRequest,
                                        obj: dict[str, Any], causes: set[tuple[str, str]]) -> None:
    (up,) = api_oracle.create_many([("defaults", obj)])
    assert up.causes == causes
    case = request.node.callspec.id
    if case in STORED:
        path, want = STORED[case]
        assert up.stored is not None and _get(up.stored["spec"], path) == want
    assert compare(case, "defaults", obj, our_verdict(obj, profiles()["defaults"]), up) is None
