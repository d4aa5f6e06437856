"""ResourceSlice validation (docs/rules.md, "ResourceSlice rules"): one table row per rule id, CREATE and UPDATE.

Each row asserts the exact set of (field, reason) causes the 1.37 apiserver would report.
Capacity/requestPolicy rows live in test_slice_capacity.py, strips in test_slice_mutate.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import SLICE
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.slices import resourceslice as rs

BASE: dict[str, Any] = SLICE  # the shared minimal valid slice; tests copy it before changing it


def sl(drop: tuple[str, ...] = (), **spec: Any) -> dict[str, Any]:
    o = copy.deepcopy(BASE)
    for k in drop:
        o["spec"].pop(k, None)
    o["spec"].update(copy.deepcopy(spec))
    return o


def dev(name: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def causes(errs: list[Any]) -> set[tuple[str, str]]:
    return {(e.field, e.type.value.removeprefix("FieldValue")) for e in errs}


def ctx(gates: str = "", op: str = "CREATE", old: dict[str, Any] | None = None) -> RuleContext:
    return RuleContext(FeatureGates.parse(gates), operation=op, old=old)


def check_create(o: dict[str, Any], gates: str = "") -> set[tuple[str, str]]:
    return causes(rs.validate(o, ctx(gates)))


def counters(n: int) -> dict[str, Any]:
    return {f"c{i}": {"value": "1"} for i in range(n)}


def cc(counter_set: str = "set-a", **extra: Any) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {"memory": {"value": "1Gi"}}, **extra}


#: A 97-byte attribute key: the handwritten path shortens it (47 bytes, "...", 46), the declarative one does not.
LONG_KEY = "a" * 63 + "/" + "a" * 33
LONG_KEY_SHORT = LONG_KEY[:47] + "..." + LONG_KEY[-46:]

SEL = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}

CREATE_CASES = [
    pytest.param(sl(), set(), id="minimal-valid"),
    # 1a metadata, driver, pool
    pytest.param({**sl(), "metadata": {}}, {("metadata.name", "Required")}, id="RS-META-1-missing-name"),
    pytest.param(
        {**sl(), "metadata": {"name": "Bad_Name"}}, {("metadata.name", "Invalid")}, id="RS-META-1-bad-name"
    ),
    pytest.param(sl(driver=""), {("spec.driver", "Required")}, id="RS-DRV-1-empty-required-only"),
    pytest.param(sl(driver="a" * 64), {("spec.driver", "TooLong")}, id="RS-DRV-2-too-long"),
    pytest.param(sl(driver="bad_driver!"), {("spec.driver", "Invalid")}, id="RS-DRV-3-not-subdomain"),
    pytest.param(sl(driver="GPU.Example.com"), set(), id="RS-DRV-3-uppercase-accepted"),
    pytest.param(
        sl(pool={"name": "", "resourceSliceCount": 1}),
        {("spec.pool.name", "Required")},
        id="RS-POOL-1-empty-name",
    ),
    pytest.param(
        sl(pool={"name": "a" * 254, "resourceSliceCount": 1}),
        {("spec.pool.name", "TooLong"), ("spec.pool.name", "Invalid")},
        id="RS-POOL-2-too-long",
    ),
    pytest.param(
        sl(pool={"name": "ok/Bad//x", "resourceSliceCount": 1}),
        {("spec.pool.name", "Invalid")},
        id="RS-POOL-3-bad-parts",
    ),
    pytest.param(
        sl(pool={"name": "p", "resourceSliceCount": 0}),
        {("spec.pool.resourceSliceCount", "Invalid")},
        id="RS-POOL-4-zero-count",
    ),
    pytest.param(
        sl(pool={"name": "p"}), {("spec.pool.resourceSliceCount", "Invalid")}, id="RS-POOL-4-missing-count"
    ),
    pytest.param(
        sl(pool={"name": "p", "resourceSliceCount": 1, "generation": -1}),
        {("spec.pool.generation", "Invalid")},
        id="RS-POOL-5-negative-generation",
    ),
    pytest.param(
        sl(pool={"name": "p", "resourceSliceCount": "2"}),
        {("spec.pool.resourceSliceCount", "TypeInvalid")},
        id="pool-count-wrong-type",
    ),
    # node selection
    pytest.param(
        sl(nodeName=""), {("spec.nodeName", "Invalid"), ("spec", "Required")}, id="RS-NODE-1-empty-node-name"
    ),
    pytest.param(sl(nodeName="Worker_1"), {("spec.nodeName", "Invalid")}, id="RS-NODE-2-bad-node-name"),
    pytest.param(
        sl(
            drop=("nodeName",),
            nodeSelector={
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "IN", "values": ["a"]}]}
                ]
            },
        ),
        {("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator", "Invalid")},
        id="RS-NODE-3-bad-operator",
    ),
    pytest.param(
        sl(drop=("nodeName",), nodeSelector={}),
        {
            ("spec.nodeSelector.nodeSelectorTerms", "Required"),
            ("spec.nodeSelector.nodeSelectorTerms", "Invalid"),
        },
        id="RS-NODE-4-empty-selector",
    ),
    pytest.param(
        sl(drop=("nodeName",), nodeSelector={"nodeSelectorTerms": [SEL["nodeSelectorTerms"][0]] * 2}),
        {("spec.nodeSelector.nodeSelectorTerms", "Invalid")},
        id="RS-NODE-4-two-terms",
    ),
    pytest.param(sl(drop=("nodeName",), nodeSelector=SEL), set(), id="RS-NODE-3-valid-selector"),
    pytest.param(
        sl(drop=("nodeName",), allNodes=False),
        {("spec.allNodes", "Invalid"), ("spec", "Required")},
        id="RS-NODE-5-all-nodes-false",
    ),
    pytest.param(
        sl(drop=("nodeName",), perDeviceNodeSelection=False),
        {("spec.perDeviceNodeSelection", "Invalid"), ("spec", "Required")},
        id="RS-NODE-6-per-device-false",
    ),
    pytest.param(sl(drop=("nodeName",)), {("spec", "Required")}, id="RS-NODE-7-none-set"),
    pytest.param(sl(allNodes=True), {("spec", "Invalid")}, id="RS-NODE-8-two-set"),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": counters(1)}]),
        set(),
        id="counter-only-slice-valid",
    ),
    pytest.param(
        sl(sharedCounters=[{"name": "s", "counters": counters(1)}]),
        {("spec", "Invalid")},
        id="RS-TYPE-1-both-counters-and-devices",
    ),
    pytest.param(sl(sharedCounters=[]), {("spec", "Invalid")}, id="RS-TYPE-1-empty-list-counts-as-set"),
    # 1b devices
    pytest.param(
        sl(devices=[dev(f"d{i}") for i in range(129)]), {("spec.devices", "TooMany")}, id="RS-DEV-1-129"
    ),
    pytest.param(sl(devices=[dev(f"d{i}") for i in range(128)]), set(), id="RS-DEV-1-128-ok"),
    pytest.param(
        sl(
            devices=[dev(f"d{i}") for i in range(64)]
            + [dev("x", taints=[{"key": "k", "effect": "NoSchedule"}])]
        ),
        {("spec.devices", "TooMany")},
        id="RS-DEV-1-65-with-taints",
    ),
    pytest.param(
        sl(devices=[dev(f"d{i}") for i in range(64)] + [dev("x", consumesCounters=[cc()])]),
        {("spec.devices", "TooMany")},
        id="RS-DEV-1-65-with-counters",
    ),
    pytest.param(
        sl(devices=[dev(f"d{i}") for i in range(64)] + [dev("x", attributes={"a": {"ints": [1]}})]),
        {("spec.devices", "TooMany")},
        id="RS-DEV-1-65-with-list-attribute",
    ),
    pytest.param(
        sl(devices=[dev("a"), dev("b"), dev("a")]),
        {("spec.devices[2]", "Duplicate")},
        id="RS-DEV-2-duplicate",
    ),
    pytest.param(
        sl(devices=[dev("GPU_0"), dev("")]),
        {("spec.devices[0].name", "Invalid"), ("spec.devices[1].name", "Invalid")},
        id="RS-DEV-3-bad-names",
    ),
    pytest.param(
        sl(
            devices=[
                dev(
                    attributes={f"a{i}": {"int": i} for i in range(20)},
                    capacity={f"c{i}": {"value": "1"} for i in range(13)},
                )
            ]
        ),
        {("spec.devices[0]", "Invalid")},
        id="RS-ATTR-1-33-entries",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"a": {"ints": list(range(49))}})]),
        {("spec.devices[0]", "Invalid")},
        id="RS-ATTR-2-49-values",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"1bad": {"int": 1}, "x" * 33: {"int": 1}})]),
        {("spec.devices[0].attributes", "Invalid"), ("spec.devices[0].attributes", "TooLong")},
        id="RS-QN-1-bad-identifier",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"/model": {"int": 1}, "ex.com/": {"int": 1}})]),
        {("spec.devices[0].attributes", "Invalid")},
        id="RS-QN-2-empty-domain-or-name",
    ),
    pytest.param(
        sl(devices=[dev(attributes={("d" * 64) + "/x": {"int": 1}})]),
        {("spec.devices[0].attributes", "TooLong")},
        id="RS-QN-2-domain-too-long",
    ),
    pytest.param(  # upstream checks one- and two-part names only (a TODO in its source)
        sl(devices=[dev(attributes={"a/b/c": {"int": 1}, "a//b": {"int": 2}}, capacity={"x/y/z": {"value": "1"}})]),
        set(),
        id="RS-QN-3-two-slashes-accepted",
    ),
    pytest.param(
        sl(devices=[dev(capacity={"bad key": {"value": "1"}})]),
        {("spec.devices[0].capacity", "Invalid")},
        id="RS-QN-1-capacity-key",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"a": {}, "b": {"int": 1, "bool": True}})]),
        {("spec.devices[0].attributes[a]", "Invalid"), ("spec.devices[0].attributes[b]", "Invalid")},
        id="RS-ATTR-3-zero-or-two-values",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"s": {"string": "x" * 65}, "v": {"version": "1.0.0-" + "a" * 60}})]),
        {
            ("spec.devices[0].attributes[s].string", "TooLong"),
            ("spec.devices[0].attributes[v].version", "TooLong"),
        },
        id="RS-ATTR-4-too-long",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"v": {"version": "1.0"}, "w": {"version": "1.2.3-rc.1+b.5"}})]),
        {("spec.devices[0].attributes[v].version", "Invalid")},
        id="RS-ATTR-5-semver",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"l": {"ints": []}})]),
        {("spec.devices[0].attributes[l].ints", "Invalid"), ("spec.devices[0].attributes[l]", "Invalid")},
        id="RS-ATTR-6-empty-list-sets-no-member",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"l": {"strings": ["ok", "y" * 65]}, "v": {"versions": ["1.0.0", "x"]}})]),
        {
            ("spec.devices[0].attributes[l].strings[1]", "TooLong"),
            ("spec.devices[0].attributes[v].versions[1]", "Invalid"),
        },
        id="RS-ATTR-7-list-items",
    ),
    # 1c counters
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": f"s{i}", "counters": counters(1)} for i in range(9)]),
        {("spec.sharedCounters", "TooMany")},
        id="RS-SC-1-nine-sets",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": counters(1)}] * 2),
        {("spec.sharedCounters[1]", "Duplicate")},
        id="RS-SC-2-duplicate",
    ),
    pytest.param(
        sl(
            drop=("devices",),
            sharedCounters=[{"counters": counters(1)}, {"name": "Bad", "counters": counters(1)}],
        ),
        {("spec.sharedCounters[0].name", "Required"), ("spec.sharedCounters[1].name", "Invalid")},
        id="RS-SC-3-names",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": {}}]),
        {("spec.sharedCounters[0].counters", "Required")},
        id="RS-SC-4-empty-counters",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": counters(33)}]),
        {("spec.sharedCounters[0].counters", "TooMany")},
        id="RS-SC-5-33-counters",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": {"Bad_Name": {"value": "1"}}}]),
        {("spec.sharedCounters[0].counters", "Invalid")},
        id="RS-SC-6-bad-counter-name",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": {"mem": {"value": "1_000"}}}]),
        {("spec.sharedCounters[0].counters[mem].value", "Invalid")},
        id="counter-value-unparsable",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc("a"), cc("b"), cc("c", compatibilityGroups=["X", "X"])])]),
        {("spec.devices[0].consumesCounters", "TooMany")},
        id="RS-CC-1-three-entries-short-circuit",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc("a"), cc("a")])]),
        {("spec.devices[0].consumesCounters[1]", "Duplicate")},
        id="RS-CC-2-duplicate-counter-set",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(""), cc("Bad")])]),
        {
            ("spec.devices[0].consumesCounters[0].counterSet", "Required"),
            ("spec.devices[0].consumesCounters[1].counterSet", "Invalid"),
        },
        id="RS-CC-3-counter-set-names",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[{"counterSet": "a", "counters": {}}])]),
        {("spec.devices[0].consumesCounters[0].counters", "Required")},
        id="RS-CC-4-empty-counters",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[{"counterSet": "a", "counters": counters(33)}])]),
        {("spec.devices[0].consumesCounters[0].counters", "TooMany")},
        id="RS-CC-5-33-counters",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[{"counterSet": "a", "counters": {"X": {"value": "1"}}}])]),
        {("spec.devices[0].consumesCounters[0].counters", "Invalid")},
        id="RS-CC-6-bad-counter-name",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[{"counterSet": "nowhere", "counters": {"m": {"value": "-5"}}}])]),
        set(),
        id="RS-CC-7-any-value-no-cross-check",
    ),
    # 1d compatibility groups (gate on so mutate would keep them; validate is gate-independent)
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=None), cc("b", compatibilityGroups=[])])]),
        set(),
        id="RS-CG-1-null-and-empty",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["a", "b", "Bad!"])])]),
        {("spec.devices[0].consumesCounters[0].compatibilityGroups", "TooMany")},
        id="RS-CG-2-three-groups",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["mig", "mig"])])]),
        {("spec.devices[0].consumesCounters[0].compatibilityGroups[1]", "Duplicate")},
        id="RS-CG-3-duplicate",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["MIG", "a.b"])])]),
        {
            ("spec.devices[0].consumesCounters[0].compatibilityGroups[0]", "Invalid"),
            ("spec.devices[0].consumesCounters[0].compatibilityGroups[1]", "Invalid"),
        },
        id="RS-CG-4-not-dns-label",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=[""])])]),
        {("spec.devices[0].consumesCounters[0].compatibilityGroups[0]", "Invalid")},
        id="RS-CG-4-empty-string",
    ),
    pytest.param(
        sl(
            devices=[
                dev(
                    "a",
                    consumesCounters=[
                        cc("x", compatibilityGroups=["g1"]),
                        cc("y", compatibilityGroups=["g2"]),
                    ],
                ),
                dev("b", consumesCounters=[cc("x", compatibilityGroups=["other"])]),
            ]
        ),
        set(),
        id="RS-CG-5-opaque-no-cross-checks",
    ),
    # 1f per-device node selection
    pytest.param(
        sl(drop=("nodeName",), perDeviceNodeSelection=True, devices=[dev()]),
        {("spec.devices[0]", "Required")},
        id="RS-PDN-1-device-without-node",
    ),
    pytest.param(
        sl(drop=("nodeName",), perDeviceNodeSelection=True, devices=[dev(nodeName="n1", allNodes=True)]),
        {("spec.devices[0]", "Invalid")},
        id="RS-PDN-2-two-set",
    ),
    pytest.param(
        sl(
            drop=("nodeName",),
            perDeviceNodeSelection=True,
            devices=[dev("a", nodeName=""), dev("b", allNodes=False)],
        ),
        {
            ("spec.devices[0].nodeName", "Invalid"),
            ("spec.devices[0]", "Required"),
            ("spec.devices[1].allNodes", "Invalid"),
            ("spec.devices[1]", "Required"),
        },
        id="RS-PDN-3-empty-and-false",
    ),
    pytest.param(
        sl(
            drop=("nodeName",),
            perDeviceNodeSelection=True,
            devices=[dev("a", nodeName="n1"), dev("b", nodeSelector=SEL), dev("c", allNodes=True)],
        ),
        set(),
        id="RS-PDN-valid",
    ),
    pytest.param(
        sl(devices=[dev(nodeName="n1")]), {("spec.devices[0]", "Invalid")}, id="RS-PDN-4-without-per-device"
    ),
    # taints
    pytest.param(
        sl(devices=[dev(taints=[{"key": f"k{i}", "effect": "None"} for i in range(17)])]),
        {("spec.devices[0].taints", "TooMany")},
        id="RS-TNT-1-17-taints",
    ),
    pytest.param(
        sl(
            devices=[
                dev(
                    taints=[
                        {"key": "", "effect": "NoSchedule"},
                        {"key": "k", "value": "bad value", "effect": "NoExecute"},
                    ]
                )
            ]
        ),
        {("spec.devices[0].taints[0].key", "Invalid"), ("spec.devices[0].taints[1].value", "Invalid")},
        id="RS-TNT-2-key-and-value",
    ),
    pytest.param(
        sl(devices=[dev(taints=[{"key": "k"}, {"key": "k", "effect": "PreferNoSchedule"}])]),
        {
            ("spec.devices[0].taints[0].effect", "Required"),
            ("spec.devices[0].taints[1].effect", "NotSupported"),
        },
        id="RS-TNT-3-effect",
    ),
    # binding conditions
    pytest.param(
        sl(devices=[dev(bindingConditions=[f"c{i}" for i in range(5)], bindingFailureConditions=["f"])]),
        {("spec.devices[0].bindingConditions", "TooMany")},
        id="RS-BC-1-five-conditions",
    ),
    pytest.param(
        sl(devices=[dev(bindingConditions=["ok", "bad cond"], bindingFailureConditions=["f"])]),
        {("spec.devices[0].bindingConditions[1]", "Invalid")},
        id="RS-BC-2-not-qualified-name",
    ),
    pytest.param(
        sl(devices=[dev(bindingConditions=["a", "a"], bindingFailureConditions=["f", "f"])]),
        {
            ("spec.devices[0].bindingConditions[1]", "Duplicate"),
            ("spec.devices[0].bindingFailureConditions[1]", "Duplicate"),
        },
        id="RS-BC-3-duplicates",
    ),
    pytest.param(
        sl(devices=[dev(bindingConditions=["a"], bindingFailureConditions=["a"])]),
        {("spec.devices[0].bindingFailureConditions[0]", "Invalid")},
        id="RS-BC-4-overlap",
    ),
    pytest.param(
        sl(devices=[dev("a", bindingConditions=["a"]), dev("b", bindingFailureConditions=["f"])]),
        {
            ("spec.devices[0].bindingFailureConditions", "Invalid"),
            ("spec.devices[1].bindingConditions", "Invalid"),
        },
        id="RS-BC-5-one-without-other",
    ),
    # alpha rules
    pytest.param(
        sl(skipNodeOperations=["NodePrepareResources"]),
        {("spec.skipNodeOperations", "Invalid")},
        id="RS-SKIP-1-prepare-alone",
    ),
    pytest.param(
        sl(skipNodeOperations=["NodePrepareResources", "NodeUnprepareResources"]),
        set(),
        id="RS-SKIP-1-both-ok",
    ),
    pytest.param(  # with the gate off the field is stripped before validation, never Forbidden
        sl(skipNodeOperations=["*"]), set(), id="RS-SKIP-gate-off-not-forbidden"
    ),
    pytest.param(
        sl(skipNodeOperations=["Bogus", "Bogus"]),
        {
            ("spec.skipNodeOperations[0]", "NotSupported"),
            ("spec.skipNodeOperations[1]", "NotSupported"),
            ("spec.skipNodeOperations[1]", "Duplicate"),
        },
        id="RS-SKIP-duplicates-of-unsupported-values",
    ),
    pytest.param(
        sl(partitionTypeAttribute="gpu.example.com/type"),
        {("spec.partitionTypeAttribute", "Invalid")},
        id="RS-PTA-1-no-counter-devices",
    ),
    pytest.param(
        sl(
            partitionTypeAttribute="gpu.example.com/type",
            devices=[
                dev("a", consumesCounters=[cc()]),
                dev("b", consumesCounters=[cc()], attributes={"type": {"int": 1}}),
                dev("c", consumesCounters=[cc()], attributes={"type": {"string": "mig"}}),
                dev("d"),
            ],
        ),
        {
            ("spec.devices[0].attributes[gpu.example.com/type]", "Required"),
            ("spec.devices[1].attributes[gpu.example.com/type]", "Invalid"),
        },
        id="RS-PTA-2-3-device-attribute",
    ),
    pytest.param(  # the format is declarative: the domain is checked as written, not lower-cased
        sl(driver="GPU.Example.com", partitionTypeAttribute="GPU.Example.com/type",
           devices=[dev("a", consumesCounters=[cc()], attributes={"type": {"string": "mig"}})]),
        {("spec.partitionTypeAttribute", "Invalid")},
        id="RS-PTA-1-upper-case-domain",
    ),
    pytest.param(
        sl(
            devices=[
                dev(
                    nodeAllocatableResources={
                        "ephemeral-storage": {"mapping": {"capacityKey": "nope", "capacityMultiplier": "0"}},
                        "cpu": {},
                        "memory": {"overhead": {"perPod": "-1"}},
                    }
                )
            ]
        ),
        {
            ("spec.devices[0].nodeAllocatableResources[ephemeral-storage]", "Invalid"),
            ("spec.devices[0].nodeAllocatableResources[ephemeral-storage].mapping.capacityKey", "NotFound"),
            (
                "spec.devices[0].nodeAllocatableResources[ephemeral-storage].mapping.capacityMultiplier",
                "Invalid",
            ),
            ("spec.devices[0].nodeAllocatableResources[cpu]", "Required"),
            ("spec.devices[0].nodeAllocatableResources[memory].overhead.perPod", "Invalid"),
        },
        id="RS-NAR-mixed",
    ),
    # Found by the differential tests (issue 15) against the 1.37 apiserver.
    pytest.param(
        sl(driver="é" * 32, pool={"name": "é" * 127, "resourceSliceCount": 1}),
        {("spec.driver", "TooLong"), ("spec.driver", "Invalid"), ("spec.pool.name", "TooLong"),
         ("spec.pool.name", "Invalid")},
        id="lengths-are-utf8-bytes-driver-and-pool",
    ),
    pytest.param(
        sl(devices=[dev(attributes={"é" * 32 + "/x": {"int": 1}, "é" * 17: {"int": 1}, "s": {"string": "é" * 33}})]),
        {("spec.devices[0].attributes", "TooLong"), ("spec.devices[0].attributes", "Invalid"),
         ("spec.devices[0].attributes[s].string", "TooLong")},
        id="lengths-are-utf8-bytes-keys-and-values",
    ),
    pytest.param(
        sl(devices=[dev(attributes={LONG_KEY: {}})]),
        {("spec.devices[0].attributes", "TooLong"), (f"spec.devices[0].attributes[{LONG_KEY_SHORT}]", "Invalid"),
         (f"spec.devices[0].attributes[{LONG_KEY}]", "Invalid")},
        id="attribute-union-also-on-the-full-key",
    ),
    pytest.param(
        sl(devices=[dev(nodeAllocatableResources={
            "hugepages-": {"overhead": {"perPod": "1"}},
            "cpu": {"mapping": {}},
            "memory": {"mapping": {"capacityKey": "c", "capacityMultiplier": "1", "deviceMultiplier": "1"}},
        }, capacity={"c": {"value": "1"}})]),
        {("spec.devices[0].nodeAllocatableResources[cpu].mapping", "Invalid"),
         ("spec.devices[0].nodeAllocatableResources[memory].mapping", "Invalid")},
        id="RS-NAR-mapping-union-and-bare-hugepages",
    ),
    pytest.param(
        sl(devices=[dev(f"d{i}") for i in range(64)]
           + [dev("x", consumesCounters=[cc("Bad")], taints=[{"key": "k", "effect": ""}])]),
        {("spec.devices", "TooMany"), ("spec.devices[64].consumesCounters[0].counterSet", "Invalid"),
         ("spec.devices[64].taints[0].effect", "Required")},
        id="declarative-checks-run-past-the-device-limit",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[{"counterSet": "s", "counters": {**counters(32), "Bad": {"value": "1"}}}])]),
        {("spec.devices[0].consumesCounters[0].counters", "TooMany"),
         ("spec.devices[0].consumesCounters[0].counters", "Invalid")},
        id="counter-names-checked-past-32",
    ),
    pytest.param(
        sl(drop=("devices",), sharedCounters=[{"name": "s", "counters": {**counters(32), "Bad": {"value": "1"}}}]),
        {("spec.sharedCounters[0].counters", "TooMany"), ("spec.sharedCounters[0].counters", "Invalid")},
        id="shared-counter-names-checked-past-32",
    ),
    pytest.param(
        sl(devices=[dev(taints=[{"key": f"k{i}", "effect": "NoSchedule"} for i in range(16)]
                        + [{"key": "z", "effect": "Bogus"}])]),
        {("spec.devices[0].taints", "TooMany"), ("spec.devices[0].taints[16].effect", "NotSupported")},
        id="taint-effects-checked-past-16",
    ),
]


PTA_GATES = "DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true"
# Rows whose fields are only kept (by mutate) or allowed with a non-default gate.
GATES_BY_ID = {
    "RS-ATTR-2-49-values": "DRAListTypeAttributes=true",
    "RS-SKIP-1-prepare-alone": "DRAOptionalNodeOperations=true",
    "RS-SKIP-1-both-ok": "DRAOptionalNodeOperations=true",
    "RS-SKIP-duplicates-of-unsupported-values": "DRAOptionalNodeOperations=true",
    "RS-PTA-1-no-counter-devices": PTA_GATES,
    "RS-PTA-2-3-device-attribute": PTA_GATES,
    "RS-PTA-1-upper-case-domain": PTA_GATES,
}


@pytest.mark.parametrize("obj,expected", CREATE_CASES)
def test_validate_create(
    obj: dict[str, Any], expected: set[tuple[str, str]], request: pytest.FixtureRequest
) -> None:
    gates = GATES_BY_ID.get(request.node.callspec.id, "")
    assert check_create(obj, gates) == expected


def test_nar_wrong_key_is_required_only_when_nothing_set() -> None:
    # "ephemeral-storage" carries a mapping, so the Required in the table above is the cpu entry's.
    o = sl(
        devices=[
            dev(
                nodeAllocatableResources={
                    "ephemeral-storage": {"mapping": {"capacityKey": "x", "capacityMultiplier": "1"}}
                }
            )
        ]
    )
    got = causes(rs.validate(o, ctx()))
    assert ("spec.devices[0].nodeAllocatableResources[ephemeral-storage]", "Required") not in got


def test_messages_carry_upstream_gist() -> None:
    errs = rs.validate(sl(allNodes=True), ctx())
    assert str(errs[0]) == (
        'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"
    )
    errs = rs.validate(sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["a", "b", "c"])])]), ctx())
    assert [e.body() for e in errs] == ["Too many: 3: must have at most 2 items"]


@pytest.mark.parametrize("value", [None, 5, "x", [1], True], ids=["null", "int", "string", "list", "bool"])
def test_wrong_types_never_raise(value: Any) -> None:
    for path in (
        "spec",
        "devices",
        "pool",
        "sharedCounters",
        "nodeSelector",
        "attributes",
        "capacity",
        "consumesCounters",
        "taints",
        "counters",
        "compatibilityGroups",
        "requestPolicy",
    ):
        o = sl(
            devices=[
                dev(consumesCounters=[cc()], capacity={"c": {"value": "1"}}, attributes={"a": {"int": 1}})
            ]
        )
        if path == "spec":
            o["spec"] = value
        elif path in ("devices", "pool", "sharedCounters", "nodeSelector"):
            o["spec"][path] = value
        elif path in ("attributes", "capacity", "consumesCounters", "taints"):
            o["spec"]["devices"][0][path] = value
        elif path == "counters":
            o["spec"]["devices"][0]["consumesCounters"][0]["counters"] = value
        elif path == "compatibilityGroups":
            o["spec"]["devices"][0]["consumesCounters"][0]["compatibilityGroups"] = value
        else:
            o["spec"]["devices"][0]["capacity"]["c"]["requestPolicy"] = value
        rs.validate(o, ctx())
        rs.validate_update(o, sl(), ctx(op="UPDATE", old=sl()))
        rs.mutate(o, ctx())
        rs.warnings(o, ctx())


def test_warning_for_uppercase_driver() -> None:
    assert rs.warnings(sl(driver="GPU.example.com"), ctx()) == [
        'spec.driver: driver names should be lowercase; "GPU.example.com" contains uppercase characters'
    ]
    assert rs.warnings(sl(), ctx()) == []


# --- UPDATE -------------------------------------------------------------------------------


def check_update(new: dict[str, Any], old: dict[str, Any], gates: str = "") -> set[tuple[str, str]]:
    return causes(rs.validate_update(new, old, ctx(gates, "UPDATE", old)))


STORED_BAD_CAPACITY = dev("gpu-0", capacity={"mem": {"value": "1Gi", "requestPolicy": {"default": "1"}}})
STORED_BAD_TAINT = dev("gpu-0", taints=[{"key": "k", "effect": "Legacy"}])
PTA_SLICE = sl(partitionTypeAttribute="gpu.example.com/type",
               devices=[dev("a", consumesCounters=[cc()], attributes={"type": {"string": "mig"}})])

UPDATE_CASES = [
    pytest.param(sl(), sl(), set(), id="no-op"),
    pytest.param(
        sl(pool={"name": "other", "resourceSliceCount": 1}),
        sl(),
        {("spec.pool.name", "Invalid")},
        id="RS-UPD-1-pool-name",
    ),
    pytest.param(sl(driver="other.example.com"), sl(), {("spec.driver", "Invalid")}, id="RS-UPD-1-driver"),
    pytest.param(sl(nodeName="worker-2"), sl(), {("spec.nodeName", "Invalid")}, id="RS-UPD-1-node-name"),
    pytest.param(
        sl(drop=("nodeName",), allNodes=True),
        sl(),
        {("spec.nodeName", "Invalid")},
        id="RS-UPD-1-node-name-unset",
    ),
    pytest.param(
        {**sl(), "metadata": {"name": "slice-2"}},
        sl(),
        {("metadata.name", "Invalid")},
        id="metadata-name-immutable",
    ),
    pytest.param(
        sl(devices=[STORED_BAD_CAPACITY]),
        sl(devices=[STORED_BAD_CAPACITY]),
        set(),
        id="ratchet-unchanged-capacity",
    ),
    pytest.param(
        sl(
            devices=[
                dev("gpu-0", capacity={"mem": {"value": "1073741824", "requestPolicy": {"default": "1"}}})
            ]
        ),
        sl(devices=[STORED_BAD_CAPACITY]),
        set(),
        id="ratchet-capacity-semantically-equal",
    ),
    pytest.param(
        sl(devices=[dev("gpu-0", capacity={"mem": {"value": "2Gi", "requestPolicy": {"default": "1"}}})]),
        sl(devices=[STORED_BAD_CAPACITY]),
        {("spec.devices[0].capacity[mem].requestPolicy", "Forbidden")},
        id="ratchet-capacity-changed-revalidated",
    ),
    pytest.param(
        sl(devices=[dev("gpu-1", capacity=STORED_BAD_CAPACITY["capacity"])]),
        sl(devices=[STORED_BAD_CAPACITY]),
        {("spec.devices[0].capacity[mem].requestPolicy", "Forbidden")},
        id="ratchet-matches-by-name-only",
    ),
    pytest.param(
        sl(devices=[STORED_BAD_TAINT]), sl(devices=[STORED_BAD_TAINT]), set(), id="ratchet-unchanged-taints"
    ),
    pytest.param(
        sl(devices=[dev("gpu-0", taints=[{"key": "k", "effect": "Legacy"}, {"key": "j", "effect": "None"}])]),
        sl(devices=[STORED_BAD_TAINT]),
        {("spec.devices[0].taints[0].effect", "NotSupported")},
        id="ratchet-taints-changed-revalidated",
    ),
    pytest.param(  # the declarative checks skip an unchanged device list, not an unchanged device
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad"])], attributes={"a": {"int": 1}})]),
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad"])])]),
        {("spec.devices[0].consumesCounters[0].compatibilityGroups[0]", "Invalid")},
        id="RS-CG-6-revalidated-when-the-device-list-changes",
    ),
    pytest.param(
        sl(pool={"name": "pool", "generation": 2, "resourceSliceCount": 1},
           devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad"])])]),
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad"])])]),
        set(),
        id="RS-CG-6-ratchet-unchanged-device-list",
    ),
    pytest.param(
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad", "x"])])]),
        sl(devices=[dev(consumesCounters=[cc(compatibilityGroups=["Bad"])])]),
        {("spec.devices[0].consumesCounters[0].compatibilityGroups[0]", "Invalid")},
        id="RS-CG-6-changed-groups",
    ),
    pytest.param(
        sl(skipNodeOperations=["*"]), sl(skipNodeOperations=["*"]), set(), id="skip-ops-unchanged-gate-off"
    ),
    pytest.param(  # DRAPartitionableDevicesType off: a stored value may stay, not change
        PTA_SLICE, PTA_SLICE, set(), id="RS-PTA-gate-off-unchanged-kept",
    ),
    pytest.param(
        {**PTA_SLICE, "spec": {**PTA_SLICE["spec"], "partitionTypeAttribute": "gpu.example.com/other"}},
        PTA_SLICE,
        {("spec.partitionTypeAttribute", "Forbidden"), ("spec.devices[0].attributes[gpu.example.com/other]",
                                                         "Required")},
        id="RS-PTA-gate-off-changed-forbidden",
    ),
]


@pytest.mark.parametrize("new,old,expected", UPDATE_CASES)
def test_validate_update(new: dict[str, Any], old: dict[str, Any], expected: set[tuple[str, str]]) -> None:
    assert check_update(new, old) == expected


def test_update_still_validates_new_devices() -> None:
    assert check_update(sl(devices=[dev("Bad")]), sl()) == {("spec.devices[0].name", "Invalid")}
