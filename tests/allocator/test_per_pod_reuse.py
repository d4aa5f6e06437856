"""PodGroups claim by claim (per-pod mode) without repeated work: the searches of one node share
what does not depend on what is in use (``nodedata.NodeData``), and a joint solution that took each
claim's first fit in claim order (``Allocation.in_order``) stands for the claim-by-claim check.
Neither may change an outcome."""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, dev, device_class, node, req, rslice
from tests.allocator.test_allocator_budget import _random_case
from webhook.allocator import JOINT, PER_CLAIM, Call, Limits, allocate, model_for
from webhook.allocator.feasibility import claims_for, feasibility_warnings
from webhook.allocator.prune import Pruner
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot


def _cases(seed: int, admin: float = 0.0) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The random states of ``test_allocator_budget`` with 2-4 small claims each (one or two
    devices, maybe of one type, maybe on one parent: most gangs fit, some only jointly), a share
    ``admin`` of them with admin access."""
    r = random.Random(seed)
    out = []
    for _ in range(80):
        objs, _claims, gates = _random_case(r)
        if admin:
            gates["DRAAdminAccess"] = True
        claims = []
        for i in range(r.randint(2, 4)):
            kw: dict[str, Any] = {}
            if i and r.random() < 0.7:  # later claims pickier: the joint search may go back
                kw["selectors"] = [f'device.attributes["{DRV}"].type == "{r.choice("ab")}"']
            if admin and r.random() < admin:
                kw["adminAccess"] = True
            if gates["DRAConsumableCapacity"] and r.random() < 0.3:
                kw["capacity"] = {"requests": {"bw": "4"}}
            cons = [{"matchAttribute": f"{DRV}/parent"}] if r.random() < 0.3 else None
            claims.append(claim(f"c{i}", req(count=r.randint(1, 2), **kw), constraints=cons))
        out.append((model_for(ClusterSnapshot.from_objects(objs), FeatureGates().with_overrides(gates)), claims))
    return out


def _shown(o: Any) -> str:
    return json.dumps([o.feasible, o.node, o.kind, o.steps, o.message, o.reason_texts(),
                       [[(x["request"], x["device"], x.get("consumedCapacity")) for x in a["results"]]
                        for a in o.allocations()]])


@pytest.mark.parametrize("seed", range(4))
def test_a_joint_solution_in_claim_order_is_the_per_pod_one(seed: int) -> None:
    seen = {True: 0, False: 0}
    for model, claims in _cases(seed):
        joint = allocate(claims, model, Call(mode=JOINT, limits=Limits(10**6)))
        if not joint.feasible:
            continue
        seen[joint.in_order] += 1
        if joint.in_order:
            per_pod = allocate(claims, model, Call(mode=PER_CLAIM, limits=Limits(10**6)))
            assert (per_pod.feasible, per_pod.node) == (True, joint.node)
            assert per_pod.allocations() == joint.allocations()
    assert seen[True] >= 5 and seen[False] >= 1  # both kinds of joint solution were seen


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("steps", [10**6, 60, 25])
def test_per_pod_searches_sharing_node_data_decide_as_alone(seed: int, steps: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Devices in use by earlier claims, capacity shares and allocated state of the cluster:
    # the shared state-free evaluation, redone for devices in use, equals evaluating each one.
    cases = _cases(seed)
    shared = [_shown(allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(steps)))) for m, c in cases]
    monkeypatch.setattr(Pruner, "share", False)
    assert [_shown(allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(steps)))) for m, c in cases] == shared


def _podgroup(n: int) -> list[dict[str, Any]]:
    tpl = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"t{i}", "namespace": "default"}, "spec": {"spec": c["spec"]}}
           for i, c in enumerate([claim("any", req()),
                                  claim("needs-a", req(selectors=[f'device.attributes["{DRV}"].type == "a"']))][:n])]
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "default"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": n}}, "disruptionMode": {"single": {}},
                   "resourceClaims": [{"name": f"w{i}", "resourceClaimTemplateName": f"t{i}"} for i in range(n)]}}
    return [*tpl, pg]


@pytest.mark.parametrize(("devices", "in_order", "warned"), [
    # "any" takes a-0 first; "needs-a" then finds nothing, so the joint search goes back and gives
    # "any" b-0: feasible only jointly. Claim by claim, "any" keeps a-0 and "needs-a" fails.
    pytest.param(["a", "b"], False, True, id="joint-went-back-into-a-claim-warns"),
    pytest.param(["b", "a"], True, False, id="first-fits-in-claim-order-no-warning"),
    pytest.param(["a"], None, False, id="joint-infeasible-no-per-pod-warning"),
])
def test_per_pod_warning_only_when_the_joint_search_went_back(devices: list[str], in_order: bool | None,
                                                              warned: bool) -> None:
    objs = [node("node-1"), device_class(),
            rslice("s1", [dev(f"{t}-0", attrs={"type": t}) for t in devices]), *_podgroup(2)]
    snap = ClusterSnapshot.from_objects(objs)
    claims = [claim("any", req()), claim("needs-a", req(selectors=[f'device.attributes["{DRV}"].type == "a"']))]
    joint = allocate(claims, model_for(snap, FeatureGates()))
    assert (joint.in_order if joint.feasible else None) == in_order
    got = feasibility_warnings(objs[-1], snap, FeatureGates(), deadline=time.monotonic() + 10, max_steps=10_000)
    assert any("PodGroup pg fits only jointly, not pod by pod" in w for w in got) == warned, got


@pytest.mark.parametrize("seed", range(4))
def test_shared_usable_flags_equal_evaluating_each_device(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every use of the node's state-free evaluation is checked against ``static_ok`` of each
    # candidate under the search's own state (devices in use, capacity already consumed).
    from webhook.allocator.capacity import CapacityError
    from webhook.allocator.claims import AllocError
    checked = {"in use": 0, "capacity consumed": 0}
    original = Pruner.from_base

    def checking(self: Pruner, leaf: Any, key: Any) -> list[bool] | None:
        got = original(self, leaf, key)
        if got is not None:
            f = self.frame
            try:
                want = [self.static_ok(leaf, d) for d in f.flat]
            except (AllocError, CapacityError):
                want = None
            assert got == want
            keys = {d.dkey for d in f.flat}
            checked["in use"] += bool(keys & f.allocated.dedicated)
            checked["capacity consumed"] += bool(keys & set(f.allocated.aggregated))
        return got

    monkeypatch.setattr(Pruner, "from_base", checking)
    for model, claims in _cases(seed):
        allocate(claims, model, Call(mode=PER_CLAIM, limits=Limits(10**6)))
    assert checked["in use"] > 0 and checked["capacity consumed"] > 0, checked


@pytest.mark.parametrize(("used", "admin", "want"), [
    pytest.param({"s0": "8"}, False, [False, True, True], id="capacity-consumed-leaves-too-little"),
    pytest.param({"s0": "6"}, False, [True, True, True], id="capacity-consumed-leaves-enough"),
    pytest.param({"s0": "-4"}, False, [True, True, True], id="negative-consumption-still-fits"),
    pytest.param({}, False, [True, True, False], id="dedicated-device-in-use"),
    pytest.param({}, True, [True, True, True], id="admin-access-takes-a-device-in-use"),
])
def test_usable_flags_for_devices_in_use(used: dict[str, str], admin: bool, want: list[bool]) -> None:
    from webhook.allocator.claims import parse_claim
    from webhook.allocator.search import Search
    share = {"allowMultipleAllocations": True, "capacity": {"bw": {"value": "10", "requestPolicy": {
        "default": "1", "validRange": {"min": "1", "step": "1"}}}}}
    plain = {"capacity": {"bw": {"value": "10"}}}
    held = [{"request": "r", "driver": DRV, "pool": "pool", "device": d, "shareID": f"id-{d}",
             "consumedCapacity": {"bw": v}} for d, v in used.items()] or [
        {"request": "r", "driver": DRV, "pool": "pool", "device": "p0"}]
    objs = [node("node-1"), device_class(), rslice("s", [dev("s0", **share), dev("s1", **share), dev("p0", **plain)]),
            claim("old", req(), allocation=held)]
    gates = FeatureGates().with_overrides({"DRAConsumableCapacity": True, "DRAAdminAccess": True})
    model = model_for(ClusterSnapshot.from_objects(objs), gates)
    body: dict[str, Any] = {"capacity": {"requests": {"bw": "4"}}}
    if admin:
        body["adminAccess"] = True
    c = parse_claim(claim("new", req(**body)), model)
    s = Search(model, model.node("node-1"), [c], model.allocated)
    leaf = c.requests[0].leaf
    assert leaf is not None
    assert [s.pruner.static_ok(leaf, d) for d in s.frame.flat] == want  # the reference
    assert s.pruner.from_base(leaf, ("any",)) == want


@pytest.mark.parametrize("seed", range(4))
def test_node_data_kept_in_the_model_decides_as_fresh(seed: int) -> None:
    """``nodedata.node_data`` keeps each node's evaluations (eligibility, capacity, attribute
    positions, state-free usability) in the model for later requests: outcomes with them kept
    equal outcomes with them rebuilt for every call."""
    cases = _cases(seed)
    modes = (JOINT, PER_CLAIM, JOINT)
    fresh = []
    for model, claims in cases:
        for mode in modes:
            model.node_data.clear()
            fresh.append(_shown(allocate(claims, model, Call(mode=mode, limits=Limits(10**6)))))
        model.node_data.clear()
    kept = [_shown(allocate(claims, model, Call(mode=mode, limits=Limits(10**6))))
            for model, claims in cases for mode in modes]
    assert kept == fresh
    # Across cases the claims differ, so one model's kept data also served other contents.
    assert sum(1 for model, _ in cases for data in model.node_data.values() if data.misfits) >= 40
    assert sum(1 for model, _ in cases for data in model.node_data.values() if data.attr_pos) >= 5


def test_node_data_starts_afresh_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    from webhook.allocator import nodedata
    model, claims = _cases(0)[0]
    allocate(claims, model, Call(mode=JOINT, limits=Limits(10**6)))
    name, kept = next(iter(model.node_data.items()))
    assert nodedata.node_data(model, model.node(name), kept.pools) is kept
    monkeypatch.setattr(nodedata, "NODE_DATA_MAX", kept.size() - 1)
    fresh = nodedata.node_data(model, model.node(name), kept.pools)
    assert fresh is not kept and fresh.size() == 0 and model.node_data[name] is fresh
    assert nodedata.node_data(model, model.node(name), list(kept.pools)) is not fresh  # other pools: not its data


def test_a_model_keeps_node_data_of_few_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from webhook.allocator import nodedata
    model, _ = _cases(0)[0]
    monkeypatch.setattr(nodedata, "NODE_DATA_NODES", 3)
    names = [f"n{i}" for i in range(5)]
    for n in names:
        nodedata.node_data(model, model.node(n), [])
    assert list(model.node_data) == names[2:]  # the oldest went first


def test_threads_sharing_kept_node_data_decide_as_alone() -> None:
    """Serving threads share a model and so its kept node data: interleaved searches of the same
    nodes (switching threads every microsecond) decide as each did alone on fresh data."""
    import sys
    from concurrent.futures import ThreadPoolExecutor
    cases = _cases(1)
    alone = []
    for model, claims in cases:
        model.node_data.clear()
        alone.append(_shown(allocate(claims, model, Call(mode=JOINT, limits=Limits(10**6)))))
        model.node_data.clear()
    work = [(i, m, c) for i, (m, c) in enumerate(cases)] * 4
    random.Random(7).shuffle(work)
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda w: (w[0], _shown(allocate(w[2], w[1], Call(mode=JOINT, limits=Limits(10**6))))),
                                work))
    finally:
        sys.setswitchinterval(before)
    assert [out for _, out in got] == [alone[i] for i, _ in got]


@pytest.mark.parametrize("mode", [JOINT, PER_CLAIM])
def test_later_claims_of_one_template_prune_from_their_first_device(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Seven pairs of partitions on one GPU each (bench B3's node: 7 partitions per GPU): the
    # fourth claim meets a GPU's seventh partition with no partner left and builds pruning data;
    # the seventh claim, of the same content, skips that dead end instead of trying it first.
    from bench import gen
    objs = gen.cluster(1) + [gen.claim_template(f"g-tpl-{i}") for i in range(7)]
    snap = ClusterSnapshot.from_objects(objs)
    model = model_for(snap, FeatureGates.parse(gen.GATES))
    claims, _ = claims_for(gen.podgroup("g", claims=7), snap)
    known = allocate(claims, model, Call(mode=mode))
    monkeypatch.setattr(Pruner, "knows", lambda self, leaf: False)
    unknown = allocate(claims, model, Call(mode=mode))
    assert known.feasible and known.allocations() == unknown.allocations()
    assert known.steps < unknown.steps
