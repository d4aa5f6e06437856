"""The replica path (``workloads.replicas``): a workload placed with it gives every answer the
general path gives (``allocate`` for every replica), replica by replica, across claim shapes, in
both placement modes (every node, and ``sweep``), fresh and warm; and it is taken where it can be."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.allocator.builders import counters, dev
from tests.workloads.builders import deployment, device_class, node, pod, req, rslice, template
from webhook.allocator import model_for
from webhook.allocator.claims import Claim
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, Placement, nodeuse, place, replicas, workload_of

GATES = "DRAConsumableCapacity=true,DRAPartitionableDevices=true"


def gpus(nodes: int, per: int, cpu: str = "8", **extra: Any) -> list[dict[str, Any]]:
    """``nodes`` nodes with ``per`` devices each in a pool of their own."""
    out: list[dict[str, Any]] = [device_class()]
    for i in range(nodes):
        out += [node(f"n{i:02d}", cpu=cpu),
                rslice(f"s{i}", [dev(f"g{j}", **extra) for j in range(per)], node_name=f"n{i:02d}", pool=f"p{i}")]
    return out


def partitions(nodes: int) -> list[dict[str, Any]]:
    """Per node one counter set of 8Gi and four 3Gi partitions of it: two fit at a time."""
    out: list[dict[str, Any]] = [device_class()]
    for i in range(nodes):
        n = f"n{i:02d}"
        out += [node(n),
                rslice(f"c{i}", shared={"set-0": {"memory": "8Gi"}}, node_name=n, pool=f"p{i}", count=2),
                rslice(f"d{i}", [dev(f"part-{j}", consumesCounters=[counters("set-0", memory="3Gi")])
                                 for j in range(4)], node_name=n, pool=f"p{i}", count=2)]
    return out


def nics(nodes: int) -> list[dict[str, Any]]:
    """Per node one NIC of 10G that many claims share (``allowMultipleAllocations``)."""
    cap = {"bandwidth": {"value": "10G"}}
    out: list[dict[str, Any]] = [device_class()]
    for i in range(nodes):
        out += [node(f"n{i:02d}"), rslice(f"s{i}", [dev("eth0", allowMultipleAllocations=True, capacity=cap)],
                                          node_name=f"n{i:02d}", pool=f"p{i}")]
    return out


def network(nodes: int, devices: int) -> list[dict[str, Any]]:
    """Nodes without devices and one pool every node reaches (``allNodes``): it runs out for all."""
    return [device_class(), *(node(f"n{i:02d}") for i in range(nodes)),
            rslice("net", [dev(f"nic-{j}") for j in range(devices)], node_name=None, pool="net", allNodes=True)]


def claims(**entries: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {e: ("template", e) for e in entries}


def tpl(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t = template(name, *requests)
    if constraints:
        t["spec"]["spec"]["devices"]["constraints"] = constraints
    return t


ODD = 'device.attributes["driver.example.com"].odd'
CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], bool]] = {
    # (state, workload, whether the replica path is taken for some replica)
    "one-device-claim": (gpus(5, 3) + [tpl("g", req())], deployment("d", 14, claims={"g": ("template", "g")}), True),
    "two-devices-cpu-runs-out": (gpus(4, 6, cpu="3") + [tpl("g", req(count=2))],
                                 deployment("d", 13, cpu="1", claims={"g": ("template", "g")}), True),
    "two-entries": (gpus(4, 6) + [tpl("a", req()), tpl("b", req(count=2))],
                    deployment("d", 6, claims={"a": ("template", "a"), "b": ("template", "b")}), True),
    "selector": (gpus(4, 4, attrs={"odd": True}) + [tpl("g", req(selectors=[f"{ODD} == true"]))],
                 deployment("d", 9, claims={"g": ("template", "g")}), True),
    "match-attribute": (gpus(3, 4, attrs={"model": "a"}) + [tpl("g", req(count=2), constraints=[
        {"requests": ["req-0"], "matchAttribute": "driver.example.com/model"}])],
                        deployment("d", 7, claims={"g": ("template", "g")}), True),
    "counters": (partitions(3) + [tpl("g", req())], deployment("d", 8, claims={"g": ("template", "g")}), True),
    "capacity-shares": (nics(3) + [tpl("g", req(capacity={"requests": {"bandwidth": "3G"}}))],
                        deployment("d", 11, claims={"g": ("template", "g")}), False),
    "pool-of-every-node-runs-out": (network(4, 5) + [tpl("g", req())],
                                    deployment("d", 8, claims={"g": ("template", "g")}), False),
    "node-pools-run-out": (gpus(2, 2) + [tpl("g", req())], deployment("d", 7, claims={"g": ("template", "g")}), True),
    "cel-error-on-some-devices": (
        [device_class(), node("n00"), node("n01"),
         rslice("s0", [dev("g0", attrs={"odd": True}), dev("g1", attrs={"odd": True}), dev("g2")],
                node_name="n00", pool="p0"),
         rslice("s1", [dev("g0", attrs={"odd": True}), dev("g1")], node_name="n01", pool="p1"),
         tpl("g", req(selectors=[f"{ODD} == true"]))],
        deployment("d", 6, claims={"g": ("template", "g")}), True),
    "cel-error-everywhere": (gpus(3, 2) + [tpl("g", req(selectors=[f"{ODD} == true"]))],
                             deployment("d", 4, claims={"g": ("template", "g")}), False),
    "no-claims": (gpus(3, 1, cpu="2"), deployment("d", 7, cpu="1"), False),
    "pod-alone": (gpus(2, 2) + [tpl("g", req())], pod("p", claims={"g": ("template", "g")}), False),
}
PLACED = {"one-device-claim": 14, "two-devices-cpu-runs-out": 12, "two-entries": 6, "selector": 9,
          "match-attribute": 6, "counters": 6, "capacity-shares": 9, "pool-of-every-node-runs-out": 5,
          "node-pools-run-out": 4, "cel-error-on-some-devices": 2, "cel-error-everywhere": 0, "no-claims": 6,
          "pod-alone": 1}
"""Replicas placed."""


def answers(p: Placement) -> list[Any]:
    """Everything a placement answers, replica by replica (reasons and step counts included)."""
    return [[(x.pod, x.node, x.claims, x.group, x.outcome.feasible, x.outcome.kind, x.outcome.steps,
              x.outcome.nodes_tried, x.outcome.unchecked, x.outcome.in_order, x.outcome.labels,
              [c.label for c in x.outcome.claims], x.outcome.reason_texts(), x.outcome.message,
              x.outcome.summary, x.outcome.allocations()) for x in p.pods],
            p.allocations, p.placed, p.replicas, p.notes, p.cut, p.released, p.steps]


def placed(state: list[dict[str, Any]], obj: dict[str, Any], snap: ClusterSnapshot | None = None, *,
           sweep: bool, max_steps: int = 100_000) -> Placement:
    snap = snap or ClusterSnapshot.from_objects(state)
    g = FeatureGates.parse(GATES)
    return place([workload_of(obj)], model_for(snap, g), Lookup(snap), g, max_steps=max_steps,
                 deadline=time.monotonic() + 60, sweep=sweep)


def followed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pods placed on the replica path from now on."""
    got: list[str] = []
    real = replicas.Replicas.follow

    def counting(self: Any, uses: Any, *a: Any) -> Any:
        out = real(self, uses, *a)
        if out is not None:
            got.append(uses[0].key)
        return out
    monkeypatch.setattr(replicas.Replicas, "follow", counting)
    return got


def selectors_name_their_claim(p: Placement) -> bool:
    """Every request selector of every parsed claim carries that claim's label (its errors name it)."""
    def leaves(c: Claim) -> Any:
        for r in c.requests:
            yield from ((r.leaf,) if r.leaf is not None else r.subrequests)
    return all(s.claim == c.label for x in p.pods for c in x.outcome.claims for leaf in leaves(c)
               for s in leaf.selectors)


@pytest.mark.parametrize("sweep", [False, True], ids=["every-node", "sweep"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_the_replica_path_answers_as_allocate_for_every_replica(monkeypatch: pytest.MonkeyPatch, case: str,
                                                                sweep: bool) -> None:
    """Fresh, then warm (the same snapshot again: kept answers, classes and failures), against
    the general path on a snapshot of its own."""
    state, obj, taken = CASES[case]
    with monkeypatch.context() as m:
        m.setattr(replicas, "ENABLED", False)
        want = answers(placed(state, obj, sweep=sweep))
        nodeuse.clear_caches()
    seen = followed(monkeypatch)
    snap = ClusterSnapshot.from_objects(state)
    fresh = placed(state, obj, snap, sweep=sweep)
    assert answers(fresh) == want
    warm = placed(state, obj, snap, sweep=sweep)
    assert answers(warm) == want
    assert selectors_name_their_claim(fresh) and selectors_name_their_claim(warm)
    assert bool(seen) == taken
    if PLACED[case] is not None:
        assert fresh.placed == PLACED[case]


@pytest.mark.parametrize("max_steps", [3, 9, 40, 200], ids=["steps-3", "steps-9", "steps-40", "steps-200"])
@pytest.mark.parametrize("sweep", [False, True], ids=["every-node", "sweep"])
def test_the_step_budget_ends_a_replica_where_allocate_ends_it(monkeypatch: pytest.MonkeyPatch, sweep: bool,
                                                              max_steps: int) -> None:
    """A budget the later replicas' step totals pass: those are left to ``allocate``, which cuts
    them short or leaves nodes unchecked as it would have."""
    state, obj, _ = CASES["one-device-claim"]
    with monkeypatch.context() as m:
        m.setattr(replicas, "ENABLED", False)
        want = answers(placed(state, obj, sweep=sweep, max_steps=max_steps))
    snap = ClusterSnapshot.from_objects(state)
    assert answers(placed(state, obj, snap, sweep=sweep, max_steps=max_steps)) == want
    assert answers(placed(state, obj, snap, sweep=sweep, max_steps=max_steps)) == want


def test_each_replica_names_its_own_claims_in_its_reasons() -> None:
    """Reasons carried over from the last replica (nodes that were full for it too) name this
    replica's claim, not the last one's."""
    state, obj, _ = CASES["node-pools-run-out"]
    p = placed(state, obj, sweep=False)
    last = p.pods[3]
    assert last.node == "n01" and last.outcome.entries
    assert {r.claim for r in last.outcome.reasons if r.claim} == {"default/d-3-g"}


def teardown_module() -> None:
    nodeuse.clear_caches()


@pytest.mark.parametrize("case", ["one-device-claim", "two-devices-cpu-runs-out", "node-pools-run-out", "counters"])
def test_a_warm_placement_searches_no_node_and_answers_alike(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The second placement on one snapshot takes every view's outcome from the first: fits from
    the kept answers, and the failures of the nodes that filled up (kept per model and content
    beside them), with the same answers."""
    from tests.allocator.builders import searched_nodes
    state, obj, _ = CASES[case]
    snap = ClusterSnapshot.from_objects(state)
    first = answers(placed(state, obj, snap, sweep=False))
    searched = searched_nodes(monkeypatch)
    assert answers(placed(state, obj, snap, sweep=False)) == first
    assert searched == []
