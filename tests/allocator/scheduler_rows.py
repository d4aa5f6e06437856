"""Scheduler cases where our answer differs from what kube-scheduler 1.37 does (issue 25).

Each row is the smallest form of a disagreement the scheduler family found (or that issue 25
names): the cluster objects, the inputs of `simulate`, our gate overrides, the gate profile of
the control plane it was recorded on, and whether kube-scheduler bound each pod.
`tests/allocator/test_scheduler_rows.py` checks our answer against the rows without Go;
`tests/differential/test_scheduler_rows.py` checks on the real control plane that each row is
what kube-scheduler does, so a row cannot drift away from upstream.

A row whose disagreement waits for other work names it in ``waiting_for``: our side is then
expected to fail it (a strict expected failure, so the row turns red the day we agree).

The rows are isolated as generated scenarios are (`tests/differential/gen_sched.py`): their own
nodes, driver, classes and namespace, pods for the rig's `dra-diff` scheduler profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.differential.gen_sched import IMAGE, RANK, SCENARIO, SCHEDULER, SchedScenario, ranks


@dataclass
class SchedRow:
    id: str
    profile: str
    gates: dict[str, bool]
    scenario: SchedScenario
    bound: dict[str, bool]
    waiting_for: str = ""
    why: str = ""


def _driver(key: str) -> str:
    return f"gpu.{key}.example.com"


def node(key: str, name: str, rank: int) -> dict[str, Any]:
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"{key}-{name}", "labels": {SCENARIO: key, RANK: str(rank), "zone": "a"}},
            "spec": {}, "status": {"capacity": alloc, "allocatable": alloc,
                                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def device_class(key: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"{key}-gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{_driver(key)}"'}}]}}


def node_slice(key: str, name: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{key}-{name}"},
            "spec": {"driver": _driver(key), "nodeName": f"{key}-{name}",
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def claim(key: str, name: str, selector: str = "", status: dict[str, Any] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": f"{key}-gpu", "allocationMode": "ExactCount", "count": 1}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    out: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": f"row-{key}"},
                           "spec": {"devices": {"requests": [{"name": "r0", "exactly": exactly}]}}}
    if status is not None:
        out["status"] = status
    return out


def pod(key: str, name: str, claims: list[str], nodes: int) -> dict[str, Any]:
    refs = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": f"row-{key}", "labels": {SCENARIO: key}},
            "spec": {"schedulerName": SCHEDULER, "nodeSelector": {SCENARIO: key},
                     "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0,
                     "affinity": {"nodeAffinity": ranks(nodes)}, "resourceClaims": refs,
                     "containers": [{"name": "main", "image": IMAGE,
                                     "resources": {"claims": [{"name": r["name"]} for r in refs]}}]}}


def scenario(key: str, cluster: list[dict[str, Any]], inputs: list[dict[str, Any]],
             profile: str = "defaults") -> SchedScenario:
    pods = [o["metadata"]["name"] for o in inputs if o["kind"] == "Pod"]
    return SchedScenario(f"row-{key}", key, f"row-{key}", profile, cluster, inputs, "pods", pods)


def _allocated_on(key: str, node_name: str, device: str, *, at: str | None) -> dict[str, Any]:
    allocation: dict[str, Any] = {
        "devices": {"results": [{"request": "r0", "driver": _driver(key), "pool": node_name, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                 "values": [f"{key}-{node_name}"]}]}]}}
    if at:
        allocation["allocationTimestamp"] = at
    return {"allocation": allocation}


def tainted(n: dict[str, Any]) -> dict[str, Any]:
    n["spec"]["taints"] = [{"key": "dedicated", "value": "yes", "effect": "NoSchedule"}]
    return n


MODEL_A = 'device.attributes["gpu.rc.example.com"].model == "a"'

ROWS: list[SchedRow] = [
    SchedRow(
        "pod-names-one-claim-twice", "defaults", {},
        scenario("ra", [node("ra", "a", 0), node_slice("ra", "a", [{"name": "d0"}, {"name": "d1"}]),
                        device_class("ra")],
                 [claim("ra", "claim-0"), pod("ra", "pod-0", ["claim-0", "claim-0"], 1)]),
        {"pod-0": False}, "",
        "The scheduler reserves the claim once per pod entry; the apiserver refuses the second, "
        "identical reservedFor entry (Duplicate value), at every retry."),
    SchedRow(
        "claim-allocated-without-allocation-time", "defaults", {},
        scenario("rb", [node("rb", "a", 0), node_slice("rb", "a", [{"name": "d0"}]), device_class("rb"),
                        claim("rb", "held", status=_allocated_on("rb", "a", "d0", at=None))],
                 [pod("rb", "pod-0", ["held"], 1)]),
        {"pod-0": False}, "",
        "With DRADeviceBindingConditions on (the 1.37 default) the scheduler stamps "
        "allocationTimestamp on an allocated claim while reserving it; the apiserver refuses any "
        "change to a stored allocation, so a claim allocated without the stamp (by an older "
        "scheduler, or with the gate off) never gets another consumer."),
    SchedRow(
        "cel-error-on-a-later-node", "defaults", {},
        scenario("rc", [node("rc", "a", 0), node("rc", "b", 1), device_class("rc"),
                        node_slice("rc", "a", [{"name": "d0", "attributes": {"model": {"string": "a"}}}]),
                        node_slice("rc", "b", [{"name": "d0"}])],
                 [claim("rc", "claim-0", MODEL_A), pod("rc", "pod-0", ["claim-0"], 2)]),
        {"pod-0": False}, "",
        "The scheduler filters every node; the selector fails at run time on the device of node b "
        "(no attribute model) and a filter error fails the whole attempt, although node a fits."),
    SchedRow(
        "allocated-for-another-node-and-unreserved", "defaults", {},
        scenario("rd", [node("rd", "a", 0), tainted(node("rd", "b", 1)), device_class("rd"),
                        node_slice("rd", "a", [{"name": "d0"}]), node_slice("rd", "b", [{"name": "d0"}]),
                        claim("rd", "held", status=_allocated_on("rd", "b", "d0", at="2026-01-01T00:00:00Z"))],
                 [pod("rd", "pod-0", ["held"], 2)]),
        {"pod-0": True}, "",
        "The claim is allocated for node b, which the pod does not tolerate, and reserved for no pod: "
        "after the failed attempt the scheduler's DRA plugin deallocates it (PostFilter), and the next "
        "attempt allocates it on node a."),
]
