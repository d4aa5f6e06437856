"""The apiserver's decoding step for `review`: what it refuses before validation, and how it says so.

Each row was checked against the real 1.37 apiserver by the differential tests (strict field
validation as kubectl asks for it); they run here without Go.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.admission.decode import check, decode

SLICE: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                                  "pool": {"name": "p", "resourceSliceCount": 1},
                                  "devices": [{"name": "d", "capacity": {"memory": {"value": "1Gi"}}}]}}
SLICE_V1BETA1: dict[str, Any] = {**SLICE, "apiVersion": "resource.k8s.io/v1beta1",
                                  "spec": {**SLICE["spec"], "devices": [{"name": "d", "basic": {
                                      "capacity": {"memory": {"value": "1Gi"}}}}]}}
PODGROUP: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                            "metadata": {"name": "g", "namespace": "default"},
                            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


def edit(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy with ``value`` at a dotted ``path`` (list indices as numbers)."""
    out = copy.deepcopy(base)
    node: Any = out
    *parents, last = path.split(".")
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    node[int(last) if isinstance(node, list) else last] = value
    return out


@pytest.mark.parametrize("obj", [
    pytest.param(SLICE, id="valid-slice"),
    pytest.param(PODGROUP, id="valid-podgroup"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.value", 1024), id="number-quantity-decodes"),
    pytest.param(edit(SLICE, "spec.nodeName", None), id="null-is-the-zero-value"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
                 id="kinds-we-do-not-decode-pass"),
    pytest.param({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceSlice", "whatever": 1},
                 id="unserved-version-passes"),
    pytest.param(edit(SLICE_V1BETA1, "spec.devices.0.basic.attributes", {"a": {"int": 1}}), id="v1beta1-basic-device"),
    pytest.param({**SLICE, "apiVersion": "resource.k8s.io/v1beta2"}, id="v1beta2-has-v1s-shape"),
    pytest.param(edit(PODGROUP, "metadata.creationTimestamp", "2026-01-02T03:04:05Z"), id="rfc3339-time"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.value", "Gi"), id="quantity-without-digits-is-zero"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.value", " 2Gi "), id="quantity-spaces-trimmed"),
    pytest.param(edit(SLICE, "spec.pool.generation", 2**63 - 1), id="int64-max"),
])
def test_decodable(obj: dict[str, Any]):
    assert check(obj) is None


@pytest.mark.parametrize(("obj", "strict", "text"), [
    pytest.param(edit(PODGROUP, "spec.podGroupTemplateRef", {"workload": {"workloadName": "w"}}), True,
                 'PodGroup in version "v1beta1" cannot be handled as a PodGroup: strict decoding error: '
                 'unknown field "spec.podGroupTemplateRef"', id="seed-v1alpha2-spelling"),
    pytest.param(edit(SLICE, "spec.Driver", "x"), True, 'unknown field "spec.Driver"', id="names-are-case-sensitive"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.extra", 1), True,
                 'unknown field "spec.devices[0].capacity[memory].extra"', id="unknown-inside-map-value"),
    pytest.param(edit(PODGROUP, "spec.resourceClaims", "c"), False,
                 "spec.resourceClaims: cannot decode a JSON string as a list", id="string-for-list"),
    pytest.param(edit(PODGROUP, "spec.schedulingPolicy.gang.minCount", 1.5), False,
                 "spec.schedulingPolicy.gang.minCount: cannot decode a JSON number as an integer",
                 id="fraction-for-integer"),
    pytest.param(edit(PODGROUP, "spec.schedulingPolicy.gang.minCount", True), False,
                 "cannot decode a JSON boolean as an integer", id="bool-for-integer"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.value", "1 Gi x"), False,
                 "spec.devices[0].capacity[memory].value: quantities must match the regular expression",
                 id="malformed-quantity"),
    pytest.param(edit(PODGROUP, "metadata.creationTimestamp", "yesterday"), False,
                 "metadata.creationTimestamp: 'yesterday' is not an RFC 3339 time", id="malformed-time"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity.memory.value", "\t2Gi"), False,
                 "spec.devices[0].capacity[memory].value: quantities must match", id="quantity-tab-is-escaped"),
    pytest.param(edit(SLICE, "spec.pool.generation", 2**63), False,
                 "spec.pool.generation: cannot decode a JSON number as an integer", id="integer-past-int64"),
    pytest.param(edit(SLICE, "spec.devices.0.attributes", {"a": {"int": -(2**63) - 1}}), False,
                 "cannot decode a JSON number as an integer", id="integer-below-int64"),
    pytest.param({**SLICE, "apiVersion": "resource.k8s.io/v1beta1"}, True,
                 'ResourceSlice in version "v1beta1" cannot be handled as a ResourceSlice: strict decoding error: '
                 'unknown field "spec.devices[0].capacity"', id="v1-device-sent-as-v1beta1"),
    pytest.param({**SLICE_V1BETA1, "apiVersion": "resource.k8s.io/v1"}, True,
                 'unknown field "spec.devices[0].basic"', id="v1beta1-device-sent-as-v1"),
    pytest.param(edit(edit(SLICE, "spec.pool", "p"), "spec.bogus", 1), False,
                 "spec.pool: cannot decode a JSON string as an object", id="type-errors-come-before-unknown-fields"),
])
def test_refused(obj: dict[str, Any], strict: bool, text: str):
    err = check(obj)
    assert err is not None
    assert err.strict is strict
    assert text in err.message
    assert err.message.startswith(f'{obj["kind"]} in version "')


def test_an_earlier_spelling_gets_a_hint():
    err = check(edit(PODGROUP, "spec.podGroupTemplateRef", {"workload": {"workloadName": "w"}}))
    assert err is not None and err.hints == (
        "spec.podGroupTemplateRef is the v1alpha2 spelling: scheduling.k8s.io/v1beta1 has "
        "spec.workloadRef {workloadName, templateName}",)
    other = check(edit(PODGROUP, "spec.bogus", 1))
    assert other is not None and other.hints == ()


# --- null list items and map values: the Go zero value of the item's type ---------------------

CLAIM: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "c", "namespace": "default"},
                         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}
EXACTLY = "spec.devices.requests.0.exactly"


@pytest.mark.parametrize(("obj", "path", "want"), [
    pytest.param(edit(SLICE, "spec.devices", [None]), "spec.devices", [{}], id="struct-item-is-empty-struct"),
    pytest.param(edit(SLICE, "spec.devices.0.capacity", {"memory": None}), "spec.devices.0.capacity",
                 {"memory": {}}, id="struct-map-value-is-empty-struct"),
    pytest.param(edit(CLAIM, f"{EXACTLY}.capacity", {"requests": {"memory": None}}), f"{EXACTLY}.capacity",
                 {"requests": {"memory": "0"}}, id="quantity-map-value-is-zero"),
    pytest.param(edit(CLAIM, f"{EXACTLY}.tolerations", [None, {"key": "k"}]), f"{EXACTLY}.tolerations",
                 [{}, {"key": "k"}], id="only-the-null-item-changes"),
    pytest.param(edit(SLICE, "spec.devices.0.allowMultipleAllocations", None), "spec.devices.0",
                 {"name": "d", "capacity": {"memory": {"value": "1Gi"}}, "allowMultipleAllocations": None},
                 id="a-null-member-stays-absent"),
    pytest.param(edit(PODGROUP, "metadata.finalizers", [None]), "metadata.finalizers", [""],
                 id="string-item-is-empty-string"),
    pytest.param(edit(PODGROUP, "metadata.labels", {"a": None}), "metadata.labels", {"a": ""},
                 id="string-map-value-is-empty-string"),
])
def test_null_items_decode_to_zero_values(obj: dict[str, Any], path: str, want: Any):
    got = decode(obj)
    assert got.failure is None
    node: Any = got.obj
    for p in path.split("."):
        node = node[int(p)] if isinstance(node, list) else node[p]
    assert node == want


def test_decoding_never_changes_the_input():
    obj = edit(SLICE, "spec.devices", [None])
    before = copy.deepcopy(obj)
    held = decode(obj).obj
    assert obj == before
    assert held is not obj and held["metadata"] is obj["metadata"]  # copied only where it changed
    assert decode(SLICE).obj is SLICE
