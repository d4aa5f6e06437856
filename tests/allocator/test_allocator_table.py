"""One table of allocator cases (docs/allocator.md §2-§10), each re-checked by ``assert_satisfies``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import (
    DRV,
    claim,
    counters,
    dev,
    device_class,
    first_available,
    node,
    req,
    result,
    rslice,
)
from tests.allocator.checks import assert_satisfies
from webhook.allocator import Call, Limits, allocate, model_for
from webhook.allocator.allocation import CUT_SHORT, ERROR, INVALID_POOL, OK, UNSATISFIABLE
from webhook.allocator.engine import PER_CLAIM
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

BASE = [node("node-1", zone="a"), node("node-2", zone="b"), device_class()]
GPUS = [rslice("s1", [dev("gpu-0"), dev("gpu-1"), dev("gpu-2"), dev("gpu-3")])]
CG_ON = {"DRADeviceCompatibilityGroups": True}
SEED_COUNTERS = [rslice("counters", shared={"gpu-1-counters": {"memory": "8Gi"}}, count=2),
                 rslice("devices", [dev("device-1", consumesCounters=[counters("gpu-1-counters", memory="6Gi")]),
                                    dev("device-2", consumesCounters=[counters("gpu-1-counters", memory="6Gi")])],
                        count=2)]
MIG_VGPU = [rslice("gpu-counters", shared={"gpu-0-memory": {"memory": "8Gi"}}, count=2),
            rslice("gpu-devices", [
                dev("gpu-0-mig", consumesCounters=[counters("gpu-0-memory", ["mig"], memory="2Gi")]),
                dev("gpu-0-vgpu", consumesCounters=[counters("gpu-0-memory", ["vgpu"], memory="2Gi")]),
                dev("gpu-0-mig-b", consumesCounters=[counters("gpu-0-memory", ["mig"], memory="2Gi")])],
                   count=2)]
ETH1 = [rslice("net", [dev("eth1", allowMultipleAllocations=True, attributes={"name": {"string": "eth1"}},
                           capacity={"bandwidth": {"value": "10G", "requestPolicy": {
                               "default": "1M", "validRange": {"min": "1M", "step": "8", "max": "5G"}}}})])]
SIZES = [rslice("s1", [dev("small", capacity={"memory": {"value": "40Gi"}}),
                       dev("big", capacity={"memory": {"value": "80Gi"}})])]
TYPED = [rslice("s1", [dev("a-0", attrs={"type": "a", "pf": "pf0"}), dev("b-0", attrs={"type": "b", "pf": "pf0"}),
                       dev("b-1", attrs={"type": "b", "pf": "pf1"})])]
VALUES = [rslice("net", [dev("nic", allowMultipleAllocations=True, capacity={"vfs": {
    "value": "16", "requestPolicy": {"default": "1", "validValues": ["1", "4", "8"]}}})])]


def C(*requests: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return claim(kw.pop("name", "claim-0"), *requests, **kw)


CASES = [
    # id, state, claims, gates, kw, expected devices per claim (None = infeasible), expected kind
    ("empty", BASE, [], {}, {}, [], OK),
    ("simple", BASE + GPUS, [C(req())], {}, {}, [["gpu-0"]], OK),
    ("no-devices-anywhere", BASE, [C(req())], {}, {}, None, UNSATISFIABLE),
    ("two-requests-in-order", BASE + GPUS, [C(req("a"), req("b", count=2))], {}, {},
     [["gpu-0", "gpu-1", "gpu-2"]], OK),
    ("five-of-four-explores-combinations", BASE + GPUS, [C(req(count=5))], {}, {"node": "node-1", "steps": 5},
     None, UNSATISFIABLE),
    ("backtracking-match-attribute", BASE + TYPED,
     [C(req("a"), req("b"), constraints=[{"matchAttribute": f"{DRV}/type"}])], {}, {}, [["b-0", "b-1"]], OK),
    ("budget-exceeded", BASE + GPUS, [C(req(count=5))], {}, {"node": "node-1", "max_steps": 3}, None, CUT_SHORT),
    # §4 counters
    ("counters-one-of-two-6gi", BASE + SEED_COUNTERS, [C(req())], {}, {}, [["device-1"]], OK),
    ("counters-two-6gi-on-8gi-exhausted", BASE + SEED_COUNTERS, [C(req(count=2))], {}, {}, None, UNSATISFIABLE),
    ("counters-allocated-device-consumes", BASE + SEED_COUNTERS + [
        claim("old", req(), allocation=[result("device-1")])], [C(req())], {}, {}, None, UNSATISFIABLE),
    ("counters-across-claims-of-attempt", BASE + SEED_COUNTERS, [C(req(), name="c1"), C(req(), name="c2")],
     {}, {}, None, UNSATISFIABLE),
    ("counters-pd-off-pool-unusable", BASE + SEED_COUNTERS, [C(req())], {"DRAPartitionableDevices": False},
     {}, None, UNSATISFIABLE),
    ("counters-admin-allocation-ignored", BASE + SEED_COUNTERS + [
        claim("old", req(), allocation=[result("device-1", adminAccess=True)])], [C(req())], {}, {},
     [["device-1"]], OK),
    # §5 compatibility groups
    ("groups-off-pool-incomplete", BASE + MIG_VGPU, [C(req())], {}, {}, None, UNSATISFIABLE),
    ("groups-on-first-device", BASE + MIG_VGPU, [C(req())], CG_ON, {}, [["gpu-0-mig"]], OK),
    ("groups-on-two-mig-skip-vgpu", BASE + MIG_VGPU, [C(req(count=2))], CG_ON, {},
     [["gpu-0-mig", "gpu-0-mig-b"]], OK),
    ("groups-on-allocated-vgpu-blocks-mig", BASE + MIG_VGPU + [
        claim("old", req(), allocation=[result("gpu-0-vgpu")])], [C(req())], CG_ON, {}, None, UNSATISFIABLE),
    ("groups-on-three-devices-no-common-group", BASE + MIG_VGPU, [C(req(count=3))], CG_ON, {}, None,
     UNSATISFIABLE),
    # §7 consumable capacity
    ("capacity-seed-share-1g", BASE + ETH1, [C(req(capacity={"requests": {"bandwidth": "1G"}}))], {}, {},
     [["eth1"]], OK),
    ("capacity-unrequested-uses-default", BASE + ETH1, [C(req())], {}, {"consumed": {"bandwidth": "1M"}},
     [["eth1"]], OK),
    ("capacity-step-rounds-up", BASE + ETH1, [C(req(capacity={"requests": {"bandwidth": "1000001"}}))], {},
     {"consumed": {"bandwidth": "1000008"}}, [["eth1"]], OK),
    ("capacity-max-violated", BASE + ETH1, [C(req(capacity={"requests": {"bandwidth": "6G"}}))], {}, {},
     None, UNSATISFIABLE),
    ("capacity-two-requests-share-one-device", BASE + ETH1,
     [C(req("a", capacity={"requests": {"bandwidth": "4G"}}), req("b", capacity={"requests": {"bandwidth": "4G"}}))],
     {}, {}, [["eth1", "eth1"]], OK),
    ("capacity-exhausted-by-allocated-shares", BASE + ETH1 + [claim("old", req(), allocation=[
        result("eth1", pool="pool", consumedCapacity={"bandwidth": "5G"}, shareID="u1"),
        result("eth1", pool="pool", consumedCapacity={"bandwidth": "4G"}, shareID="u2")])],
     [C(req(capacity={"requests": {"bandwidth": "2G"}}))], {}, {}, None, UNSATISFIABLE),
    ("capacity-gate-off-is-error", BASE + ETH1, [C(req(capacity={"requests": {"bandwidth": "1G"}}))],
     {"DRAConsumableCapacity": False}, {}, None, ERROR),
    ("capacity-valid-values-round-up", BASE + VALUES, [C(req(capacity={"requests": {"vfs": "3"}}))], {},
     {"consumed": {"vfs": "4"}}, [["nic"]], OK),
    ("capacity-filters-non-shareable", BASE + SIZES, [C(req(capacity={"requests": {"memory": "60Gi"}}))], {},
     {}, [["big"]], OK),
    ("capacity-undeclared-name-skips", BASE + SIZES, [C(req(capacity={"requests": {"cores": "1"}}))], {}, {},
     None, UNSATISFIABLE),
    # §6 requests, constraints, limits
    ("first-available-falls-back", BASE + GPUS, [C(first_available("r", req("big", count=8), req("small", count=2)))],
     {}, {"requests": ["r/small", "r/small"]}, [["gpu-0", "gpu-1"]], OK),
    ("all-takes-every-device", BASE + GPUS, [C(req(mode="All"))], {}, {"node": "node-1"},
     [["gpu-0", "gpu-1", "gpu-2", "gpu-3"]], OK),
    ("all-with-no-device-fails", BASE + GPUS, [C(req(mode="All", selectors=['device.driver == "x"']))], {},
     {"node": "node-1"}, None, UNSATISFIABLE),
    ("all-with-incomplete-pool-is-error", BASE + GPUS + [rslice("half", [dev("x")], pool="p2", count=2)],
     [C(req(mode="All"))], {}, {"node": "node-1"}, None, ERROR),
    ("all-in-use-device-fails", BASE + GPUS + [claim("old", req(), allocation=[result("gpu-1")])],
     [C(req(mode="All"))], {}, {"node": "node-1"}, None, UNSATISFIABLE),
    ("admin-access-ignores-in-use", BASE + GPUS[:0] + [rslice("s1", [dev("gpu-0")]),
                                                        claim("old", req(), allocation=[result("gpu-0")])],
     [C(req(adminAccess=True))], {}, {}, [["gpu-0"]], OK),
    ("in-use-device-skipped", BASE + GPUS + [claim("old", req(), allocation=[result("gpu-0")])], [C(req())],
     {}, {}, [["gpu-1"]], OK),
    ("taint-not-tolerated-skipped", BASE + [rslice("s1", [
        dev("gpu-0", taints=[{"key": "broken", "effect": "NoSchedule"}]), dev("gpu-1")])], [C(req())], {}, {},
     [["gpu-1"]], OK),
    ("taint-tolerated", BASE + [rslice("s1", [dev("gpu-0", taints=[{"key": "broken", "effect": "NoSchedule"}])])],
     [C(req(tolerations=[{"key": "broken", "operator": "Exists"}]))], {}, {}, [["gpu-0"]], OK),
    ("taint-effect-none-ignored", BASE + [rslice("s1", [dev("gpu-0", taints=[{"key": "k", "effect": "None"}])])],
     [C(req())], {}, {}, [["gpu-0"]], OK),
    ("distinct-attribute-different-pfs", BASE + TYPED,
     [C(req("a"), req("b"), constraints=[{"distinctAttribute": f"{DRV}/pf"}])], {}, {}, [["a-0", "b-1"]], OK),
    ("constraint-missing-attribute-rejects", BASE + GPUS,
     [C(req(), constraints=[{"matchAttribute": f"{DRV}/type"}])], {}, {}, None, UNSATISFIABLE),
    ("claim-limit-32", BASE + GPUS, [C(req(count=33))], {}, {}, None, ERROR),
    ("unknown-device-class-is-error", BASE + GPUS, [C(req(cls="nope"))], {}, {}, None, ERROR),
    ("cel-missing-key-is-error", BASE + GPUS, [C(req(selectors=[f'device.attributes["{DRV}"].nope == 1']))],
     {}, {}, None, ERROR),
    ("selector-narrows-choice", BASE + TYPED, [C(req(selectors=[f'device.attributes["{DRV}"].type == "b"']))],
     {}, {}, [["b-0"]], OK),
    # §2 pools
    ("pool-newest-generation-wins", BASE + [rslice("old", [dev("g1")], generation=1),
                                            rslice("new", [dev("g2")], generation=2)], [C(req())], {}, {},
     [["g2"]], OK),
    ("pool-incomplete-skipped", BASE + [rslice("half", [dev("x")], count=2)], [C(req())], {}, {}, None,
     UNSATISFIABLE),
    ("pool-invalid-duplicate-names", BASE + [rslice("s1", [dev("x"), dev("x")])], [C(req())], {}, {}, None,
     INVALID_POOL),
    ("pool-invalid-unknown-counter-set", BASE + [rslice("s1", [dev("x", consumesCounters=[
        counters("nope", memory="1")])])], [C(req())], {}, {}, None, INVALID_POOL),
    ("pool-node-selector-matches-zone", BASE + [rslice("s1", [dev("x")], node_name=None, nodeSelector={
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]})],
     [C(req())], {}, {"node_chosen": "node-2"}, [["x"]], OK),
    ("pool-match-fields-metadata-name", BASE + [rslice("s1", [dev("x")], node_name=None, nodeSelector={
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]})],
     [C(req())], {}, {"node_chosen": "node-2"}, [["x"]], OK),
    ("pool-all-nodes", BASE + [rslice("s1", [dev("x")], node_name=None, allNodes=True)], [C(req())], {},
     {"node_chosen": "node-1"}, [["x"]], OK),
    ("pool-per-device-node-selection", BASE + [rslice("s1", [dev("x", nodeName="node-2"), dev("y", allNodes=True)],
                                                       node_name=None, perDeviceNodeSelection=True)],
     [C(req(count=2))], {}, {"node_chosen": "node-2"}, [["x", "y"]], OK),
    # §9 PodGroup modes: joint backtracks across claims, per-pod does not
    ("podgroup-joint-backtracks-across-claims", BASE + TYPED[:0] + [rslice("s1", [dev("a-0", attrs={"type": "a"}),
                                                                           dev("b-0", attrs={"type": "b"})])],
     [C(req(), name="any"), C(req(selectors=[f'device.attributes["{DRV}"].type == "a"']), name="needs-a")],
     {}, {"node": "node-1"}, [["b-0"], ["a-0"]], OK),
    ("podgroup-per-pod-no-revisit", BASE + [rslice("s1", [dev("a-0", attrs={"type": "a"}),
                                                          dev("b-0", attrs={"type": "b"})])],
     [C(req(), name="any"), C(req(selectors=[f'device.attributes["{DRV}"].type == "a"']), name="needs-a")],
     {}, {"node": "node-1", "mode": PER_CLAIM}, None, UNSATISFIABLE),
]


@pytest.mark.parametrize(("state", "claims", "gates", "kw", "want", "kind"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_allocator_table(state: list[dict[str, Any]], claims: list[dict[str, Any]], gates: dict[str, bool],
                         kw: dict[str, Any], want: list[list[str]] | None, kind: str) -> None:
    snap = ClusterSnapshot.from_objects(state)
    model = model_for(snap, FeatureGates().with_overrides(gates))
    node = kw.get("node")
    out = allocate(claims, model, Call(nodes=None if node is None else (node,), mode=kw.get("mode", "joint"),
                                       limits=Limits(kw.get("max_steps", 100_000))))
    assert out.kind == kind, (out.kind, out.message, out.reason_texts())
    assert out.feasible is (want is not None)
    if "steps" in kw:
        assert out.steps == kw["steps"]
    if want is None:
        assert out.reason_texts()
        return
    allocs = out.allocations()
    assert [[r["device"] for r in a["results"]] for a in allocs] == want
    assert_satisfies(state, claims, allocs)
    if "node_chosen" in kw:
        assert out.node == kw["node_chosen"]
    if "consumed" in kw:
        assert allocs[0]["results"][0]["consumedCapacity"] == kw["consumed"]
    if "requests" in kw:
        assert [r["request"] for r in allocs[0]["results"]] == kw["requests"]
