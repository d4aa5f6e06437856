"""B10: what the real kube-scheduler takes to place the pods whose fit we predict (issue 30, target 5).

Context for B3's workload row, not a target: B3 times our answer to "how many of 64 replicas
fit" through ``/validate``'s feasibility check; here the test rig's control plane (etcd,
kube-apiserver, kube-controller-manager and kube-scheduler 1.37, ``tests/rig``) places the same
Deployment on the same generated cluster (B3's nodes, slices, device classes and claim
template, created through the apiserver; no kubelet, so bound pods are never run). Timed from
the Deployment's create to the last of its pods bound (``spec.nodeName``): the controller
manager makes the ReplicaSet, the pods and one claim per pod from the template; the scheduler
allocates each claim and binds its pod. A second row times the scheduler's span alone, from
the first pod the controller manager made to the last bind. The floor of both is our warm
feasibility check of the same Deployment on the state as the apiserver stored it; the context
column says whether both sides agree on how many replicas fit.

Without the upstream binaries (``make upstream``) the rows are n/a.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import gen
from bench.common import Row, fmt_time, measure

NAME = "B10"
NAMESPACE = "b10"
DEPLOYMENT = "train"
TEMPLATE = "pair-tpl"
BIND_TIMEOUT = 600.0
THREADS = 6
MAX_STEPS = 200_000
"""``Settings.allocator_max_steps`` default."""


def run(quick: bool) -> list[Row]:
    nodes, replicas = (4, 4) if quick else (500, 64)
    case = f"{nodes} nodes: kube-scheduler binds a deployment of {replicas} replicas"
    try:
        from tests.rig.cluster import Cluster, RigError, ensure_binaries
        from tests.rig.procs import ProcError
        from webhook.gates import parse_spec
        ensure_binaries()
    except (ImportError, RuntimeError) as e:
        return [Row.na(NAME, case, f"the test rig or its binaries are missing: {e}")]
    with tempfile.TemporaryDirectory(prefix="bench-b10-") as tmp:
        try:
            with Cluster(Path(tmp), parse_spec(gen.GATES), control_plane=True) as cluster:
                return _measure(cluster.api, nodes, replicas, case)
        except (RigError, ProcError) as e:
            return [Row.na(NAME, case, f"the rig failed: {e}")]


def _measure(api: Any, nodes: int, replicas: int, case: str) -> list[Row]:
    from tests.rig.rest import Rest
    rest = Rest(api)
    objs = [o for o in gen.cluster(nodes) if o["kind"] != "ResourceClaimTemplate"]
    _load(api, objs)
    rest.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    rest.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": NAMESPACE}},
                exists_ok=True)
    rest.create(gen.claim_template(TEMPLATE, NAMESPACE))
    ours, fit = _ours(rest, replicas)
    t0 = time.monotonic()
    rest.create(gen.deployment(DEPLOYMENT, replicas, TEMPLATE, NAMESPACE))
    first, last, bound = _wait_bound(rest, replicas, t0)
    agree = "agree" if bound == fit else "DISAGREE"
    ctx = (f"{bound} of {replicas} bound by kube-scheduler, {fit} fit by our check ({agree}); "
           f"floor: our warm feasibility check of the same Deployment, /validate (n={ours.n})")
    if last is None:
        return [Row(NAME, case, f"> {fmt_time(BIND_TIMEOUT)}", fmt_time(ours.median), None, context=ctx)]
    total, span = last - t0, last - (first if first is not None else t0)
    return [Row(NAME, f"{case} (create → last bind)", fmt_time(total), fmt_time(ours.median),
                total / ours.median, context=ctx),
            Row(NAME, f"{case} (first pod → last bind)", fmt_time(span), fmt_time(ours.median),
                span / ours.median, context="the scheduler's span alone: the controller manager made the first pod")]


def _load(api: Any, objs: list[dict[str, Any]]) -> None:
    """Create the cluster's objects, device classes and nodes first, slices in parallel."""
    from tests.rig.control import register_node
    from tests.rig.rest import Rest
    rest = Rest(api)
    for o in objs:
        if o["kind"] == "DeviceClass":
            rest.create(o)
    for o in objs:
        if o["kind"] == "Node":
            register_node(rest, o)
    slices = [o for o in objs if o["kind"] == "ResourceSlice"]
    chunks = [slices[i::THREADS] for i in range(THREADS)]

    def create(chunk: list[dict[str, Any]]) -> None:
        r = Rest(api)
        with r.session:
            for s in chunk:
                r.create(s)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(create, chunks))


def _ours(rest: Any, replicas: int) -> tuple[Any, int]:
    """Our warm feasibility check of the Deployment on the state as stored: (timing, replicas that fit)."""
    from webhook.allocator import model_for, warm
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot
    from webhook.workloads.claims import Lookup
    from webhook.workloads.kinds import workload_of
    from webhook.workloads.placement import place
    from webhook.workloads.report import feasibility_warnings
    gates = FeatureGates.parse(gen.GATES)
    stored = [*rest.list("DeviceClass"), *rest.list("Node"), *rest.list("ResourceSlice"),
              *rest.list("ResourceClaimTemplate")]
    snap = ClusterSnapshot.from_objects(stored, source="bench-b10")
    warm(snap, gates)
    obj = gen.deployment(DEPLOYMENT, replicas, TEMPLATE, NAMESPACE)
    placement = place([workload_of(obj)], model_for(snap, gates), Lookup(snap), gates, max_steps=MAX_STEPS,
                      deadline=time.monotonic() + 60)
    timing = measure(lambda: feasibility_warnings(obj, snap, gates, deadline=time.monotonic() + 60,
                                                  max_steps=MAX_STEPS), iterations=20, max_seconds=5.0)
    return timing, placement.placed


def _wait_bound(rest: Any, replicas: int, t0: float) -> tuple[float | None, float | None, int]:
    """(first pod seen, last bind, pods bound) in monotonic seconds; last bind None on timeout."""
    first: float | None = None
    bound = 0
    while time.monotonic() - t0 < BIND_TIMEOUT:
        pods = rest.list("Pod", NAMESPACE)
        now = time.monotonic()
        if pods and first is None:
            first = now
        bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
        if bound >= replicas:
            return first, now, bound
        time.sleep(0.05)
    return first, None, bound
