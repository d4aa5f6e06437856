"""The node-filter verdicts and searches that pods of one shape share (``workloads.nodeuse``,
``allocator.runs``, ``allocator.heldclasses``, ``allocator.answers``): the same answers as
walking every node and searching every node class afresh, per pod shape, and new ones once the
snapshot changes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.allocator.builders import dev
from tests.workloads.builders import deployment, device_class, node, pod, rslice, template
from webhook.allocator import engine, model_for
from webhook.allocator.classes import class_of
from webhook.allocator.heldclasses import changed_pools
from webhook.allocator.runs import NodeList
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, Placement, PodFilter, fit_reason, nodeuse, place, static_reason, workload_of
from webhook.workloads.nodeuse import Filtered, NodeUse

TAINT = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
TOLERATE = [{"key": "gpu", "operator": "Exists"}]
AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "c"]}]}]}}}


def nodes_state() -> list[dict[str, Any]]:
    """Twelve nodes: zones a/b/c, two tainted, one cordoned, small and large cpu."""
    out = []
    for i in range(12):
        spec: dict[str, Any] = {}
        if i in (3, 7):
            spec["taints"] = [TAINT]
        if i == 5:
            spec["unschedulable"] = True
        out.append(node(f"n{i:02d}", cpu="2" if i % 4 == 0 else "4", labels={"zone": "abc"[i % 3]}, **spec))
    return out


SHAPES = {
    "plain": {},
    "cpu-1": {"cpu": "1"},
    "cpu-3": {"cpu": "3"},
    "selector": {"nodeSelector": {"zone": "b"}},
    "tolerates": {"tolerations": TOLERATE, "cpu": "2"},
    "affinity": {"affinity": AFFINITY, "cpu": "1"},
    "prebound": {"nodeName": "n02"},
}
ADDS = {
    "none": [],
    "one-node-fills": [("n00", "cpu-2")] * 2,
    "spread": [("n01", "cpu-1"), ("n04", "cpu-3"), ("n09", "cpu-1"), ("n01", "cpu-3")],
    "tainted-and-cordoned": [("n03", "cpu-4"), ("n05", "cpu-1"), ("n07", "cpu-2")],
}


def reference(pf: PodFilter, nodes: NodeUse, prebound: bool) -> tuple[list[str], dict[Any, list[str]]]:
    """Every node walked, as before any sharing."""
    ok: list[str] = []
    rejected: dict[Any, list[str]] = {}
    for name, facts in nodes.facts.items():
        why = static_reason(pf, facts, prebound=prebound) or fit_reason(
            pf, facts, nodes.used.get(name, {}), nodes.count.get(name, 0))
        if why is None:
            ok.append(name)
        else:
            rejected.setdefault(why._replace(node=""), []).append(name)
    return ok, rejected


@pytest.mark.parametrize("adds", list(ADDS), ids=list(ADDS))
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_filter_verdicts_are_those_of_walking_every_node(shape: str, adds: str) -> None:
    snap = ClusterSnapshot.from_objects(nodes_state())
    nodes = NodeUse(snap.of("Node"), snap.of("Pod"))
    pf = PodFilter.of(pod("p", **SHAPES[shape]))
    f = Filtered(pf, nodes, bool(pf.node_name))
    for step in [None, *ADDS[adds]]:
        if step is not None:
            nodes.add(step[0], {"cpu": int(step[1].split("-")[1]) * 1000})
        ok, rejected = f.split(nodes)
        want_ok, want_rejected = reference(pf, nodes, bool(pf.node_name))
        assert list(ok) == want_ok
        assert list(rejected.items()) == list(want_rejected.items())  # reasons in first-node order too
        assert {n: f.reason(n, nodes) for n in nodes.facts} == {
            n: static_reason(pf, nodes.facts[n], prebound=bool(pf.node_name)) or fit_reason(
                pf, nodes.facts[n], nodes.used.get(n, {}), nodes.count.get(n, 0)) for n in nodes.facts}


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_one_shape_shares_its_verdicts_until_the_snapshot_changes(shape: str) -> None:
    state = nodes_state()
    snap = ClusterSnapshot.from_objects(state)
    pf = PodFilter.of(pod("p", **SHAPES[shape]))
    first = Filtered(pf, NodeUse(snap.of("Node"), snap.of("Pod")), bool(pf.node_name))
    again = Filtered(pf, NodeUse(snap.of("Node"), snap.of("Pod")), bool(pf.node_name))
    assert isinstance(first.candidates, NodeList)
    assert again.candidates is first.candidates  # shared: not walked again
    # A new snapshot: n02 cordoned, a pod bound on n06. Its own verdicts, those of a full walk.
    changed = [dict(o, spec={**o["spec"], "unschedulable": True}) if o["metadata"]["name"] == "n02" else o
               for o in state]
    bound = dict(pod("bound", cpu="3"), spec={**pod("bound", cpu="3")["spec"], "nodeName": "n06"})
    snap2 = ClusterSnapshot.from_objects([*changed, bound])
    nodes2 = NodeUse(snap2.of("Node"), snap2.of("Pod"))
    later = Filtered(pf, nodes2, bool(pf.node_name))
    assert later.candidates is not first.candidates
    want_ok, want_rejected = reference(pf, nodes2, bool(pf.node_name))
    ok, rejected = later.split(nodes2)
    assert (list(ok), rejected) == (want_ok, want_rejected)


def test_shapes_that_differ_do_not_share() -> None:
    snap = ClusterSnapshot.from_objects(nodes_state())
    got = {k: Filtered(PodFilter.of(pod("p", **s)), NodeUse(snap.of("Node"), snap.of("Pod")), False).candidates
           for k, s in SHAPES.items() if k != "prebound"}
    assert len({id(c) for c in got.values()}) == len(got)
    assert len({tuple(c) for c in got.values()}) > 3


def gpu_state(nodes: int, gpus: int, cpu: str = "8") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [device_class(), template("one"), template("two", {"name": "r", "exactly": {
        "deviceClassName": "cls", "count": 2}})]
    for i in range(nodes):
        out.append(node(f"n{i:02d}", cpu=cpu, labels={"zone": "ab"[i % 2]}))
        out.append(rslice(f"s{i}", [dev(f"g{j}") for j in range(gpus)], node_name=f"n{i:02d}", pool=f"p{i}"))
    return out


PLACEMENTS = {
    "one-gpu-fills-nodes": (gpu_state(6, 3), deployment("d", 20, claims={"g": ("template", "one")})),
    "two-gpus-cpu-runs-out": (gpu_state(6, 4, cpu="2"),
                              deployment("d", 14, cpu="1", claims={"g": ("template", "two")})),
    "selector-half-the-nodes": (gpu_state(8, 2), deployment("d", 9, nodeSelector={"zone": "a"},
                                                            claims={"g": ("template", "one")})),
    "no-claims-cpu-only": (gpu_state(5, 1, cpu="3"), deployment("d", 17, cpu="1")),
    "two-entries": (gpu_state(5, 4), deployment("d", 11, claims={"a": ("template", "one"), "b": ("template", "one")})),
    "pod-alone": (gpu_state(4, 2), pod("p", claims={"g": ("template", "two")})),
    "pod-fits-nowhere": (gpu_state(4, 1), pod("p", claims={"g": ("template", "two")})),
}
PLACED = {"pod-alone": 1, "pod-fits-nowhere": 0, "one-gpu-fills-nodes": 18, "two-gpus-cpu-runs-out": 12,
          "selector-half-the-nodes": 8, "no-claims-cpu-only": 15, "two-entries": 10}


def flat(p: Placement) -> str:
    return json.dumps([[(x.pod, x.node, x.claims, x.outcome.steps, x.outcome.reason_texts(),
                         x.outcome.message) for x in p.pods], p.allocations, p.placed, p.notes])


def placed(state: list[dict[str, Any]], obj: dict[str, Any], snap: ClusterSnapshot | None = None) -> str:
    snap = snap or ClusterSnapshot.from_objects(state)
    g = FeatureGates.parse("")
    return flat(place([workload_of(obj)], model_for(snap, g), Lookup(snap), g, max_steps=100_000,
                      deadline=time.monotonic() + 60))


def unshared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node walked for every pod (plain lists: no kept runs), no answer taken again, no
    node classes."""
    def split(self: Filtered, nodes: NodeUse) -> tuple[list[str], dict[Any, list[str]]]:
        return reference(self.pf, nodes, bool(self.pf.node_name))
    monkeypatch.setattr(Filtered, "split", split)
    monkeypatch.setattr(engine, "recall", lambda run, node, budget: None)
    monkeypatch.setattr(engine, "NODE_CLASSES", False)


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
@pytest.mark.parametrize("case", list(PLACEMENTS), ids=list(PLACEMENTS))
def test_a_placement_with_sharing_is_the_placement_without(monkeypatch: pytest.MonkeyPatch, case: str,
                                                           warm: bool) -> None:
    """Pods, nodes, devices, step counts and every reason; "warm" places twice on one snapshot
    (the second time from the verdicts, runs and answers the first kept)."""
    state, obj = PLACEMENTS[case]
    snap = ClusterSnapshot.from_objects(state)
    shared = placed(state, obj, snap)
    if warm:
        assert placed(state, obj, snap) == shared
    with monkeypatch.context() as m:
        unshared(m)
        assert placed(state, obj) == shared
    assert json.loads(shared)[2] == PLACED[case]


def test_kept_answers_follow_the_snapshot() -> None:
    """One more device on the first node of a new snapshot: the answers kept for the old one
    are not taken for it (the pods go where a fresh search puts them)."""
    state, obj = PLACEMENTS["one-gpu-fills-nodes"]
    snap = ClusterSnapshot.from_objects(state)
    before = json.loads(placed(state, obj, snap))
    grown = [rslice("s0", [dev(f"g{j}") for j in range(5)], node_name="n00", pool="p0", generation=2)
             if o.get("metadata", {}).get("name") == "s0" else o for o in state]
    after = json.loads(placed(grown, obj))
    assert [p[1] for p in after[0]].count("n00") == 5
    assert [p[1] for p in before[0]].count("n00") == 3


@pytest.mark.parametrize("case", ["one-gpu-fills-nodes", "two-gpus-cpu-runs-out", "two-entries"])
def test_the_memos_changed_pools_are_those_of_comparing_every_device(monkeypatch: pytest.MonkeyPatch,
                                                                     case: str) -> None:
    """``ClassMemo.changed`` (the touched devices only) equals ``changed_pools`` at every call."""
    from webhook.allocator import heldclasses
    seen: list[bool] = []
    real = heldclasses.ClassMemo.changed

    def checked(self: Any, model: Any, held: Any) -> Any:
        got = real(self, model, held)
        seen.append(got == changed_pools(model, held))
        return got
    monkeypatch.setattr(heldclasses.ClassMemo, "changed", checked)
    state, obj = PLACEMENTS[case]
    placed(state, obj)
    assert seen and all(seen)


@pytest.mark.parametrize("dirty", [(), ("n01",), ("n00", "n03"), ("n05",)], ids=["clean", "one", "two", "last"])
def test_kept_runs_are_cut_at_nodes_whose_view_differs(dirty: tuple[str, ...]) -> None:
    from webhook.allocator.heldclasses import Failures
    from webhook.allocator.runs import Runs
    snap = ClusterSnapshot.from_objects(gpu_state(6, 2))
    model = model_for(snap, FeatureGates.parse(""))
    names = NodeList(f"n{i:02d}" for i in range(6))
    classes = Failures(model, [])
    classes.dirty = set(dirty)
    runs = Runs.of(classes, names)
    assert runs is not None and Runs.of(classes, list(names)) is None
    for i in range(len(names)):
        if names[i] in dirty:
            continue
        end = i + 1
        while end < len(names) and names[end] not in dirty and class_of(model, names[end]) == class_of(model, names[i]):
            end += 1
        assert runs.end(names, i) == end


EXPLAINED = {
    "fits-everywhere": (gpu_state(7, 2), pod("p", claims={"g": ("template", "two")})),
    "half-by-selector": (gpu_state(7, 1), pod("p", nodeSelector={"zone": "b"}, claims={"g": ("template", "one")})),
    "too-big": (gpu_state(5, 1), pod("p", claims={"g": ("template", "two")})),
    "mixed-nodes": (gpu_state(4, 1) + [rslice("s9", [dev("g0"), dev("g1")], node_name="n09", pool="p9"),
                                       node("n09"), node("n10", cpu="0")], pod("p", cpu="1", claims={
                                           "g": ("template", "two")})),
    "no-claims": (gpu_state(4, 1, cpu="1") + [node("n05", cpu="4")], pod("p", cpu="2")),
    "an-input-claim-allocated": (gpu_state(5, 2), pod("p", claims={"held": ("claim", "held"),
                                                                 "g": ("template", "one")})),
    "an-input-claim-anywhere": (gpu_state(5, 2), pod("p", claims={"free": ("claim", "free"),
                                                                "g": ("template", "two")})),
}
HELD = {**template("held"), "kind": "ResourceClaim", "metadata": {"name": "held", "namespace": "default"},
        "spec": template("held")["spec"]["spec"], "status": {"allocation": {"devices": {"results": [
            {"request": "req-0", "driver": "driver.example.com", "pool": "p2", "device": "g0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n02"]}]}]}}}}


FREE = {**HELD, "metadata": {"name": "free", "namespace": "default"}, "status": {"allocation": {"devices": {
    "results": [{"request": "req-0", "driver": "driver.example.com", "pool": "p0", "device": "g0"}]}}}}


@pytest.mark.parametrize("case", list(EXPLAINED), ids=list(EXPLAINED))
def test_explained_verdicts_are_those_of_asking_every_node(case: str) -> None:
    """``grouped_verdicts`` (kept filter answers, runs of one class taken whole) groups the nodes
    as asking the filters and the allocator about every node alone does."""
    from webhook.allocator.engine import Call, allocate
    from webhook.planning.verdicts import Budget, _verdict, grouped, grouped_verdicts
    from webhook.workloads import pod_claims
    state, obj = EXPLAINED[case]
    snap = ClusterSnapshot.from_objects(state)
    g = FeatureGates.parse("")
    model = model_for(snap, g)
    claims = [u.claim for u in pod_claims(obj, Lookup(snap, [HELD, FREE]), None, g)[0]]  # not in the state
    nodes = NodeUse(snap.of("Node"), snap.of("Pod"))
    pf = PodFilter.of(obj)
    rejected: dict[str, Any] = {}
    fit: dict[str, Any] = {}
    for name, facts in nodes.facts.items():
        why = static_reason(pf, facts) or fit_reason(pf, facts, nodes.used.get(name, {}), nodes.count.get(name, 0))
        if why is not None:
            rejected[name] = (why._replace(node=""), ())
        else:
            fit[name] = _verdict(allocate(claims, model, Call(nodes=[name]))) if claims else (None, ())
    fits = [n for n, v in fit.items() if v[0] is None]
    assert fits == {"an-input-claim-allocated": ["n02"], "an-input-claim-anywhere": ["n01", "n02", "n03", "n04"]}.get(
        case, fits)  # the allocated input claims' devices are in use where they are
    per = {**rejected, **fit}  # as explain always ordered them: the filters' rejections first
    budget = Budget(100_000, time.monotonic() + 60)
    assert grouped_verdicts(obj, claims, model, nodes, budget) == grouped(per)
    assert grouped_verdicts(obj, claims, model, nodes, budget) == grouped(per)  # again, from what is kept


@pytest.mark.parametrize("case", ["one-gpu-fills-nodes", "two-entries"])
def test_pool_use_kept_per_model_is_the_use_computed_afresh(case: str) -> None:
    from webhook.planning.capacity import _pool_use, pool_use
    state, _obj = PLACEMENTS[case]
    claimed = [*state, {**template("x"), "kind": "ResourceClaim", "spec": template("x")["spec"]["spec"],
                        "status": {"allocation": {"devices": {"results": [
                            {"request": "req-0", "driver": "driver.example.com", "pool": "p1", "device": "g0"}]}}}}]
    for objs in (state, claimed):
        model = model_for(ClusterSnapshot.from_objects(objs), FeatureGates.parse(""))
        first = pool_use(model)
        assert pool_use(model) == first == _pool_use(model, model.allocated)
        assert [p.allocated for p in first if p.pool == "p1"] == [1 if objs is claimed else 0]


def teardown_module() -> None:
    nodeuse.clear_caches()
