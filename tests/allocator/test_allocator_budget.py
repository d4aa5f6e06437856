"""Step budget, pruning and the incremental model (performance work must not change decisions)."""

from __future__ import annotations

import copy
import random
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
from webhook.allocator import Call, Limits, allocate, model_for
from webhook.allocator import model as model_mod
from webhook.allocator.allocation import CUT_SHORT, UNSATISFIABLE
from webhook.allocator.search import Search
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

EXPLORING = [node("node-1"), device_class(), rslice("c", shared={"cs": {"units": "10"}}, count=2),
             rslice("d", [dev(f"d{i}", consumesCounters=[counters("cs", units="1")]) for i in range(24)],
                    count=2)]


def test_step_budget_binds_at_candidate_granularity() -> None:
    # 11 of 24 devices on a 10-unit counter: counters fail only deep down, so the search explores
    # combinations; the budget (not the deadline) must stop it after exactly max_steps steps.
    m = model_for(ClusterSnapshot.from_objects(EXPLORING), FeatureGates())
    out = allocate([claim("big", req(count=11))], m, Call(limits=Limits(5_000)))
    assert out.kind == CUT_SHORT
    assert out.message == "the check was cut short after 5000 steps (step budget)"


def test_match_attribute_infeasible_is_pruned() -> None:
    # 9 devices sharing a parent, where each parent has 7: every branch is cut at once.
    devs = [dev(f"g{g}-p{p}", attrs={"parent": f"gpu-{g}"}) for g in range(8) for p in range(7)]
    m = model_for(ClusterSnapshot.from_objects([node("node-1"), device_class(), rslice("s", devs)]),
                  FeatureGates())
    c = claim("too-big", req(count=9), constraints=[{"matchAttribute": f"{DRV}/parent"}])
    out = allocate([c], m, Call(limits=Limits(2_000)))
    assert out.kind == UNSATISFIABLE
    assert out.steps < 500
    assert any("at most 7 of 9 devices share a value" in r for r in out.reason_texts())


def _random_case(r: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, bool]]:
    objs = [node("node-1"), node("node-2"), device_class()]
    for nn in ("node-1", "node-2")[: r.randint(1, 2)]:
        nsets = r.randint(0, 2)
        shared = {f"cs{i}": {"mem": f"{r.choice([4, 8, 10])}Gi"} for i in range(nsets)} if nsets else None
        devs = []
        for i in range(r.randint(0, 9)):
            kw: dict[str, Any] = {"attrs": {"parent": f"p{r.randint(0, 2)}", "type": r.choice("ab")}}
            if r.random() < 0.2:
                del kw["attrs"]["parent"]
            if nsets and r.random() < 0.7:
                kw["consumesCounters"] = [counters(f"cs{r.randrange(nsets)}", r.choice([None, ["g1"], ["g1", "g2"]]),
                                                   mem=f"{r.choice([2, 4, 6])}Gi")]
            if r.random() < 0.2:
                kw["allowMultipleAllocations"] = True
                kw["capacity"] = {"bw": {"value": "10", "requestPolicy": {
                    "default": "2", "validRange": {"min": "1", "step": "1"}}}}
            if r.random() < 0.1:
                kw["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
            devs.append(dev(f"d{i}", **kw))
        objs.append(rslice(f"{nn}-d", devs, node_name=nn, pool=f"pool-{nn}", shared=shared))
        if devs and r.random() < 0.3:
            objs.append(claim(f"old-{nn}", req(), allocation=[result(r.choice(devs)["name"], pool=f"pool-{nn}")]))
    claims = []
    for ci in range(r.randint(1, 2)):
        reqs = []
        for ri in range(r.randint(1, 2)):
            kw = {}
            if r.random() < 0.4:
                kw["selectors"] = [f'device.attributes["{DRV}"].type == "{r.choice("ab")}"']
            if r.random() < 0.1:
                kw["tolerations"] = [{"key": "k", "operator": "Exists"}]
            if r.random() < 0.15:
                reqs.append(first_available(f"r{ri}", req("x", count=r.randint(2, 6), **kw), req("y", count=2)))
            else:
                reqs.append(req(f"r{ri}", count=r.randint(1, 7), **kw))
        cons = []
        if r.random() < 0.6:
            cons.append({"matchAttribute": f"{DRV}/parent"} if r.random() < 0.5
                        else {"matchAttribute": "parent", "requests": ["r0"]})
        if r.random() < 0.2:
            cons.append({"distinctAttribute": f"{DRV}/type"})
        claims.append(claim(f"c{ci}", *reqs, constraints=cons or None))
    gates = {g: r.random() < 0.5 for g in ("DRADeviceCompatibilityGroups", "DRAConsumableCapacity",
                                           "DRAListTypeAttributes", "DRADeviceTaints")}
    gates["DRADeviceTaintRules"] = gates["DRADeviceTaints"]  # it depends on DRADeviceTaints
    return objs, claims, gates


def _decision(out: Any) -> tuple[Any, ...]:
    devices = [[(x["request"], x["device"]) for x in a["results"]] for a in out.allocations()]
    return (out.kind, out.feasible, out.node, devices, out.message if out.kind != UNSATISFIABLE else "")


@pytest.mark.parametrize("seed", range(4))
def test_pruning_never_changes_a_decision(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    r = random.Random(seed)
    for _ in range(60):
        objs, claims, gates = _random_case(r)
        m = model_for(ClusterSnapshot.from_objects(objs), FeatureGates().with_overrides(gates))
        for mode in ("joint", "per-pod"):
            monkeypatch.setattr(Search, "pruning", True)
            pruned = allocate(claims, m, Call(mode=mode, limits=Limits(10**7)))
            monkeypatch.setattr(Search, "pruning", False)
            full = allocate(claims, m, Call(mode=mode, limits=Limits(10**7)))
            assert _decision(pruned) == _decision(full), (objs, claims, gates, mode)
            assert pruned.steps <= full.steps * 2 + len(m.nodes) * 64


def test_model_reuses_unchanged_slices_and_drops_gone_ones() -> None:
    a = rslice("a", [dev("x")])
    b = rslice("b", [dev("y")], pool="other")
    base = [node("node-1"), device_class()]
    m1 = model_for(ClusterSnapshot.from_objects([*base, a, b], version=1), FeatureGates())
    b2 = copy.deepcopy(b)
    b2["spec"]["devices"][0]["name"] = "z"
    m2 = model_for(ClusterSnapshot.from_objects([*base, a, b2], version=2), FeatureGates())
    assert m2.all_slices[0] is m1.all_slices[0]            # same dict, same resourceVersion: reused
    assert [d.name for d in m2.all_slices[1].devices] == ["z"]
    assert {id(v[0]) for v in model_mod._SLICES.values()} == {id(a), id(b2)}  # b is gone
    out = allocate([claim("c", req(count=2))], m2, Call(nodes=("node-1",)))
    assert [[r["device"] for r in x["results"]] for x in out.allocations()] == [["z", "x"]]  # pool "other" first
    # the same dict with a new resourceVersion is converted again
    a["metadata"]["resourceVersion"] = "7"
    m3 = model_for(ClusterSnapshot.from_objects([*base, a, b2], version=3), FeatureGates())
    assert m3.all_slices[0] is not m1.all_slices[0]
    uids = [d.uid for sl in m3.all_slices for d in sl.devices]
    assert len(set(uids)) == len(uids)
