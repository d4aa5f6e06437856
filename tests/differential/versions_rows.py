"""v1beta1 and v1beta2 objects at each place where the versions differ, with the 1.37 apiserver's answer.

One row per entry of ``webhook.versions.reporting``'s tables and per choice Go's conversion makes
(``basic`` absent or null, ``nodeName: ""``, a request with or without ``exactly`` fields and a
class). The causes are what the real apiserver answers for a CREATE in the all-on gate profile:
``tests/test_versions.py`` checks ours against them without Go, and
``tests/differential/test_versions_diff.py`` that they are the apiserver's, so a row cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REQUIRED, INVALID, NOT_SUPPORTED = "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported"
TOO_MANY, DUPLICATE, TOO_LONG = "FieldValueTooMany", "FieldValueDuplicate", "FieldValueTooLong"


@dataclass(frozen=True)
class Row:
    id: str
    obj: dict[str, Any]
    causes: set[tuple[str, str]]
    """(field, reason) of every cause; empty: allowed."""


SLICE = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
         "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                  "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}},
                                                          "capacity": {"memory": {"value": "40Gi"}}}}]}}
PARTITIONED = {**SLICE, "spec": {**SLICE["spec"], "sharedCounters": [
    {"name": "set-a", "counters": {"memory": {"value": "80Gi"}}},
    {"name": "set-b", "counters": {"memory": {"value": "80Gi"}}},
    {"name": "set-c", "counters": {"memory": {"value": "80Gi"}}}]}}
CLAIM = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}}


def device(**basic: Any) -> dict[str, Any]:
    return {**SLICE, "spec": {**SLICE["spec"], "devices": [{"name": "gpu-0", "basic": basic}]}}


def consuming(*consumptions: dict[str, Any]) -> dict[str, Any]:
    return {**PARTITIONED, "spec": {**PARTITIONED["spec"], "devices": [
        {"name": "gpu-0", "basic": {"consumesCounters": list(consumptions)}}]}}


def request(**fields: Any) -> dict[str, Any]:
    return {**CLAIM, "spec": {"devices": {"requests": [{"name": "gpu", **fields}]}}}


def template(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", **fields}]}}}}


COUNTERS = {"memory": {"value": "1Gi"}}
LONG_KEY = "a" * 63 + "/" + "b" * 33
GPU = "gpu.example.com"
ROWS: list[Row] = [
    Row("slice-valid", SLICE,
        set()),
    Row("slice-basic-null", {**SLICE, "spec": {**SLICE["spec"], "devices": [{"name": "gpu-0", "basic": None}]}},
        set()),
    Row("slice-no-basic", {**SLICE, "spec": {**SLICE["spec"], "devices": [{"name": "gpu-0"}]}},
        set()),
    Row("slice-node-name-empty-is-unset", {**SLICE, "spec": {**SLICE["spec"], "nodeName": "", "allNodes": True}},
        set()),
    Row("slice-all-nodes-false-is-unset",
        {**SLICE, "spec": {**{k: v for k, v in SLICE["spec"].items() if k != "nodeName"}, "allNodes": False}},
        {("spec", REQUIRED)}),
    Row("slice-taint-effect-unsupported", device(taints=[{"key": "k", "effect": "Bogus"}]),
        {("spec.devices[0].basic.taints[0].effect", NOT_SUPPORTED)}),
    Row("slice-taint-effect-missing", device(taints=[{"key": "k"}]),
        {("spec.devices[0].basic.taints[0].effect", REQUIRED)}),
    Row("slice-taint-key-invalid", device(taints=[{"key": "bad key", "effect": "NoSchedule"}]),
        {("spec.devices[0].taints[0].key", INVALID)}),
    Row("slice-attribute-two-values", device(attributes={"a": {"int": 1, "bool": True}}),
        {("spec.devices[0].basic.attributes[a]", INVALID)}),
    Row("slice-attribute-no-value", device(attributes={"a": {}}),
        {("spec.devices[0].basic.attributes[a]", INVALID)}),
    Row("slice-attribute-empty-list-beside-a-value", device(attributes={"a": {"int": 1, "ints": []}}),
        {("spec.devices[0].attributes[a]", INVALID), ("spec.devices[0].attributes[a].ints", INVALID)}),
    Row("slice-attribute-long-key-no-value", device(attributes={LONG_KEY: {}}),
        {("spec.devices[0].attributes", TOO_LONG),
         # the handwritten path shortens the key; the tag's does not, so neither error covers the other
         (f"spec.devices[0].attributes[{'a' * 47}...{'a' * 12}/{'b' * 33}]", INVALID),
         (f"spec.devices[0].basic.attributes[{LONG_KEY}]", INVALID)}),
    Row("slice-attribute-key-invalid", device(attributes={"bad key!!": {"string": "x"}}),
        {("spec.devices[0].attributes", INVALID)}),
    Row("slice-consumes-three-sets", consuming({"counterSet": "set-a", "counters": COUNTERS},
                                           {"counterSet": "set-b", "counters": COUNTERS},
                                           {"counterSet": "set-c", "counters": COUNTERS}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters", TOO_MANY)}),
    Row("slice-consumes-a-set-twice", consuming({"counterSet": "set-a", "counters": COUNTERS},
                                            {"counterSet": "set-a", "counters": COUNTERS}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[1]", DUPLICATE)}),
    Row("slice-counter-set-missing", consuming({"counters": COUNTERS}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].counterSet", REQUIRED)}),
    Row("slice-counter-set-invalid", consuming({"counterSet": "Set_A", "counters": COUNTERS}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].counterSet", INVALID)}),
    Row("slice-counters-missing", consuming({"counterSet": "set-a"}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].counters", REQUIRED)}),
    Row("slice-counter-name-invalid", consuming({"counterSet": "set-a", "counters": {"Memory_X": {"value": "1"}}}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].counters", INVALID)}),
    Row("slice-compatibility-groups-three", consuming({"counterSet": "set-a", "counters": COUNTERS,
                                                  "compatibilityGroups": ["a", "b", "c"]}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].compatibilityGroups", TOO_MANY)}),
    Row("slice-compatibility-group-twice", consuming({"counterSet": "set-a", "counters": COUNTERS,
                                                 "compatibilityGroups": ["a", "a"]}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].compatibilityGroups[1]", DUPLICATE)}),
    Row("slice-compatibility-group-invalid", consuming({"counterSet": "set-a", "counters": COUNTERS,
                                                   "compatibilityGroups": ["A_B"]}),
        {("spec", INVALID), ("spec.devices[0].basic.consumesCounters[0].compatibilityGroups[0]", INVALID)}),
    Row("slice-binding-conditions-five", device(bindingConditions=["a", "b", "c", "d", "e"], bindsToNode=True,
                                            bindingFailureConditions=["f"]),
        {("spec.devices[0].basic.bindingConditions", TOO_MANY)}),
    Row("slice-binding-failure-conditions-five", device(bindingConditions=["a"], bindsToNode=True,
                                                    bindingFailureConditions=["b", "c", "d", "e", "f"]),
        {("spec.devices[0].basic.bindingFailureConditions", TOO_MANY)}),
    Row("slice-node-allocatable-mapping-both", device(capacity={"memory": {"value": "40Gi"}}, nodeAllocatableResources={
        "memory": {"mapping": {"capacityKey": "memory", "deviceMultiplier": "1"}}}),
        {("spec.devices[0].basic.nodeAllocatableResources[memory].mapping", INVALID),
         ("spec.devices[0].nodeAllocatableResources[memory].mapping.capacityMultiplier", REQUIRED)}),
    Row("slice-v1beta2-taint-effect", {**device(taints=[{"key": "k", "effect": "Bogus"}]),
                                   "apiVersion": "resource.k8s.io/v1beta2", "spec": {
                                       **SLICE["spec"], "devices": [{"name": "gpu-0", "taints": [
                                           {"key": "k", "effect": "Bogus"}]}]}},
        {("spec.devices[0].taints[0].effect", NOT_SUPPORTED)}),
    Row("claim-valid", CLAIM,
        set()),
    Row("claim-no-class-with-selectors", request(selectors=[{"cel": {"expression": "true"}}]),
        {("spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("claim-no-class-exact-count-zero", request(allocationMode="ExactCount", count=0),
        {("spec.devices.requests[0].exactly.count", INVALID),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("claim-bare-request", request(),
        {("spec.devices.requests[0]", REQUIRED)}),
    Row("claim-class-beside-first-available", request(deviceClassName=GPU, firstAvailable=[
        {"name": "a", "deviceClassName": GPU}]),
        {("spec.devices.requests[0]", INVALID)}),
    Row("claim-first-available-only", request(firstAvailable=[{"name": "a", "deviceClassName": GPU}]),
        set()),
    Row("claim-mode-unsupported", request(deviceClassName=GPU, allocationMode="Some"),
        {("spec.devices.requests[0].allocationMode", NOT_SUPPORTED)}),
    Row("claim-count-negative", request(deviceClassName=GPU, count=-1),
        {("spec.devices.requests[0].exactly.count", INVALID)}),
    Row("claim-selectors-33", request(deviceClassName=GPU, selectors=[{"cel": {"expression": "true"}}] * 33),
        {("spec.devices.requests[0].selectors", TOO_MANY)}),
    Row("claim-toleration-key-invalid",
        request(deviceClassName=GPU, tolerations=[{"key": "bad key", "operator": "Exists"}]),
        {("spec.devices.requests[0].tolerations[0].key", INVALID)}),
    Row("claim-toleration-operator-unsupported",
        request(deviceClassName=GPU, tolerations=[{"key": "k", "operator": "Bogus"}]),
        {("spec.devices.requests[0].tolerations[0].operator", NOT_SUPPORTED)}),
    Row("claim-toleration-effect-unsupported",
        request(deviceClassName=GPU, tolerations=[{"key": "k", "effect": "Bogus"}]),
        {("spec.devices.requests[0].tolerations[0].effect", NOT_SUPPORTED)}),
    Row("claim-toleration-operator-defaults-without-class", request(tolerations=[{"key": "k"}]),
        {("spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("claim-derived-attribute-invalid-and-unused", request(deviceClassName=GPU, derivedAttributes=[
        {"name": "bad", "expression": "device.attributes['x'].y"}]),
        {("spec.devices.requests[0].derivedAttributes[0].name", INVALID),
         ("spec.devices.requests[0].exactly.derivedAttributes[0].name", INVALID)}),
    Row("claim-admin-access-false-makes-exactly", request(adminAccess=False),
        {("spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("claim-capacity-empty-makes-exactly", request(capacity={}),
        {("spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("claim-tolerations-empty-makes-exactly", request(tolerations=[]),
        {("spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("template-mode-unsupported", template(deviceClassName=GPU, allocationMode="Some"),
        {("spec.spec.devices.requests[0].allocationMode", NOT_SUPPORTED)}),
    Row("template-no-class", template(count=2),
        {("spec.spec.devices.requests[0].exactly.allocationMode", NOT_SUPPORTED),
         ("spec.spec.devices.requests[0].exactly.deviceClassName", REQUIRED)}),
    Row("class-v1beta1-bad-selector",
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": "1 +"}}]}},
        {("spec.selectors[0].cel.expression", INVALID)}),
]
