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
from webhook.allocator import JOINT, PER_CLAIM, Outcome, allocate, engine, model_for
from webhook.allocator.claims import parse_claim
from webhook.allocator.classes import class_of, identifying, transferable
from webhook.allocator.feasibility import claims_for
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


def _flat(o: Outcome) -> str:
    everything = o.ranked()
    for k in (1, 3, 5):  # the first few, as the feasibility warnings take them, without renaming all
        assert o.ranked(k) == everything[:k]
    return json.dumps([o.feasible, o.node, o.kind, o.steps, o.nodes_tried, o.message, o.reason_texts(),
                       o.allocations()])


def _outcomes(objs: list[dict[str, Any]], claims: list[dict[str, Any]], mode: str, steps: int,
              compacted: bool = False) -> str:
    snap = _snapshot(objs, compacted)
    return _flat(allocate(claims, model_for(snap, GATES), mode=mode, max_steps=steps))


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
    out = allocate(list(CLAIMS[case]), model_for(snap, GATES), max_steps=200_000)
    assert not out.feasible and out.nodes_tried == 8
    assert len(calls) == searched  # classes {0, 1, 6, 7}, {2}, {3}, {4, 5}


def test_attribute_types_split_a_class() -> None:
    """``{"int": 1}`` and ``{"int": true}`` are equal in Python, not to CEL (the second is unsupported)."""
    objs = [node("n-1"), node("n-2"), device_class(),
            rslice("a", [dev("d", attributes={"x": {"int": 1}})], node_name="n-1", pool="p1"),
            rslice("b", [dev("d", attributes={"x": {"int": True}})], node_name="n-2", pool="p2")]
    model = model_for(_snapshot(objs), FeatureGates.parse(""))
    assert class_of(model, "n-1") != class_of(model, "n-2")
