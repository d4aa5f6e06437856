"""``webhook.planning.explain``: per node, grouped by verdict, the first thing that keeps a pod off
it (node filters in the scheduler's order, then the allocator's reason); yes/no as ``simulate``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.allocator.builders import counters, dev
from tests.workloads.builders import claim, deployment, device_class, node, pod, req, rslice, template
from webhook import BadInput
from webhook.allocator.reasons import amounts as reason_amounts
from webhook.allocator.reasons import text
from webhook.gates import FeatureGates
from webhook.planning import Budget, as_new, explain, without_pod
from webhook.planning.explain import Explanation
from webhook.state.base import ClusterSnapshot

ONE = {"gpu": ("template", "one")}


def gpu_nodes(*names: str, **node_kw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [device_class(), template("one")]
    for n in names:
        out += [node(n, **node_kw.get(n, {})), rslice(f"{n}-s", [dev("g0"), dev("g1")], node_name=n, pool=n)]
    return out


def bound(name: str, on: str, cpu: str = "1") -> dict[str, Any]:
    p = pod(name, cpu=cpu)
    p["spec"]["nodeName"] = on
    return p


def run(state: list[dict[str, Any]], *objs: dict[str, Any]) -> Explanation:
    return explain(list(objs), ClusterSnapshot.from_objects(state), FeatureGates(),
                   Budget(100_000, time.monotonic() + 60))


def codes(e: Explanation) -> dict[str, str]:
    """Node -> the code of its first reason ("fits" when the pod fits there)."""
    return {n: (v.reason.code.value if v.reason is not None else "fits") for v in e.verdicts for n in v.nodes}


CASES = [
    pytest.param(gpu_nodes("a", "b", "c"), [pod("p", claims=ONE)], True,
                 {"a": "fits", "b": "fits", "c": "fits"}, id="identical-nodes-all-fit"),
    pytest.param(gpu_nodes("a", "b", b={"taints": [{"key": "k", "effect": "NoSchedule"}]}), [pod("p", claims=ONE)],
                 True, {"a": "fits", "b": "node-taint-not-tolerated"}, id="taint-not-tolerated"),
    pytest.param(gpu_nodes("a", "b", a={"labels": {"zone": "z1"}}),
                 [pod("p", claims=ONE, nodeSelector={"zone": "z1"})], True,
                 {"a": "fits", "b": "node-affinity-mismatch"}, id="node-selector"),
    pytest.param(gpu_nodes("a", "b", a={"unschedulable": True}), [pod("p", claims=ONE)], True,
                 {"a": "node-unschedulable", "b": "fits"}, id="unschedulable"),
    pytest.param(gpu_nodes("a", "b"), [pod("p", claims=ONE, cpu="9")], False,
                 {"a": "node-resources-insufficient", "b": "node-resources-insufficient"}, id="insufficient-cpu"),
    pytest.param([*gpu_nodes("a", "b", a={"pods": "1"}), bound("old", "a")], [pod("p", claims=ONE)], True,
                 {"a": "too-many-pods", "b": "fits"}, id="too-many-pods"),
    pytest.param([*gpu_nodes("a"), template("two", req(count=3))], [pod("p", claims={"gpu": ("template", "two")})],
                 False, {"a": "at-most-devices"}, id="too-few-devices"),
    pytest.param([*gpu_nodes("a"), node("cpu-only")], [pod("p", claims=ONE)], True,
                 {"a": "fits", "cpu-only": "no-devices-on-node"}, id="node-without-devices"),
    pytest.param(gpu_nodes("a"), [pod("p", claims=ONE, cpu="1"), pod("q", claims=ONE, cpu="1"),
                                  pod("r", claims=ONE, cpu="1")],
                 False, {"a": "in-use"}, id="third-pod-finds-the-devices-taken"),
    pytest.param(gpu_nodes("a", "b"), [deployment("d", 5, claims=ONE)], False,
                 {"a": "in-use", "b": "in-use"}, id="workload-replica-that-does-not-fit"),
]


@pytest.mark.parametrize(("state", "objs", "fits", "want"), CASES)
def test_first_reason_per_node(state: list[dict[str, Any]], objs: list[dict[str, Any]], fits: bool,
                               want: dict[str, str]) -> None:
    e = run(state, *objs)
    assert e.fits is fits
    assert codes(e) == want


def test_nodes_with_one_verdict_are_one_group_fitting_first() -> None:
    e = run(gpu_nodes("a", "b", "c", "d", c={"taints": [{"key": "k", "effect": "NoSchedule"}]}), pod("p", claims=ONE))
    assert [(v.nodes, v.fits) for v in e.verdicts] == [(("a", "b", "d"), True), (("c",), False)]
    assert e.node == "a"


def test_a_workload_names_the_first_replica_that_does_not_fit() -> None:
    e = run(gpu_nodes("a", "b"), deployment("d", 5, claims=ONE))
    assert (e.pod, e.placed, e.replicas) == ("default/d-4", 4, 5)
    assert e.summary is not None and e.summary.code.value == "nodes-unavailable"
    assert (e.summary.number, e.summary.detail) == (2, "2 cannot allocate all claims")


def test_a_reference_not_found_blocks_before_any_node() -> None:
    e = run(gpu_nodes("a"), pod("p", claims={"gpu": ("claim", "nope")}))
    assert not e.fits and e.verdicts == []
    assert [b.detail for b in e.blockers] == ["claim default/nope not found"]


def allocated_on_b(name: str) -> dict[str, Any]:
    """A claim allocated device g0 of node b's pool, for node b."""
    held = claim(name, req())
    held["status"] = {"allocation": {"devices": {"results": [
        {"request": "req-0", "driver": "driver.example.com", "pool": "b", "device": "g0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]},
        "allocationTimestamp": "2026-01-01T00:00:00Z"}}
    return held


def test_a_claim_allocated_elsewhere_keeps_the_pod_on_its_node() -> None:
    held = allocated_on_b("shared")
    e = run([*gpu_nodes("a", "b"), held], pod("p", claims={"gpu": ("claim", "shared")}))
    assert codes(e) == {"a": "allocated-claim-not-on-node", "b": "fits"}


def test_a_claim_allocated_where_the_pod_cannot_run_is_judged_deallocated() -> None:
    """Held by no pod and allocated on a node the pod does not tolerate: the scheduler's DRA
    plugin deallocates it after the failed attempt, and the pod fits on the other node."""
    held = allocated_on_b("shared")
    nodes = gpu_nodes("a", "b", b={"taints": [{"key": "k", "effect": "NoSchedule"}]})
    e = run([*nodes, held], pod("p", claims={"gpu": ("claim", "shared")}))
    assert e.fits and e.node == "a"
    assert codes(e) == {"a": "fits", "b": "node-taint-not-tolerated"}
    assert any("deallocates claim default/shared" in n.detail for n in e.notes)


def test_nothing_to_explain_is_bad_input() -> None:
    with pytest.raises(BadInput, match="nothing to explain"):
        run(gpu_nodes("a"), template("x"))


@pytest.mark.parametrize(("status", "kept"), [
    pytest.param({"conditions": [{"type": "PodScheduled", "status": "True"}]}, False, id="bound-by-the-scheduler"),
    pytest.param({}, True, id="named-by-its-author"),
])
def test_a_live_pod_is_explained_as_new(status: dict[str, Any], kept: bool) -> None:
    p = bound("p", "a")
    p["status"] = status
    assert ("nodeName" in as_new(p)["spec"]) is kept


def test_without_pod_drops_only_that_pod() -> None:
    snap = ClusterSnapshot.from_objects([bound("p", "a"), bound("q", "a"), node("a")])
    assert [p["metadata"]["name"] for p in without_pod(snap, "default", "p").of("Pod")] == ["q"]
    assert len(without_pod(snap, "default", "p").of("Node")) == 1


def _counter_state() -> list[dict[str, Any]]:
    return [device_class(), node("a"),
            rslice("counters", shared={"set-0": {"memory": "8Gi"}}, node_name="a", pool="a", count=2),
            rslice("devices", [dev(f"part-{i}", consumesCounters=[counters("set-0", memory="6Gi")]) for i in (1, 2)],
                   node_name="a", pool="a", count=2)]


def _nic_state() -> list[dict[str, Any]]:
    nic = rslice("net", [dev("eth1", allowMultipleAllocations=True, capacity={"bandwidth": {"value": "10G"}})],
                 node_name="a", pool="a")
    old = claim("old", req())
    old["status"] = {"allocation": {"devices": {"results": [
        {"request": "req-0", "driver": "driver.example.com", "pool": "a", "device": "eth1",
         "consumedCapacity": {"bandwidth": "9G"}, "shareID": "u1"}]},
        "allocationTimestamp": "2026-01-01T00:00:00Z"}}
    return [device_class(), node("a"), nic, old]


def _one_held_state() -> list[dict[str, Any]]:
    held = claim("old", req())
    held["status"] = {"allocation": {"devices": {"results": [
        {"request": "req-0", "driver": "driver.example.com", "pool": "a", "device": "g0"}]},
        "allocationTimestamp": "2026-01-01T00:00:00Z"}}
    return [*gpu_nodes("a"), held]


def _tainted_state() -> list[dict[str, Any]]:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    return [device_class(), node("a"), rslice("a-s", [dev("g0", taints=[taint])], node_name="a", pool="a")]


@pytest.mark.parametrize(("state", "ask", "code", "amounts", "words"), [
    pytest.param(_counter_state(), req(count=2), "counter-exhausted",
                 {"need": "6Gi", "free": "2Gi", "total": "8Gi"},
                 "counter memory of set-0: 2Gi of 8Gi free, the request needs 6Gi", id="counter"),
    pytest.param(_nic_state(), req(capacity={"requests": {"bandwidth": "2G"}}), "capacity-exhausted",
                 {"need": "2G", "free": "1G", "total": "10G"},
                 "capacity bandwidth of eth1: 1G of 10G free, the request needs 2G", id="consumable-capacity"),
    pytest.param(_one_held_state(), req(count=2), "too-few-devices", {"free": 1, "total": 2},
                 "pool driver.example.com/a has 1 of 2 matching devices free, the request needs 2",
                 id="devices-held"),
    pytest.param(_tainted_state(), req(), "taint-not-tolerated", {}, "taint k=v:NoSchedule on g0 not tolerated",
                 id="taint-has-no-amounts"),
])
def test_device_reasons_carry_the_amounts_that_decide(state: list[dict[str, Any]], ask: dict[str, Any],
                                                      code: str, amounts: dict[str, Any], words: str) -> None:
    e = run([*state, template("t", ask)], pod("p", claims={"x": ("template", "t")}))
    (verdict,) = e.verdicts
    assert verdict.reason is not None
    assert (verdict.reason.code.value, reason_amounts(verdict.reason)) == (code, amounts)
    assert text(verdict.reason).endswith(words)


@pytest.mark.parametrize(("min_count", "replicas", "want"), [
    pytest.param(3, 3, [("w-0", "waits-for-gang", "a"), ("w-1", "waits-for-gang", "a"),
                        ("w-2", "fits-nowhere", None)], id="gang-below-min-count"),
    pytest.param(2, 2, [("w-0", "placed", "a"), ("w-1", "placed", "a")], id="gang-reaches-min-count"),
    pytest.param(None, 4, [("w-0", "placed", "a"), ("w-1", "placed", "a"), ("w-2", "fits-nowhere", None),
                           ("w-3", "not-tried", None)], id="basic-policy-later-replica-not-tried"),
])
def test_podgroup_members_each_get_a_verdict(min_count: int | None, replicas: int,
                                             want: list[tuple[str, str, str | None]]) -> None:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "default"}, "spec": {"schedulingPolicy": policy}}
    w = deployment("w", replicas, claims=ONE, schedulingGroup={"podGroupName": "pg"})
    e = explain([w, pg], ClusterSnapshot.from_objects(gpu_nodes("a")),
                FeatureGates.parse("GenericWorkload=true,DRAWorkloadResourceClaims=true"),
                Budget(100_000, time.monotonic() + 60))
    assert [(m.pod.split("/")[1], m.standing.value, m.node) for m in e.members] == want
    blocked = [m for m in e.members if m.standing.value == "fits-nowhere"]
    assert all(m.reason is not None and m.reason.code.value == "in-use" for m in blocked)
    if min_count and min_count > 2:
        assert all("gang minCount" in m.reason.detail for m in e.members if m.standing.value == "waits-for-gang")


def test_a_pod_in_no_podgroup_has_no_members() -> None:
    assert run(gpu_nodes("a"), pod("p", claims=ONE)).members == []


def test_progress_is_reported_per_pod_and_per_node_class() -> None:
    seen: list[tuple[int, int, str]] = []
    explain([pod("p", claims=ONE)], ClusterSnapshot.from_objects(gpu_nodes("a", "b")), FeatureGates(),
            Budget(100_000, time.monotonic() + 60, lambda *a: seen.append(a)))
    assert seen == [(0, 1, "pod p"), (0, 1, "node a")]  # a and b are one class: asked once
