"""Pods placed one at a time (``webhook/workloads/place.py``): node filters, then claims, each pod
holding what it got for the next; shared claims pin later pods; gangs; the scheduler's
fatal-error-on-any-node rule; bounded work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.allocator.builders import DRV, dev
from tests.workloads.builders import claim, deployment, device_class, node, pod, req, rslice, template
from webhook.allocator import model_for
from webhook.allocator.reasons import full
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, Placement, place, workload_of
from webhook.workloads import placement as place_module

GPUS = [node("n1"), node("n2"), device_class(),
        rslice("s1", [dev("g0"), dev("g1")], node_name="n1", pool="p1"),
        rslice("s2", [dev("g2")], node_name="n2", pool="p2"), template("one")]
ONE_GPU = {"gpu": ("template", "one")}


def run(state: list[dict[str, Any]], *objs: dict[str, Any], gates: str = "", extra: list[dict[str, Any]] = (),
        deadline: float = 60.0) -> Placement:
    snap = ClusterSnapshot.from_objects(state)
    g = FeatureGates.parse(gates)
    return place([workload_of(o) for o in objs], model_for(snap, g), Lookup(snap, extra), g, max_steps=100_000,
                 deadline=time.monotonic() + deadline)


def where(p: Placement) -> list[str | None]:
    return [x.node for x in p.pods]


def test_replicas_fill_nodes_in_name_order_and_stop_at_the_first_that_does_not_fit() -> None:
    p = run(GPUS, deployment("web", 5, claims=ONE_GPU))
    assert where(p) == ["n1", "n1", "n2", None]
    assert (p.placed, p.replicas, p.feasible) == (3, 5, False)
    assert [x.claims for x in p.pods[:2]] == [["default/web-0-gpu"], ["default/web-1-gpu"]]
    assert [[r["device"] for r in a["results"]] for a in p.allocations] == [["g0"], ["g1"], ["g2"]]
    assert p.failed is p.pods[3]
    assert full(p.failed.outcome.summary) == "0/2 nodes are available: 2 cannot allocate all claims"
    assert "n1: claim default/web-3-gpu request req-0: device g0 already in use" in p.failed.outcome.reason_texts()


def test_every_replica_placed_is_feasible() -> None:
    p = run(GPUS, deployment("web", 3, claims=ONE_GPU))
    assert (p.placed, p.replicas, p.feasible, p.failed) == (3, 3, True, None)


def test_a_shared_named_claim_is_allocated_once_and_pins_the_later_pods() -> None:
    state = GPUS + [claim("shared", req())]
    p = run(state, deployment("web", 3, cpu="4", claims={"gpu": ("claim", "shared")}))
    assert where(p) == ["n1", "n1", None]  # n1 holds the claim's device; two pods fill its cpu
    assert len(p.allocations) == 1 and p.allocations[0]["claim"] == "default/shared"
    texts = p.failed.outcome.reason_texts()
    assert "n1: Insufficient cpu: the pod requests 4, 8 of 8 allocatable in use" in texts
    assert "n2: resourceclaim default/shared not available on the node" in texts


def test_claims_already_allocated_in_the_state_hold_their_devices() -> None:
    held = claim("held", req(), allocation=[{"request": "req-0", "driver": DRV, "pool": "p1", "device": "g0"}])
    p = run(GPUS + [held], deployment("web", 2, claims=ONE_GPU))
    assert where(p) == ["n1", "n2"]
    assert [a["results"][0]["device"] for a in p.allocations] == ["g1", "g2"]


def test_node_filters_come_first_and_are_tallied() -> None:
    state = [node("n1"), node("n2", labels={"zone": "b"}), node("n3", cpu="1"), node("n4", unschedulable=True)]
    state[0]["spec"] = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}
    p = run(state, pod("p", cpu="2", nodeSelector={"zone": "b"}), pod("q", cpu="7"))
    assert where(p) == ["n2", None]
    assert full(p.failed.outcome.summary) == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
        "2 Insufficient cpu")
    texts = p.failed.outcome.reason_texts()
    assert "n2: Insufficient cpu: the pod requests 7, 2 of 8 allocatable in use" in texts
    assert "n3: Insufficient cpu: the pod requests 7, 0 of 1 allocatable in use" in texts
    assert "n1: node taint dedicated=ml:NoSchedule not tolerated" in texts
    assert "n4: node is unschedulable (spec.unschedulable)" in texts


def test_a_pod_no_node_passes_gets_the_schedulers_tally() -> None:
    p = run([node("n1", cpu="1"), node("n2", cpu="1")], pod("p", cpu="2"))
    assert full(p.failed.outcome.summary) == "0/2 nodes are available: 2 Insufficient cpu"
    assert p.failed.outcome.reason_texts()[0] == "n1: Insufficient cpu: the pod requests 2, 0 of 1 allocatable in use"


MODEL = f'device.attributes["{DRV}"].model == "a"'
ERROR_ON_N2 = [node("n1"), node("n2"), device_class(),
               rslice("s1", [dev("a", attributes={"model": {"string": "a"}})], node_name="n1", pool="p1"),
               rslice("s2", [dev("b")], node_name="n2", pool="p2"),
               template("sel", req(selectors=[MODEL]))]


def test_a_fatal_error_on_any_candidate_node_fails_the_pod_even_after_a_fit() -> None:
    p = run(ERROR_ON_N2, pod("p", claims={"gpu": ("template", "sel")}))
    assert p.placed == 0
    summary = p.failed.outcome.summary
    assert summary.node == "n2" and "no such key" in summary.detail


def test_a_node_the_filters_exclude_is_never_searched_for_errors() -> None:
    state = [dict(o) for o in ERROR_ON_N2]
    state[1] = node("n2", labels={"broken": "yes"})
    p = run(state, pod("p", claims={"gpu": ("template", "sel")},
                       affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                           "nodeSelectorTerms": [{"matchExpressions": [
                               {"key": "broken", "operator": "DoesNotExist"}]}]}}}))
    assert where(p) == ["n1"] and p.feasible


def pg(min_count: int | None, *claims: dict[str, str]) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"},
            "spec": {"schedulingPolicy": policy, "resourceClaims": list(claims)}}


GW = "GenericWorkload=true,DRAWorkloadResourceClaims=true"


@pytest.mark.parametrize(("min_count", "replicas", "placed"), [
    pytest.param(3, 3, 3, id="gang-reaches-min-count"),
    pytest.param(4, 4, 0, id="gang-below-min-count-binds-nothing"),
    pytest.param(None, 4, 3, id="basic-policy-binds-what-fits"),
])
def test_gangs_bind_only_at_min_count(min_count: int | None, replicas: int, placed: int) -> None:
    d = deployment("w", replicas, claims=ONE_GPU, schedulingGroup={"podGroupName": "pg"})
    p = run(GPUS, d, gates=GW, extra=[pg(min_count)])
    assert p.placed == placed
    if placed == 0:
        assert [full(n) for n in p.notes] == [
            "PodGroup default/pg needs 4 pods (gang minCount), only 3 fit: none of its pods is bound"]
        assert p.allocations == [] and not p.feasible


def test_a_gang_with_fewer_pods_than_min_count_is_judged_pod_by_pod() -> None:
    """One pod of a gang of 4 (reviewed as it is created): the scheduler waits for the others;
    whether this one can be placed is the answer."""
    p = run(GPUS, pod("w-0", claims=ONE_GPU, schedulingGroup={"podGroupName": "pg"}), gates=GW, extra=[pg(4)])
    assert (p.placed, p.notes) == (1, [])


def test_bound_members_count_towards_min_count() -> None:
    bound = [pod(f"old-{i}", nodeName="n2", schedulingGroup={"podGroupName": "pg"}) for i in range(2)]
    d = deployment("w", 2, claims=ONE_GPU, schedulingGroup={"podGroupName": "pg"})
    assert run(GPUS + bound, d, gates=GW, extra=[pg(4)]).placed == 2
    assert run(GPUS + bound[:1], d, gates=GW, extra=[pg(4)]).placed == 2  # 3 exist: it waits for the 4th
    four = deployment("w", 4, claims=ONE_GPU, schedulingGroup={"podGroupName": "pg"})
    assert run(GPUS + bound[:1], four, gates=GW, extra=[pg(5)]).placed == 0  # 3 fit + 1 bound < 5


def test_a_podgroup_claim_is_shared_by_its_pods() -> None:
    d = deployment("w", 3, claims=ONE_GPU, schedulingGroup={"podGroupName": "pg"})
    p = run(GPUS, d, gates=GW, extra=[pg(None, {"name": "gpu", "resourceClaimTemplateName": "one"})])
    assert where(p) == ["n1", "n1", "n1"]  # one claim, allocated on n1, pins them all
    assert [a["claim"] for a in p.allocations] == ["default/pg-gpu"]


def test_a_missing_podgroup_keeps_the_pods_waiting() -> None:
    d = deployment("w", 2, schedulingGroup={"podGroupName": "pg"})
    p = run(GPUS, d, gates=GW)
    assert p.placed == 0
    assert full(p.failed.outcome.summary) == "PodGroup default/pg not found: the scheduler keeps its pods waiting"


@pytest.mark.parametrize(("spec", "node_", "summary"), [
    pytest.param({"nodeName": "n2"}, "n2", None, id="no-claims-goes-to-its-node"),
    pytest.param({"nodeName": "n9"}, None, "node n9 (spec.nodeName) is not in the cluster state",
                 id="unknown-node"),
    pytest.param({"nodeName": "n2", "claims": ONE_GPU}, None,
                 "spec.nodeName is set: kube-scheduler does not schedule the pod, so nothing allocates claim "
                 "default/p-gpu", id="claims-nobody-allocates"),
    pytest.param({"nodeName": "n2", "cpu": "9"}, None,
                 "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match the requested node name",
                 id="kubelet-admission-checks-resources"),
])
def test_a_pod_naming_its_node_is_not_scheduled(spec: dict[str, Any], node_: str | None,
                                                 summary: str | None) -> None:
    p = run(GPUS, pod("p", **spec))
    assert where(p) == [node_]
    if summary is not None:
        assert full(p.failed.outcome.summary) == summary


def test_bound_pods_use_their_nodes_terminal_ones_do_not() -> None:
    bound = pod("old", cpu="8", nodeName="n1")
    done = pod("done", cpu="8", nodeName="n2")
    done["status"] = {"phase": "Succeeded"}
    p = run(GPUS + [bound, done], pod("p", cpu="1"))
    assert where(p) == ["n2"]


def test_a_claim_reserved_for_256_consumers_takes_no_more() -> None:
    full_claim = claim("busy", req(), allocation=[{"request": "req-0", "driver": DRV, "pool": "p1", "device": "g0"}])
    full_claim["status"]["reservedFor"] = [{"resource": "pods", "name": f"p{i}", "uid": str(i)} for i in range(256)]
    p = run(GPUS + [full_claim], pod("p", claims={"gpu": ("claim", "busy")}))
    assert full(p.failed.outcome.summary) == "claim default/busy: already reserved for 256 consumers, the limit"


def test_replicas_in_the_millions_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(place_module, "REPLICAS_MAX", 50)
    p = run([node("n1", pods="1000000")], deployment("many", 3_000_000))
    assert (p.placed, p.replicas, p.cut, p.feasible) == (50, 3_000_000, True, False)
    assert [full(n) for n in p.notes] == ["placed the first 50 pods only: more may fit"]


def test_the_deadline_stops_placing_between_pods() -> None:
    p = run([node("n1", pods="1000")], deployment("many", 10), deadline=-1.0)
    assert (p.placed, p.cut) == (1, True)
    assert [full(n) for n in p.notes] == ["the deadline was reached before every pod was placed: more may fit"]


def _pool_cluster() -> list[dict[str, Any]]:
    from tests.allocator.test_node_classes import pool_cluster
    objs = pool_cluster()
    for o in objs:
        if o["kind"] == "Node":
            o["status"] = {"allocatable": {"cpu": "4", "memory": "64Gi", "pods": "110"}}
    return objs + [gen_template()]


def gen_template() -> dict[str, Any]:
    """Six partitions of one GPU: one pod per GPU, eight per node."""
    from bench import gen
    tpl = gen.claim_template("pair-tpl")
    tpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 6
    return tpl


@pytest.mark.parametrize(("replicas", "cpu"), [pytest.param(70, "10m", id="devices-run-out"),
                                               pytest.param(40, "1", id="cpu-runs-out-first")])
def test_node_classes_change_nothing_in_a_placement(monkeypatch: pytest.MonkeyPatch, replicas: int,
                                                    cpu: str) -> None:
    """Devices earlier pods took re-key only the nodes whose pools hold them (``ClassMemo``): the
    pods, their nodes and devices, every reason and the step counts are what searching every node
    gives."""
    from bench import gen
    from webhook.allocator import engine

    gates = gen.GATES
    d = deployment("train", replicas, cpu=cpu, claims={"g": ("template", "pair-tpl")})

    def flat() -> str:
        p = run(_pool_cluster(), d, gates=gates)
        return json.dumps([[(x.pod, x.node, x.claims, x.outcome.steps, x.outcome.reason_texts()) for x in p.pods],
                           p.allocations, p.placed])
    on = flat()
    from webhook.allocator import heldclasses
    monkeypatch.setattr(heldclasses, "HELD_KEYS_MAX", 0)  # past the cap touched nodes are searched
    assert flat() == on
    monkeypatch.setattr(engine, "NODE_CLASSES", False)
    assert flat() == on
    assert json.loads(on)[2] > 0
