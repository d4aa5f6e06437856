"""Hypothesis strategies for ResourceSlice objects aimed at the 1.37 apiserver's edges (issue 15,
comparison 2): `resource_slices()`.

A drawn slice is mostly well formed, with edges in every part of it:

- every limit at n-1, n and n+1: devices (128, or 64 once a device has taints, consumes
  counters or has a list attribute), attributes + capacities per device (32), attribute values
  (48), counter sets (8), counters per set and per consumption (32), consumesCounters (2),
  compatibilityGroups (2, drawn 0-3 with duplicates and bad names), taints (16), binding
  conditions (4 each), validValues (10);
- names at their length limits and with bad characters (`gen_values`): driver, pool name (with
  slashes), device and counter names, attribute and capacity keys in `id` and `domain/id` form
  and with more than one slash, label keys and values, node names;
- null, [] and absent for every optional list and map, false for the node-selection flags;
- quantities in every notation (suffixes, exponents, milli, negative, huge, fractional, JSON
  numbers, malformed) and requestPolicy relations (`gen_capacity`);
- the node-selection union at slice and device level, list-type attributes,
  partitionTypeAttribute, skipNodeOperations and nodeAllocatableResources;
- sometimes one wrong JSON type, an integer past int64 or one unknown field (`gen_wrong`): the
  apiserver refuses those while decoding, before validation (HTTP 400);
- sometimes a null, {} or "" as a list item or map value (`gen_zeros`): the apiserver decodes a
  null there into the item's zero value and validates that.

`metadata` stays simple and valid: metadata edges belong to the scheduling generator.

The parts are plain functions of hypothesis's ``draw`` over strategies built once (building
strategies per draw costs more than drawing from them); `resource_slices()` is the strategy.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.differential.gen_capacity import capacity_with_policy
from tests.differential.gen_values import (
    ABSENT,
    C_IDENTS_OK,
    DRIVERS_EDGE,
    DRIVERS_OK,
    LABEL_KEYS_EDGE,
    LABEL_KEYS_OK,
    LABEL_VALUES_EDGE,
    LABEL_VALUES_OK,
    LABELS_EDGE,
    LABELS_OK,
    MULTIBYTE,
    NODES_EDGE,
    NODES_OK,
    PERCENT,
    POOLS_EDGE,
    POOLS_OK,
    chance,
    choose,
    maybe,
    node_selector,
    pick,
    put,
    qualified_names,
    quantity,
)
from tests.differential.gen_wrong import int_overflow, unknown_field, wrong_type
from tests.differential.gen_zeros import zero_item

INT64_MAX = 2**63 - 1
INTS = [0, 1, -1, 7, 42, INT64_MAX, -(2**63)]
STRINGS = ["a100", "", "x" * 63, "x" * 64, "x" * 65, MULTIBYTE * 32, MULTIBYTE * 33, "with space", "é-ü"]
VERSIONS = ["1.2.3", "0.0.0", "1.2.3-alpha.1", "1.2.3+build.5", "1.2.3-0.3.7", "10.20.30-rc.1+b.2"]
VERSIONS_EDGE = ["1.2", "v1.2.3", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3-alpha..1", "", "1.2.3-" + "a" * 59,
                 "1.2.3-" + "a" * 58, "1.2.3+", "1.2.3.4"]
TAINT_EFFECTS = ["NoSchedule", "NoExecute", "None"]
NODE_RESOURCES = ["cpu", "memory", "hugepages-2Mi", "hugepages-1Gi"]
NODE_RESOURCES_EDGE = ["pods", "example.com/gpu", "", "CPU", "hugepages-", "ephemeral-storage", "hugepages-x"]
SKIP_OPS = ["*", "NodePrepareResources", "NodeUnprepareResources"]
GROUPS_OK = ["mig", "whole", "g-1"]
GROUPS_EDGE = ["", "Mig", "-g", "g" * 63, "g" * 64, "a.b", "a_b"]

DRIVER = pick(DRIVERS_OK, DRIVERS_EDGE + [ABSENT, None])
POOL_NAME = pick(POOLS_OK, POOLS_EDGE + [ABSENT, None])
GENERATION = pick([0, 1, 5], [-1, INT64_MAX, -(2**63), ABSENT, None])
SLICE_COUNT = pick([1, 1, 2, 4], [0, -1, INT64_MAX, ABSENT, None])
NODE_NAME = pick(NODES_OK, NODES_EDGE)
DEVICE_NAME = pick(LABELS_OK, LABELS_EDGE + [ABSENT, None])
COUNTER_NAME = pick(["memory", "cores", "slices", "bw"], LABELS_EDGE)
GROUP = pick(GROUPS_OK, GROUPS_EDGE)
LABEL_KEY = pick(LABEL_KEYS_OK, LABEL_KEYS_EDGE)
LABEL_VALUE = pick(LABEL_VALUES_OK, LABEL_VALUES_EDGE)
EFFECT = pick(TAINT_EFFECTS, ["", "Bogus", "noschedule", ABSENT])
STRING_VALUE = pick(["a100", "h100", "x"], STRINGS)
VERSION_VALUE = pick(VERSIONS, VERSIONS_EDGE)
INT_VALUE = st.one_of(st.sampled_from(INTS), st.integers(-(2**63), INT64_MAX))
NODE_RESOURCE = pick(NODE_RESOURCES, NODE_RESOURCES_EDGE)
SKIP_OP = pick(SKIP_OPS, ["Bogus", "", "nodePrepareResources"])


# --- attributes ----------------------------------------------------------------------------

ATTRIBUTE_KINDS = ["int", "int", "bool", "string", "string", "version", "ints", "bools", "strings", "versions",
                   "none", "two", "null-member", "empty-list"]
LIST_ITEMS = {"ints": INT_VALUE, "bools": st.booleans(), "strings": STRING_VALUE, "versions": VERSION_VALUE}
TWO_KINDS = {"int": 1, "bool": True, "string": "s", "ints": [1], "strings": ["s"]}
NULL_MEMBERS = [{"int": None}, {"string": None, "bool": True}, {"ints": None}, {"strings": None, "int": 3}]


def attribute(draw: st.DrawFn) -> Any:
    """One DeviceAttribute: one scalar mostly; lists, none, two at once, nulls and bad values."""
    kind = choose(draw, ATTRIBUTE_KINDS)
    if kind == "int":
        return {"int": draw(INT_VALUE)}
    if kind == "bool":
        return {"bool": choose(draw, [True, False])}
    if kind == "string":
        return {"string": draw(STRING_VALUE)}
    if kind == "version":
        return {"version": draw(VERSION_VALUE)}
    if kind in LIST_ITEMS:
        return {kind: [draw(LIST_ITEMS[kind]) for _ in range(choose(draw, [1, 1, 2, 3, 4]))]}
    if kind == "none":
        return choose(draw, [{}, None])
    if kind == "two":
        a, b = choose(draw, [("int", "bool"), ("string", "ints"), ("ints", "strings"), ("bool", "strings")])
        return {a: TWO_KINDS[a], b: TWO_KINDS[b]}
    if kind == "null-member":
        return dict(choose(draw, NULL_MEMBERS))
    return {choose(draw, list(LIST_ITEMS)): []}


def keyed(draw: st.DrawFn, driver: str, n: int, value: Any) -> dict[str, Any]:
    """A map of up to ``n`` qualified names (drawn keys, duplicates fold) to ``value(draw)``."""
    names = qualified_names(driver)
    return {draw(names): value(draw) for _ in range(n)}


# --- capacity ------------------------------------------------------------------------------


def capacity_map(draw: st.DrawFn, driver: str, multi: bool) -> dict[str, Any]:
    """Plain values, and (more often on a multi-allocatable device) requestPolicies."""
    def entry(draw: st.DrawFn) -> Any:
        if chance(draw, 65 if multi else 8):
            return capacity_with_policy(draw)
        cap: dict[str, Any] = {}
        put(cap, "value", quantity(draw) if chance(draw, 95) else ABSENT)
        if chance(draw, 5):
            cap["requestPolicy"] = None
        return cap
    return keyed(draw, driver, choose(draw, [1, 1, 2, 3] if multi else [0, 1, 1, 2, 3]), entry)


# --- counters ------------------------------------------------------------------------------


def counter_map(draw: st.DrawFn) -> Any:
    n = choose(draw, [1, 1, 1, 2, 3, 0, 31, 32, 33])
    if n > 3:  # at the limit, sometimes with a bad name (the declarative key check runs past it)
        out = {f"c{i}": {"value": "1"} for i in range(n - 1)}
        out[draw(COUNTER_NAME) if chance(draw, 30) else "last"] = {"value": "1"}
        return out
    out: dict[str, Any] = {}
    for _ in range(n):
        c: dict[str, Any] = {}
        put(c, "value", quantity(draw) if chance(draw, 95) else ABSENT)
        out[draw(COUNTER_NAME)] = c
    return out if chance(draw, 85) else choose(draw, [None, ABSENT, {}])


def compatibility_groups(draw: st.DrawFn) -> Any:
    groups = [draw(GROUP) for _ in range(choose(draw, [0, 1, 1, 2, 2, 3]))]
    if groups and chance(draw, 15):
        groups[-1] = groups[0]  # a duplicate
    return maybe(draw, groups, empty=[])


def consumption(draw: st.DrawFn, sets: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    put(entry, "counterSet", choose(draw, sets or ["set-a"]) if chance(draw, 80)
        else choose(draw, LABELS_EDGE + [ABSENT]))
    put(entry, "counters", counter_map(draw))
    put(entry, "compatibilityGroups", compatibility_groups(draw))
    return entry


def counter_sets(draw: st.DrawFn) -> list[Any]:
    n = choose(draw, [1, 1, 2, 3, 0, 7, 8, 9])
    if n > 3:
        return [{"name": f"set-{i}", "counters": {"memory": {"value": "1"}}} for i in range(n)]
    out: list[Any] = []
    for i in range(n):
        cs: dict[str, Any] = {}
        put(cs, "name", f"set-{i}" if chance(draw, 80) else choose(draw, LABELS_EDGE + [ABSENT, "set-0"]))
        put(cs, "counters", counter_map(draw))
        out.append(cs)
    return out


# --- taints, binding conditions, node allocatable resources ---------------------------------


def taint_list(draw: st.DrawFn) -> list[Any]:
    n = choose(draw, [1, 1, 2, 0, 15, 16, 17])
    if n > 2:  # at the limit, sometimes with a bad effect (checked declaratively past it)
        out: list[Any] = [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(n)]
        if chance(draw, 40):
            out[-1].pop("effect")
            put(out[-1], "effect", draw(EFFECT))
        return out
    out = []
    for _ in range(n):
        t = {}
        put(t, "key", draw(LABEL_KEY) if chance(draw, 95) else ABSENT)
        put(t, "value", maybe(draw, draw(LABEL_VALUE), absent=2))
        put(t, "effect", draw(EFFECT))
        if chance(draw, 20):
            t["timeAdded"] = "2024-01-01T00:00:00Z"
        out.append(t)
    return out


def condition_list(draw: st.DrawFn) -> list[str]:
    out = [draw(LABEL_KEY) for _ in range(choose(draw, [1, 1, 2, 3, 4, 5, 0]))]
    if out and chance(draw, 10):
        out[-1] = out[0]  # a duplicate
    return out


def node_allocatable(draw: st.DrawFn, capacity_keys: list[str]) -> Any:
    out: dict[str, Any] = {}
    for _ in range(choose(draw, [1, 1, 2])):
        entry: dict[str, Any] = {}
        if chance(draw, 70):
            m: dict[str, Any] = {}
            known = capacity_keys and chance(draw, 70)
            key = choose(draw, capacity_keys) if known else choose(draw, ["missing", "", "a/b/c"])
            put(m, "capacityKey", maybe(draw, key))
            put(m, "capacityMultiplier", maybe(draw, choose(draw, ["1", "2", "0.5", "1Gi", "0", "-1", "1e-3"])))
            put(m, "deviceMultiplier", maybe(draw, choose(draw, ["1", "4Gi", "0", "-2"]), absent=4))
            entry["mapping"] = m
        if chance(draw, 40):
            o: dict[str, Any] = {}
            put(o, "perPod", maybe(draw, choose(draw, ["0", "100m", "1Gi", "-1", "-1m"]), absent=2))
            put(o, "perContainer", maybe(draw, choose(draw, ["0", "10m", "-5"]), absent=2))
            entry["overhead"] = o
        out[draw(NODE_RESOURCE)] = entry
    return out


# --- devices -------------------------------------------------------------------------------

FEATURES = ["attributes", "attributes", "attributes", "capacity", "capacity", "multi", "multi", "multi", "counters",
            "counters", "taints", "binding", "node", "allocatable", "big-attrs", "big-values"]


def device(draw: st.DrawFn, driver: str, per_device: bool, sets: list[str], name: str) -> dict[str, Any]:
    """One device with a few drawn features (1-3 of FEATURES mostly, sometimes none)."""
    features = {choose(draw, FEATURES) for _ in range(choose(draw, [0, 1, 1, 2, 2, 3]))}
    dev: dict[str, Any] = {}
    put(dev, "name", name if chance(draw, 85) else draw(DEVICE_NAME))
    if "attributes" in features:
        put(dev, "attributes", keyed(draw, driver, choose(draw, [1, 2, 3, 4]), attribute)
            if chance(draw, 85) else choose(draw, [{}, None]))
    multi = "multi" in features
    if multi:
        dev["allowMultipleAllocations"] = choose(draw, [True, True, True, True, False, None])
    elif chance(draw, 4):
        dev["allowMultipleAllocations"] = choose(draw, [False, True])
    if "capacity" in features or multi:
        put(dev, "capacity", capacity_map(draw, driver, multi) if chance(draw, 90) else choose(draw, [{}, None]))
    if "big-attrs" in features:
        total = choose(draw, [31, 32, 33])
        n_attrs = choose(draw, range(total + 1))
        dev["attributes"] = {f"a{i}": {"int": i} for i in range(n_attrs)}
        dev["capacity"] = {f"c{i}": {"value": "1"} for i in range(total - n_attrs)}
    if "big-values" in features:
        dev["attributes"] = _many_values(draw)
    if "counters" in features:
        cc = [consumption(draw, sets) for _ in range(choose(draw, [1, 1, 1, 2, 2, 3, 0]))]
        put(dev, "consumesCounters", cc if chance(draw, 90) else None)
    if "taints" in features:
        put(dev, "taints", taint_list(draw) if chance(draw, 85) else choose(draw, [[], None]))
    if "binding" in features:
        put(dev, "bindingConditions", maybe(draw, condition_list(draw), empty=[]))
        put(dev, "bindingFailureConditions", maybe(draw, condition_list(draw), empty=[]))
        put(dev, "bindsToNode", maybe(draw, choose(draw, [True, False]), absent=2))
    if per_device or "node" in features:
        _device_node(draw, dev, per_device)
    if "allocatable" in features:
        caps = dev.get("capacity")
        keys = list(caps) if isinstance(caps, dict) else []
        put(dev, "nodeAllocatableResources", node_allocatable(draw, keys) if chance(draw, 85)
            else choose(draw, [{}, None]))
    return dev


def _many_values(draw: st.DrawFn) -> dict[str, Any]:
    """Attributes with 47, 48 or 49 values in all (list items count one each)."""
    values = choose(draw, [47, 48, 49])
    scalars = choose(draw, range(11))
    attrs: dict[str, Any] = {f"s{i}": {"bool": True} for i in range(scalars)}
    kinds = [choose(draw, ["ints", "strings", "bools"]) for _ in range(choose(draw, [1, 2, 3]))]
    rest = values - scalars
    for j, kind in enumerate(kinds):
        size = rest // len(kinds) + (1 if j < rest % len(kinds) else 0)
        attrs[f"l{j}"] = {kind: [{"ints": 1, "strings": "v", "bools": False}[kind]] * size}
    return attrs


def _device_node(draw: st.DrawFn, dev: dict[str, Any], per_device: bool) -> None:
    """Exactly one of nodeName / nodeSelector / allNodes mostly (per-device selection), else edges."""
    n = choose(draw, [1, 1, 1, 1, 1, 0, 2] if per_device else [1, 0])
    members = ["nodeName", "nodeSelector", "allNodes"]
    for _ in range(n):
        member = choose(draw, members)
        if member == "nodeName":
            dev["nodeName"] = draw(NODE_NAME) if chance(draw, 90) else ""
        elif member == "nodeSelector":
            dev["nodeSelector"] = node_selector(draw)
        else:
            dev["allNodes"] = choose(draw, [True, True, True, False])


DEVICE_LIST_SHAPES = ["few"] * 6 + ["plain-limit", "advanced-limit"]


def device_list(draw: st.DrawFn, driver: str, per_device: bool, sets: list[str]) -> list[Any]:
    """A few drawn devices, or a list at the device limits (127-129 plain, 63-65 with one advanced)."""
    shape = choose(draw, DEVICE_LIST_SHAPES)
    if shape == "few":
        out = [device(draw, driver, per_device, sets, f"dev-{i}") for i in range(choose(draw, [1, 1, 1, 2, 2, 3, 4]))]
        if len(out) > 1 and chance(draw, 10):
            out[-1]["name"] = out[0].get("name")  # a duplicate device name
        return out
    node = {"allNodes": True} if per_device else {}
    n = choose(draw, [127, 128, 129] if shape == "plain-limit" else [63, 64, 65, 100])
    out = [{"name": f"dev-{i}", **node} for i in range(n)]
    if chance(draw, 30):  # one drawn device: the declarative checks run on every device, past the limit
        i = choose(draw, range(n))
        out[i] = device(draw, driver, per_device, sets, f"dev-{i}")
    if shape == "plain-limit":
        return out
    at = out[choose(draw, range(n))]
    kind = choose(draw, ["taints", "consumesCounters", "list-attribute"])
    if kind == "taints":
        at["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    elif kind == "consumesCounters":
        at["consumesCounters"] = [{"counterSet": (sets or ["set-a"])[0], "counters": {"memory": {"value": "1"}}}]
    else:
        at["attributes"] = {"l": {"ints": [1, 2]}}
    return out


# --- the slice -----------------------------------------------------------------------------

SELECTION_MEMBERS = ["nodeName", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"]


def node_selection(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    """Exactly one of the four members mostly; none, two, false/"" and null sometimes."""
    for _ in range(choose(draw, [1, 1, 1, 1, 1, 1, 0, 2])):
        m = choose(draw, SELECTION_MEMBERS)
        if m == "nodeName":
            spec[m] = draw(NODE_NAME) if chance(draw, 90) else choose(draw, ["", None])
        elif m == "nodeSelector":
            spec[m] = node_selector(draw)
        else:
            spec[m] = choose(draw, [True, True, True, True, False, None])


def pool(draw: st.DrawFn) -> Any:
    if chance(draw, 6):
        return choose(draw, [ABSENT, {}])
    out: dict[str, Any] = {}
    put(out, "name", draw(POOL_NAME))
    put(out, "generation", draw(GENERATION))
    put(out, "resourceSliceCount", draw(SLICE_COUNT))
    return out


def partition_type(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    """partitionTypeAttribute, with the devices that consume counters carrying it (or not)."""
    driver = spec.get("driver") if isinstance(spec.get("driver"), str) else ""
    name = choose(draw, [f"{driver}/ptype", "gpu.example.com/ptype", "other.example.org/ptype"] * 3
                  + ["ptype", "", "/ptype", "a/b/c", "Bad_Domain/ptype", f"{driver}/9p", None])
    spec["partitionTypeAttribute"] = name
    for dev in spec.get("devices") or []:
        if not (isinstance(dev, dict) and dev.get("consumesCounters")) or chance(draw, 10):
            continue
        attrs = dev.get("attributes") if isinstance(dev.get("attributes"), dict) else {}
        key = choose(draw, [name, name, name, "ptype", "other"])
        if isinstance(key, str) and key:
            attrs[key] = dict(choose(draw, [{"string": "mig-1g"}, {"string": "mig-1g"}, {"int": 1}, {}]))
            dev["attributes"] = attrs


def skip_operations(draw: st.DrawFn) -> Any:
    ops = [draw(SKIP_OP) for _ in range(choose(draw, [1, 1, 2, 3, 0]))]
    return ops if chance(draw, 80) else choose(draw, [None, []])


CONTENTS = ["devices"] * 18 + ["counters", "counters", "both", "both", "neither", "null-devices", "empty-devices"]


def spec(draw: st.DrawFn) -> dict[str, Any]:
    # The rare members are decided first: hypothesis mutates the tail of earlier examples more.
    with_partition_type, with_skip = chance(draw, 12), chance(draw, 10)
    out: dict[str, Any] = {}
    put(out, "driver", draw(DRIVER))
    put(out, "pool", pool(draw))
    node_selection(draw, out)
    driver = out["driver"] if isinstance(out.get("driver"), str) else "gpu.example.com"
    content = choose(draw, CONTENTS)
    sets = ["set-a", "set-b"]
    if content in ("counters", "both"):
        out["sharedCounters"] = counter_sets(draw) if chance(draw, 90) else choose(draw, [[], None])
        sets = [s["name"] for s in out["sharedCounters"] or [] if isinstance(s.get("name"), str)]
    if content in ("devices", "both"):
        out["devices"] = device_list(draw, driver, out.get("perDeviceNodeSelection") is True, sets)
    elif content in ("null-devices", "empty-devices"):
        out["devices"] = None if content == "null-devices" else []
    if with_partition_type:
        partition_type(draw, out)
    if with_skip:
        out["skipNodeOperations"] = skip_operations(draw)
    return out


@st.composite
def resource_slices(draw: st.DrawFn) -> dict[str, Any]:
    """One ResourceSlice at the edges (module docstring); a few fail to decode."""
    roll = draw(PERCENT)
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                           "metadata": {"name": "generated-slice"}, "spec": spec(draw)}
    if roll < 5:
        wrong_type(draw, obj["spec"])
    elif roll < 7:
        unknown_field(draw, obj["spec"])
    elif roll < 9:
        int_overflow(draw, obj["spec"], C_IDENTS_OK)
    elif roll < 10 and chance(draw, 30):  # no spec at all, or a null one
        if chance(draw, 50):
            obj["spec"] = None
        else:
            del obj["spec"]
    elif roll < 20:  # a null, {} or "" as a list item or map value (`gen_zeros`)
        zero_item(lambda options: choose(draw, options), obj)
    return obj
