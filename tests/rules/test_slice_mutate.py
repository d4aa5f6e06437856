"""ResourceSlice gate strips and normalisation (docs/rules.md, "Mutation"), CREATE and UPDATE, both gate settings.

Every patch is applied with the independent ``jsonpatch`` library as well as ours, and the
property test checks that mutate-then-validate never reports a field the patch removed.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from webhook import ConfigError
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.slices import resourceslice as rs

CG = "DRADeviceCompatibilityGroups"


def sl(devices: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    o: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n1",
            "pool": {"name": "p", "resourceSliceCount": 1},
        },
    }
    if devices is not None:
        o["spec"]["devices"] = devices
    o["spec"].update(spec)
    return o


def grouped(*groups: Any) -> dict[str, Any]:
    """A slice with one device per value; each value is put as its consumesCounters entry's groups."""
    devices = []
    for i, g in enumerate(groups):
        entry: dict[str, Any] = {"counterSet": "mem", "counters": {"m": {"value": "1Gi"}}}
        if g != "absent":
            entry["compatibilityGroups"] = g
        devices.append({"name": f"d{i}", "consumesCounters": [entry]})
    return sl(devices)


def run(
    obj: dict[str, Any], gates: str = "", old: dict[str, Any] | None = None
) -> tuple[Any, dict[str, Any]]:
    ctx = RuleContext(FeatureGates.parse(gates), operation="UPDATE" if old is not None else "CREATE", old=old)
    m = rs.mutate(obj, ctx)
    ours = apply_patch(obj, m.ops)
    theirs = jsonpatch.apply_patch(copy.deepcopy(obj), m.ops)
    assert ours == theirs
    return m, ours


def groups_of(o: dict[str, Any]) -> list[Any]:
    return [
        e.get("compatibilityGroups", "absent") for d in o["spec"]["devices"] for e in d["consumesCounters"]
    ]


# --- compatibilityGroups ---------------------------------------------------------------------

CG_CASES = [
    # (objects groups, old groups or None for CREATE, gates, groups after, warning count text or None)
    pytest.param(
        [["mig"], ["vgpu"]],
        None,
        "",
        ["absent", "absent"],
        "2 consumesCounters entries",
        id="create-gate-off-strips-with-warning",
    ),
    pytest.param(
        [["mig"], ["vgpu"]], None, f"{CG}=true", [["mig"], ["vgpu"]], None, id="create-gate-on-keeps"
    ),
    pytest.param(
        [None, [], ["mig"]],
        None,
        "",
        ["absent", "absent", "absent"],
        "1 consumesCounters entry",
        id="create-gate-off-null-and-empty-not-counted",
    ),
    pytest.param(
        [None, [], ["mig"]],
        None,
        f"{CG}=true",
        ["absent", "absent", ["mig"]],
        None,
        id="create-gate-on-normalises-null-and-empty",
    ),
    pytest.param([["mig"]], [["vgpu"]], "", [["mig"]], None, id="update-gate-off-old-in-use-keeps"),
    pytest.param(
        [["mig"]],
        [[]],
        "",
        ["absent"],
        "1 consumesCounters entry",
        id="update-gate-off-old-empty-list-not-in-use",
    ),
    pytest.param(
        [["mig"]],
        [None],
        "",
        ["absent"],
        "1 consumesCounters entry",
        id="update-gate-off-old-null-not-in-use",
    ),
    pytest.param(
        [["mig"], None],
        [["x"], "absent"],
        "",
        [["mig"], "absent"],
        None,
        id="update-old-in-use-still-normalises",
    ),
    pytest.param([["mig"]], [["vgpu"]], f"{CG}=true", [["mig"]], None, id="update-gate-on-keeps"),
]


@pytest.mark.parametrize("groups,old_groups,gates,after,warning", CG_CASES)
def test_compatibility_groups_strip(
    groups: list[Any], old_groups: list[Any] | None, gates: str, after: list[Any], warning: str | None
) -> None:
    old = grouped(*old_groups) if old_groups is not None else None
    m, out = run(grouped(*groups), gates, old)
    assert groups_of(out) == after
    if warning is None:
        assert m.warnings == []
    else:
        assert m.warnings == [f"{CG} is off: removed compatibilityGroups from {warning}"]
    assert all(op["op"] == "remove" for op in m.ops)


def test_strip_then_validate_has_no_group_errors() -> None:
    bad = grouped(["A", "A", "B"])  # would be TooMany if kept
    _, out = run(bad)
    assert rs.validate(out, RuleContext(FeatureGates.defaults())) == []


def test_partitionable_off_removes_consumes_counters_first() -> None:
    m, out = run(grouped(["mig"]), "DRAPartitionableDevices=false")
    assert m.ops == [{"op": "remove", "path": "/spec/devices/0/consumesCounters"}]
    assert len(m.warnings) == 1 and m.warnings[0].startswith("DRAPartitionableDevices is off")
    assert "consumesCounters" not in out["spec"]["devices"][0]


# --- other gates -------------------------------------------------------------------------------

TAINTED = sl([{"name": "d", "taints": [{"key": "k", "effect": "NoSchedule"}]}])
PARTITIONED = sl(
    [
        {
            "name": "d",
            "nodeName": "n1",
            "consumesCounters": [{"counterSet": "s", "counters": {"c": {"value": "1"}}}],
        }
    ],
    perDeviceNodeSelection=True,
)
BOUND = sl(
    [{"name": "d", "bindingConditions": ["a"], "bindingFailureConditions": ["b"], "bindsToNode": True}]
)
CONSUMABLE = sl(
    [
        {
            "name": "d",
            "allowMultipleAllocations": True,
            "capacity": {"bw": {"value": "10G", "requestPolicy": {"default": "1"}}},
        }
    ]
)
NAR = sl(
    [
        {
            "name": "d",
            "capacity": {"c": {"value": "1"}},
            "nodeAllocatableResources": {"cpu": {"mapping": {"capacityKey": "c", "capacityMultiplier": "1"}}},
        }
    ]
)
LISTS = sl([{"name": "d", "attributes": {"a": {"ints": [1, 2]}, "b": {"string": "x"}}}])
PTA = sl([{"name": "d"}], partitionTypeAttribute="gpu.example.com/t")
SKIPPED = sl([{"name": "d"}], skipNodeOperations=["*"])

STRIP_CASES = [
    pytest.param(TAINTED, "DRADeviceTaints=false,DRADeviceTaintRules=false", ["/spec/devices/0/taints"], id="taints"),
    pytest.param(
        PARTITIONED,
        "DRAPartitionableDevices=false",
        ["/spec/perDeviceNodeSelection", "/spec/devices/0/consumesCounters", "/spec/devices/0/nodeName"],
        id="partitionable-devices",
    ),
    pytest.param(
        BOUND,
        "DRADeviceBindingConditions=false",
        [
            "/spec/devices/0/bindingConditions",
            "/spec/devices/0/bindingFailureConditions",
            "/spec/devices/0/bindsToNode",
        ],
        id="binding-conditions",
    ),
    pytest.param(
        CONSUMABLE,
        "DRAConsumableCapacity=false",
        ["/spec/devices/0/allowMultipleAllocations", "/spec/devices/0/capacity/bw/requestPolicy"],
        id="consumable-capacity",
    ),
    pytest.param(
        NAR, "", ["/spec/devices/0/nodeAllocatableResources"], id="node-allocatable-resources-default-off"
    ),
    pytest.param(LISTS, "", ["/spec/devices/0/attributes/a/ints"], id="list-type-attributes-default-off"),
    pytest.param(PTA, "", ["/spec/partitionTypeAttribute"], id="partition-type-attribute-default-off"),
    pytest.param(SKIPPED, "", ["/spec/skipNodeOperations"], id="skip-node-operations-default-off"),
]


@pytest.mark.parametrize("obj,gates,removed", STRIP_CASES)
def test_gate_strip_create(obj: dict[str, Any], gates: str, removed: list[str]) -> None:
    m, _ = run(obj, gates)
    assert [op["path"] for op in m.ops] == removed
    assert len(m.warnings) == 1 and len(m.warnings[0]) <= 120 and " is off: removed " in m.warnings[0]


@pytest.mark.parametrize("obj,gates,removed", STRIP_CASES)
def test_gate_strip_update_kept_when_old_uses_it(obj: dict[str, Any], gates: str, removed: list[str]) -> None:
    m, out = run(obj, gates, old=obj)
    assert m.ops == [] and m.warnings == [] and out == obj


@pytest.mark.parametrize("obj,gates,removed", STRIP_CASES)
def test_gate_strip_update_removed_when_old_does_not(
    obj: dict[str, Any], gates: str, removed: list[str]
) -> None:
    m, _ = run(obj, gates, old=sl([{"name": "d"}]))
    assert [op["path"] for op in m.ops] == removed


@pytest.mark.parametrize(
    "obj,gates",
    [
        pytest.param(o, "", id=i)
        for o, i in (
            (TAINTED, "taints"),
            (PARTITIONED, "partitionable"),
            (BOUND, "binding"),
            (CONSUMABLE, "consumable"),
        )
    ],
)
def test_gate_on_keeps_everything(obj: dict[str, Any], gates: str) -> None:
    m, out = run(obj, gates)
    assert m.ops == [] and out == obj


def test_list_attribute_strip_leaves_empty_attribute_which_validation_rejects() -> None:
    _, out = run(LISTS)
    errs = rs.validate(out, RuleContext(FeatureGates.defaults()))
    assert {(e.field, e.type.value) for e in errs} == {("spec.devices[0].attributes[a]", "FieldValueInvalid")}


def test_old_allow_multiple_false_counts_as_in_use() -> None:
    old = sl([{"name": "d", "allowMultipleAllocations": False}])
    m, _ = run(CONSUMABLE, "DRAConsumableCapacity=false", old=old)
    assert m.ops == []


def test_skip_node_operations_stripped_not_forbidden() -> None:
    """Upstream drops skipNodeOperations with DRAOptionalNodeOperations off (found by the
    differential tests): the stripped slice is valid, even with values it would refuse."""
    bad = sl([{"name": "d"}], skipNodeOperations=["NodePrepareResources", "Bogus", "Bogus"])
    m, out = run(bad)
    assert [op["path"] for op in m.ops] == ["/spec/skipNodeOperations"]
    assert rs.validate(out, RuleContext(FeatureGates.defaults())) == []


@pytest.mark.parametrize("op", ["DELETE", "CONNECT"])
def test_no_mutation_outside_create_update(op: str) -> None:
    assert rs.mutate(grouped(["mig"]), RuleContext(FeatureGates.defaults(), operation=op)).ops == []


# --- property test ------------------------------------------------------------------------------

GATE_NAMES = [
    "DRADeviceCompatibilityGroups",
    "DRAPartitionableDevices",
    "DRAConsumableCapacity",
    "DRADeviceTaints",
    "DRADeviceBindingConditions",
    "DRAListTypeAttributes",
    "DRANodeAllocatableResources",
    "DRAResourcePoolStatus",
    "DRAFractionalCapacityRange",
]
label = st.sampled_from(["mig", "vgpu", "a", "b-1"])
groups_value = st.one_of(
    st.just("absent"),
    st.none(),
    st.just([]),
    st.lists(label, min_size=1, max_size=2, unique=True),
    st.lists(st.sampled_from(["X", "", "mig", "y" * 70, "mig"]), max_size=4),
)


@st.composite
def slices(draw: st.DrawFn) -> dict[str, Any]:
    devices = []
    for i in range(draw(st.integers(1, 4))):
        d: dict[str, Any] = {"name": f"dev-{i}"}
        entries = []
        for j in range(draw(st.integers(0, 2))):
            e: dict[str, Any] = {"counterSet": f"set-{j}", "counters": {"mem": {"value": "1Gi"}}}
            g = draw(groups_value)
            if g != "absent":
                e["compatibilityGroups"] = g
            entries.append(e)
        if entries or draw(st.booleans()):
            d["consumesCounters"] = entries
        if draw(st.booleans()):
            d["taints"] = draw(st.sampled_from([[], [{"key": "k", "effect": "NoSchedule"}], None]))
        if draw(st.booleans()):
            d["allowMultipleAllocations"] = True
            d["capacity"] = {
                "bw": {"value": "10", "requestPolicy": {"default": "1", "validValues": ["1", "2"]}}
            }
        if draw(st.booleans()):
            d["attributes"] = {"a": draw(st.sampled_from([{"ints": [1]}, {"int": 1}, {"strings": []}]))}
        if draw(st.booleans()):
            d["bindingConditions"], d["bindingFailureConditions"] = ["ready"], ["failed"]
        devices.append(d)
    return sl(devices)


def _removed_paths(ops: list[dict[str, Any]]) -> list[str]:
    return [op["path"] for op in ops if op["op"] == "remove"]


def _field_to_pointer(field: str) -> str:
    out = ""
    for part in field.replace("]", "").replace("[", ".").split("."):
        out += "/" + part
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=slices(),
    old=st.one_of(st.none(), slices()),
    gates=st.dictionaries(st.sampled_from(GATE_NAMES), st.booleans()),
)
def test_property_patch_applies_and_validation_ignores_removed(
    obj: dict[str, Any], old: dict[str, Any] | None, gates: dict[str, bool]
) -> None:
    try:
        snapshot = FeatureGates.defaults().with_overrides(gates)
    except ConfigError:
        assume(False)  # a gate on without a gate it depends on: Kubernetes refuses to start so
    ctx = RuleContext(snapshot, operation="UPDATE" if old else "CREATE", old=old)
    m = rs.mutate(obj, ctx)
    patched = jsonpatch.apply_patch(copy.deepcopy(obj), m.ops)
    assert patched == apply_patch(obj, m.ops)
    removed = _removed_paths(m.ops)
    errs = rs.validate_update(patched, old, ctx) if old else rs.validate(patched, ctx)
    for e in errs:
        ptr = _field_to_pointer(e.field)
        assert not any(ptr == r or ptr.startswith(r + "/") for r in removed), (e, removed)
    for g in ("compatibilityGroups",):
        for d in patched["spec"]["devices"]:
            for entry in d.get("consumesCounters") or []:
                assert entry.get(g, "absent") not in (None, [])  # normalised away
