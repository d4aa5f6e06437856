"""Node equivalence classes (``webhook/allocator/classes.py``): who shares a class, which requests may
use them, and that outcomes are the same with classes on and off (verdict, node, devices, reasons,
steps), on a node pool of identical machines with some nodes made different."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import gen
from tests.allocator.builders import claim, dev, device_class, node, req, rslice, searched_nodes
from webhook.allocator import JOINT, PER_CLAIM, Allocation, Call, Limits, allocate, devices, engine, model_for
from webhook.allocator.claims import parse_claim
from webhook.allocator.classes import SLICE_KEYED, class_of, identifying, node_names, transferable
from webhook.allocator.devices import Device, RareDevice, Slice
from webhook.allocator.feasibility import claims_for
from webhook.allocator.pools import pools_for
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.state.compact import COMPACT_KINDS, Compactor

GATES = FeatureGates.parse(gen.GATES)
GPU = gen.GPU_DRIVER


def _gpu_slice(objs: list[dict[str, Any]], n: str) -> dict[str, Any]:
    return next(o for o in objs if o["metadata"].get("name") == f"{n}-gpu-devices")


def _allocated(n: str, device: str, name: str) -> dict[str, Any]:
    c = gen.grouped_claim(name)
    c["status"] = {"allocation": {"devices": {"results": [
        {"request": "mig", "driver": GPU, "pool": f"{n}-gpus", "device": device}]}}}
    return c


def pool_cluster() -> list[dict[str, Any]]:
    """Eight generated nodes (GPU UUIDs differ per node); nodes 2-5 made different one way each."""
    objs = gen.cluster(8)
    _gpu_slice(objs, gen.node_name(2))["spec"]["devices"][1]["taints"] = [
        {"key": "broken", "value": "yes", "effect": "NoSchedule"}]
    _gpu_slice(objs, gen.node_name(3))["spec"]["devices"][1]["attributes"]["profile"] = {"string": "2g.20gb"}
    objs.append(_allocated(gen.node_name(4), "gpu-0-mig-0", "held-4"))
    objs.append(_allocated(gen.node_name(5), "gpu-0-mig-0", "held-5"))
    return objs


def _snapshot(objs: list[dict[str, Any]], compacted: bool = False) -> ClusterSnapshot:
    """A snapshot of copies of ``objs``; ``compacted``: as the file and live states store them
    (equal sub-structures shared: devices then share capacity maps and counter lists)."""
    copies = copy.deepcopy(objs)
    if compacted:
        c = Compactor()
        copies = [c.object(o) if o.get("kind") in COMPACT_KINDS else o for o in copies]
    return ClusterSnapshot.from_objects(copies, source="test")


@pytest.mark.parametrize("compacted", [False, True], ids=["plain", "compacted"])
def test_identical_nodes_share_a_class_and_differences_split_it(compacted: bool) -> None:
    model = model_for(_snapshot(pool_cluster(), compacted), GATES)
    cls = {i: class_of(model, gen.node_name(i)) for i in range(8)}
    assert cls[0] is not None
    assert cls[0] == cls[1] == cls[6] == cls[7]  # only their names, pool names and UUIDs differ
    assert len({cls[0], cls[2], cls[3], cls[4]}) == 4  # taint, attribute, allocated device: each differs
    assert cls[4] == cls[5]  # the same device allocated on both: alike again
    assert {f"{GPU}/uuid", f"{GPU}/parentUUID"} <= identifying(model)
    assert f"{GPU}/profile" not in identifying(model)


def test_incomplete_pool_has_no_class() -> None:
    objs = gen.cluster(2)
    objs.remove(next(o for o in objs if o["metadata"].get("name") == "node-0001-gpu-counters"))
    model = model_for(_snapshot(objs), GATES)
    assert class_of(model, "node-0000") is not None
    assert class_of(model, "node-0001") is None


def test_node_features_split_a_class() -> None:
    objs = gen.cluster(2)
    objs[[o.get("kind") for o in objs].index("Node")]["status"] = {"declaredFeatures": ["DRAOptionalNodeOperations"]}
    model = model_for(_snapshot(objs), GATES)
    assert class_of(model, "node-0000") != class_of(model, "node-0001")


def test_per_device_node_selection_resolves_per_node() -> None:
    devs = [dev("d0", nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}]})]
    objs = [node("n-1", zone="a"), node("n-2", zone="b"), node("n-3", zone="a"), device_class(),
            rslice("s", devs, node_name=None, allNodes=True, perDeviceNodeSelection=True)]
    objs[-1]["spec"].pop("allNodes")
    model = model_for(_snapshot(objs), FeatureGates.parse("DRAPartitionableDevices=true"))
    assert class_of(model, "n-1") == class_of(model, "n-3") != class_of(model, "n-2")


SAFE, UNSAFE = True, False
SELECTORS = [
    ("class-and-request-selectors-on-shared-attributes", [f'device.attributes["{GPU}"].profile == "1g.10gb"'],
     SAFE),
    ("capacity-and-driver", [f'device.capacity["{GPU}"].memory.compareTo(quantity("10Gi")) >= 0',
                             f'device.driver == "{GPU}"'], SAFE),
    ("identifying-attribute-by-field", [f'device.attributes["{GPU}"].uuid == "x"'], UNSAFE),
    ("identifying-attribute-by-index", [f'device.attributes["{GPU}"]["parentUUID"] == "x"'], UNSAFE),
    ("attribute-map-as-a-whole", [f'device.attributes["{GPU}"].exists(k, k == "uuid")'], SAFE),
    ("attribute-map-iterated-by-value", [f'device.attributes["{GPU}"].exists(k, '
                                         f'device.attributes["{GPU}"][k] == "x")'], UNSAFE),
    ("domain-map-as-a-whole", ['size(device.attributes) > 0'], UNSAFE),
    ("device-used-as-a-value", ['[device].size() > 0'], UNSAFE),
]


@pytest.mark.parametrize("exprs, safe", [c[1:] for c in SELECTORS], ids=[c[0] for c in SELECTORS])
def test_transferable_only_when_no_selector_can_read_an_identifying_attribute(exprs: list[str], safe: bool) -> None:
    snap = _snapshot(pool_cluster())
    model = model_for(snap, GATES)
    c = gen.grouped_claim("probe")
    c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    assert transferable(model, [parse_claim(c, model)]) is safe


def _uuid_claim() -> dict[str, Any]:
    """Selects by an identifying attribute: no node's verdict stands for another's."""
    return claim("uuid", req("r", cls="mig.gpu.example.com", selectors=[f'device.attributes["{GPU}"].uuid == "none"']))


def _flat(o: Allocation) -> str:
    everything = o.ranked()
    for k in (1, 3, 5):  # the first few, as the feasibility warnings take them, without renaming all
        assert o.ranked(k) == everything[:k]
    return json.dumps([o.feasible, o.node, o.kind, o.steps, o.nodes_tried, o.message, o.reason_texts(),
                       o.allocations()])


def _outcomes(objs: list[dict[str, Any]], claims: list[dict[str, Any]], mode: str, steps: int,
              compacted: bool = False) -> str:
    snap = _snapshot(objs, compacted)
    return _flat(allocate(claims, model_for(snap, GATES), Call(mode=mode, limits=Limits(steps))))


CLAIMS = {
    "infeasible-search": [gen.infeasible_claim()],
    "infeasible-no-match": [gen.unmatchable_claim()],
    "feasible": [gen.grouped_claim()],
    "fits-only-where-nothing-is-held": [gen.infeasible_claim("seven", count=7)],
    "untransferable-selector": [_uuid_claim()],
    "podgroup": "podgroup",
}


@pytest.mark.parametrize("steps", [200_000, 3_000, 700], ids=["budget-large", "budget-mid", "budget-small"])
@pytest.mark.parametrize("mode", [JOINT, PER_CLAIM])
@pytest.mark.parametrize("case", list(CLAIMS))
def test_same_outcome_with_classes_on_and_off(monkeypatch: pytest.MonkeyPatch, case: str, mode: str,
                                              steps: int) -> None:
    objs = pool_cluster()
    # Nodes 0 and 1 hold one partition of every GPU: a 7-partition claim fails there alike and
    # fits on node 2 (its one tainted partition is on GPU 0).
    objs += [_allocated(gen.node_name(n), f"gpu-{g}-mig-0", f"held-{n}-{g}") for n in (0, 1) for g in range(8)]
    raw = CLAIMS[case]
    if raw == "podgroup":
        raw, _ = claims_for(gen.podgroup(claims=3), _snapshot(objs))
    assert isinstance(raw, list)
    on = _outcomes(objs, raw, mode, steps)
    # Compacted, devices share their converted capacity and counters (``devices._by_id``).
    assert _outcomes(objs, raw, mode, steps, compacted=True) == on
    monkeypatch.setattr(engine, "NODE_CLASSES", False)
    off = _outcomes(objs, raw, mode, steps)
    assert on == off


@pytest.mark.parametrize("case, searched", [("infeasible-search", 4), ("infeasible-no-match", 4),
                                            ("untransferable-selector", 8)],
                         ids=["search", "no-match", "untransferable-searches-every-node"])
def test_each_class_is_searched_once(monkeypatch: pytest.MonkeyPatch, case: str, searched: int) -> None:
    calls = searched_nodes(monkeypatch)
    snap = _snapshot(pool_cluster())
    out = allocate(list(CLAIMS[case]), model_for(snap, GATES), Call(limits=Limits(200_000)))
    assert not out.feasible and out.nodes_tried == 8
    assert len(calls) == searched  # classes {0, 1, 6, 7}, {2}, {3}, {4, 5}


def test_attribute_types_split_a_class() -> None:
    """``{"int": 1}`` and ``{"int": true}`` are equal in Python, not to CEL (the second is unsupported)."""
    objs = [node("n-1"), node("n-2"), device_class(),
            rslice("a", [dev("d", attributes={"x": {"int": 1}})], node_name="n-1", pool="p1"),
            rslice("b", [dev("d", attributes={"x": {"int": True}})], node_name="n-2", pool="p2")]
    model = model_for(_snapshot(objs), FeatureGates.parse(""))
    assert class_of(model, "n-1") != class_of(model, "n-2")


# ---------------------------------------------------------------- the key covers what the search reads
class _Reads:
    """Device and slice fields read while ``on`` (slot descriptors wrapped, see ``_record_reads``)."""

    def __init__(self) -> None:
        self.on = False
        self.device: set[str] = set()
        self.slice: set[str] = set()


def _record_reads(monkeypatch: pytest.MonkeyPatch, reads: _Reads) -> None:
    defaults = {name: getattr(Device, name) for name in Device.RARE}
    for name, value in defaults.items():  # a compact device reads these from its class: record them too
        def default(obj: Any, name: str = name, value: Any = value) -> Any:
            if reads.on:
                reads.device.add(name)
            return value

        monkeypatch.setattr(Device, name, property(default))
    for cls, seen in ((Device, reads.device), (RareDevice, reads.device), (Slice, reads.slice)):
        for name in cls.__slots__:
            slot = cls.__dict__[name]

            def get(obj: Any, slot: Any = slot, name: str = name, seen: set[str] = seen, cls: Any = cls) -> Any:
                if reads.on:
                    seen.add(name)
                return slot.__get__(obj, cls)

            monkeypatch.setattr(cls, name, property(get, lambda obj, v, slot=slot: slot.__set__(obj, v)))


def _representative_searches() -> list[tuple[Any, list[dict[str, Any]], str]]:
    """The allocator table's and the upstream rows' cases, and random states with counters,
    groups, shared capacity, taints and list attributes, in both modes: (model, claims, mode)."""
    import random

    from tests.allocator.test_allocator_budget import _random_case
    from tests.allocator.test_allocator_table import CASES
    from tests.allocator.upstream_rows import ROWS
    out = []
    for _id, state, claims, gates, kw, *_ in CASES:
        out.append((model_for(ClusterSnapshot.from_objects(state), FeatureGates().with_overrides(gates)), claims,
                    kw.get("mode", JOINT)))
    for _id, state, inputs, gates, _want in ROWS:
        found = [o for o in inputs if o.get("kind") == "ResourceClaim"]
        out.append((model_for(ClusterSnapshot.from_objects(state), FeatureGates().with_overrides(gates)), found,
                    JOINT))
    r = random.Random(3)
    for _ in range(60):
        objs, claims, gates = _random_case(r)
        model = model_for(ClusterSnapshot.from_objects(objs), FeatureGates().with_overrides(gates))
        out += [(model, claims, JOINT), (model, claims, PER_CLAIM)]
    return out


def test_the_search_reads_only_device_fields_the_node_class_key_covers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every device field a search reads (``Search.run``, and ``Search.reasons`` that explains a
    failure) is declared: in ``Device.SEARCHED`` (then the node-class key holds it, see the next
    test) or in ``Device.UNKEYED`` (identity, caches, derived values). A new field the search reads
    (say, taints from DeviceTaintRules) fails here until it is declared."""
    from webhook.allocator.search import Search
    reads = _Reads()
    _record_reads(monkeypatch, reads)
    run, explain = Search.run, Search.reasons.fget
    assert explain is not None

    def recorded(fn: Any) -> Any:
        def call(self: Search) -> Any:
            reads.on = True
            try:
                return fn(self)
            finally:
                reads.on = False
        return call

    monkeypatch.setattr(Search, "run", recorded(run))
    monkeypatch.setattr(Search, "reasons", property(recorded(explain)))
    monkeypatch.setattr(engine, "NODE_CLASSES", False)  # every node searched: nothing skipped
    for model, claims, mode in _representative_searches():
        allocate(claims, model, Call(mode=mode, limits=Limits(10**5)))
    assert not set(Device.SEARCHED) & set(Device.UNKEYED)
    assert reads.device - set(Device.SEARCHED) - set(Device.UNKEYED) == set()
    assert reads.slice - set(SLICE_KEYED) - {"pool", "_devices"} == set()  # pool: never named in a class's reasons
    # The set is representative: the instrumentation saw the search read what it checks.
    assert {"name", "attrs", "caps", "raw_capacity", "consumes", "allow_multi", "binding", "taints",
            "skip_node_ops", "node_name"} <= reads.device


ZONE_B = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}
ZONE_Z = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]}]}
PLACEMENT: dict[str, tuple[dict[str, Any], Any, bool]] = {
    # field: (how a device of a per-device slice is placed, a new value of the field, whether the
    # nodes n-1 (zone a) and n-2 (zone b) share a class before the change)
    "node_name": ({"nodeName": "n-9"}, "n-2", True),
    "node_selector": ({"nodeSelector": ZONE_Z}, ZONE_B, True),
    "all_nodes": ({"nodeSelector": ZONE_B}, True, False),
}


def _placement_model(field: str) -> tuple[Any, Any, Any]:
    """(model of n-1 and n-2 seeing one per-device slice, its device placed as ``PLACEMENT`` says,
    the new value of ``field``); a device on every node keeps the slice in both nodes' pools."""
    from webhook.allocator.nodesel import parse_node_selector
    placed, value, _ = PLACEMENT[field]
    objs = [node("n-1", zone="a"), node("n-2", zone="b"), device_class(),
            rslice("s", [dev("anchor", allNodes=True), dev("placed", **placed)], node_name=None,
                   perDeviceNodeSelection=True)]
    model = model_for(_snapshot(objs), FeatureGates.parse("DRAPartitionableDevices=true"))
    target = next(d for p in pools_for(model, model.node("n-2")) for d in p.candidates if d.name == "placed")
    return model, target, parse_node_selector(value) if field == "node_selector" else value


def test_only_devices_with_a_rare_field_hold_the_rare_slots() -> None:
    """A device that sets no ``Device.RARE`` field is the compact ``Device`` and answers their
    defaults; one that sets any is a ``RareDevice`` with its own values."""
    model = model_for(_snapshot([node("n-1"), device_class(), rslice("s", [
        dev("plain"), dev("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        dev("multi", allowMultipleAllocations=True)], node_name="n-1")]), GATES)
    got = {d.name: d for sl in model.all_slices for d in sl.devices}
    assert [type(got[n]) for n in ("plain", "tainted", "multi")] == [Device, RareDevice, RareDevice]
    assert (got["plain"].taints, got["plain"].allow_multi) == ((), False)
    assert (got["tainted"].taints[0].key, got["tainted"].allow_multi) == ("k", False)
    assert (got["multi"].taints, got["multi"].allow_multi) == ((), True)
    assert not hasattr(got["plain"], "__dict__")


@pytest.mark.parametrize("field", Device.SEARCHED)
def test_every_searched_device_field_is_in_the_node_class_key(field: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another value of any ``Device.SEARCHED`` field on one device changes whether two nodes share a
    class: two identical nodes split (a placement field: the nodes' classes follow where the device
    now is). So a field the search reads is never missing from the key."""
    if field in PLACEMENT:
        model, target, changed = _placement_model(field)
        alike = PLACEMENT[field][2]
    else:
        monkeypatch.setattr(devices, "COMPACT_DEVICES", False)  # every field a slot of its own: set below
        model = model_for(_snapshot(gen.cluster(2)), GATES)
        target = [d for p in pools_for(model, model.node(gen.node_name(1))) for d in p.candidates][1]
        value = getattr(target, field)
        # A value equal to no other; a map (attributes, capacity): one more entry.
        changed = {**value, "other": {"string": "x"}} if isinstance(value, dict) else object()
        alike = True
    first, second = node_names(model)[:2]
    assert (class_of(model, first) == class_of(model, second)) is alike
    value = getattr(target, field)
    setattr(target, field, changed)
    try:
        target.shape = None
        model.class_data.clear()
        assert (class_of(model, first) == class_of(model, second)) is not alike
    finally:
        setattr(target, field, value)
        target.shape = None
