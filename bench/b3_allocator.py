"""B3: allocator scaling on generated clusters (nodes × 8 GPUs × (1 whole + 7 partitions) + NICs).

Cases, each through ``webhook.allocator.feasibility_warnings`` (what ``/validate`` runs):
a 2-device grouped claim (two partitions of one GPU), a PodGroup of 4 claims (from templates in
the state), and two infeasible claims: one no device matches (a linear scan) and one that makes
the search explore combinations (9 partitions of one GPU that has 7: the step budget and the
deadline must bound it). "warm" reuses the allocator model of the snapshot (the steady state of a
serving process); "cold" includes building it for a new snapshot (the first request after a
state change). Floor: one Python pass that touches every device of the snapshot once.
Then the two infeasible claims on one node pool of 2,000 identical nodes against 10 (the
floor is the smaller cluster: how much more the same claim costs when the pool grows). Last, a
PodGroup of 16 claims (16 templates like the grouped claim: 32 partitions on the first node)
against a PodGroup of 1, on the largest cluster: joint mode, per-pod mode (claim by claim, as
the scheduler allocates gangs) and the feasibility check of ``/validate`` (joint, then claim by
claim unless the joint search kept claim order); the floor is the same call for one claim.
Pods (issue 25): a Pod with a template claim against the claim alone, a Deployment of 16
replicas against one replica, and one of 64 against the pod alone, on the largest cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench import gen
from bench.common import Row, Timing, fmt_time, interleaved, measure

NAME = "B3"
MAX_STEPS = 200_000
"""``Settings.allocator_max_steps`` default."""
TARGET = 5.0


def touch_every_device(snap: Any) -> int:
    """The floor: one pass over every device of every slice (read its name)."""
    n = 0
    for sl in snap.of("ResourceSlice"):
        for d in sl["spec"].get("devices") or ():
            n += len(d["name"])
    return n


def run(quick: bool) -> list[Row]:
    try:
        from webhook.allocator import feasibility as _feas  # noqa: F401
        from webhook.allocator import feasibility_warnings
        from webhook.allocator.model import model_for
        from webhook.gates import FeatureGates
        from webhook.state.base import ClusterSnapshot
    except ImportError as e:
        return [Row.na(NAME, "allocator", f"{e.name} missing")]
    gates = FeatureGates.parse(gen.GATES)
    sizes = (5, 10, 20) if quick else (50, 100, 500)
    iterations, seconds = (10, 0.5) if quick else (60, 4.0)
    cases: dict[str, dict[str, Any]] = {
        "grouped-claim-2": gen.grouped_claim(),
        "podgroup-4-claims": gen.podgroup(),
        "infeasible-no-match": gen.unmatchable_claim(),
        "infeasible-search": gen.infeasible_claim(),
    }
    # The production cap is the request deadline minus a margin (10 s - 0.5 s by default); the
    # suite uses a shorter one so it stays within its time budget. The step budget is the default.
    cap = 0.3 if quick else 2.0
    rows: list[Row] = []
    medians: dict[str, list[tuple[int, float, float]]] = {c: [] for c in cases}
    for nodes in sizes:
        objs = gen.cluster(nodes)
        snap = ClusterSnapshot.from_objects(objs, source=f"bench-{nodes}")
        devices = gen.device_count(objs)
        floor = measure(lambda s=snap: touch_every_device(s), iterations=iterations * 3, max_seconds=seconds)
        t0 = time.perf_counter()
        _ = model_for(snap, gates).slices  # the model converts slices when first used: all of them here
        build = time.perf_counter() - t0
        rows.append(Row(NAME, f"{nodes} nodes: allocator model build", fmt_time(build), fmt_time(floor.median),
                        build / floor.median, "(context)", None,
                        f"{devices} devices, every slice converted; once per snapshot and gate set (cold path)"))
        for case, obj in cases.items():
            def call(o: dict[str, Any] = obj, s: Any = snap) -> list[str]:
                return feasibility_warnings(o, s, gates, deadline=time.monotonic() + cap,
                                            max_steps=MAX_STEPS)
            warnings = call()
            verdict = "feasible" if not warnings else f"warns: {warnings[0][13:100]}"
            searching = case == "infeasible-search"
            t = measure(call, iterations=3 if searching else iterations,
                        max_seconds=0.0 if searching else seconds, warmup=0 if searching else 1)
            rows.append(Row.timed(NAME, f"{nodes} nodes: {case} (warm)", t, floor,
                                  max_ratio=TARGET if nodes == sizes[-1] else None,
                                  target=f"≤ {TARGET:g}× at {sizes[-1]} nodes" if nodes == sizes[-1] else "",
                                  extra=verdict))
            medians[case].append((nodes, t.median, floor.median))
        cold = _cold(snap, gates, cases["grouped-claim-2"], feasibility_warnings, model_for)
        rows.append(Row(NAME, f"{nodes} nodes: grouped-claim-2 (cold: new snapshot)", fmt_time(cold),
                        fmt_time(floor.median), cold / floor.median, "(context)", None,
                        "model build + check"))
    for case, pts in medians.items():
        rows.append(_growth(case, pts))
    rows += _pool_scaling(quick, {c: cases[c] for c in ("infeasible-no-match", "infeasible-search")}, cap,
                          iterations, seconds)
    rows += _podgroup_scaling(sizes[-1], cap, iterations, seconds)
    rows += _pod_scaling(sizes[-1], cap, iterations, seconds)
    rows += _planning(20 if quick else 2_000, cap, iterations, seconds)
    return rows + scale_rows(quick, cap)


EXPLAIN_TARGET, CAPACITY_COPIES, CAPACITY_TARGET, SWEEP_TARGET = 4.0, 16, 4.0, 1.0


def _planning(nodes: int, cap: float, iterations: int, seconds: float) -> list[Row]:
    """Issue 26: ``explain`` of a pod that fits (every node's verdict: node filters per node, the
    allocator once per node class) against placing that pod alone (``simulate``'s placement), and
    ``capacity`` with a limit of ``CAPACITY_COPIES`` against placing a Deployment of as many
    replicas: the per-node table and the pool use cost little beyond the placement itself. Last,
    ``capacity`` at its default limit (``planning.LIMIT`` copies) against placing a Deployment of
    as many replicas as ``simulate`` does: the same nodes, found by a sweep (``place``'s
    ``sweep``) instead of every node asked for every replica."""
    from webhook.allocator import model_for, warm
    from webhook.gates import FeatureGates
    from webhook.planning import LIMIT, Budget, capacity, explain
    from webhook.state.base import ClusterSnapshot
    from webhook.workloads import Lookup, place, workload_of
    gates = FeatureGates.parse(gen.GATES)
    snap = ClusterSnapshot.from_objects(gen.cluster(nodes) + [gen.claim_template("pair-tpl")],
                                        source=f"bench-planning-{nodes}")
    warm(snap, gates)
    model = model_for(snap, gates)
    pod, many = gen.pod("trainer", "pair-tpl"), gen.deployment("train", CAPACITY_COPIES, "pair-tpl")
    most = gen.deployment("train", LIMIT, "pair-tpl")

    def budget() -> Budget:
        return Budget(MAX_STEPS, time.monotonic() + 10 * cap)

    def placed(obj: dict[str, Any]) -> Any:
        return place([workload_of(obj)], model, Lookup(snap), gates, max_steps=MAX_STEPS,
                     deadline=time.monotonic() + 10 * cap)

    calls = {"explain": lambda: explain([pod], snap, gates, budget()), "place": lambda: placed(pod),
             "capacity": lambda: capacity([pod], snap, gates, budget(), CAPACITY_COPIES),
             "deployment": lambda: placed(many),
             "capacity-limit": lambda: capacity([pod], snap, gates, budget(), LIMIT),
             "deployment-limit": lambda: placed(most)}
    assert explain([pod], snap, gates, budget()).fits and capacity([pod], snap, gates, budget(),
                                                                  CAPACITY_COPIES).fits == CAPACITY_COPIES
    swept, whole = capacity([pod], snap, gates, budget(), LIMIT), placed(most)
    assert swept.fits == whole.placed and [n for n, k in swept.per_node.items() for _ in range(k)] == sorted(
        p.node for p in whole.pods if p.node), "the sweep places as simulate does"
    t = interleaved(calls, iterations=iterations, max_seconds=2 * seconds, rounds=5)
    return [Row.timed(NAME, f"{nodes} nodes: explain a pod that fits vs placing it (warm)", t["explain"],
                      t["place"], max_ratio=EXPLAIN_TARGET, extra="floor: the pod placed alone"),
            Row.timed(NAME, f"{nodes} nodes: capacity up to {CAPACITY_COPIES} vs a deployment of as many (warm)",
                      t["capacity"], t["deployment"], max_ratio=CAPACITY_TARGET,
                      extra=f"floor: {CAPACITY_COPIES} replicas placed"),
            Row.timed(NAME, f"{nodes} nodes: capacity up to {LIMIT:,} (default) vs a deployment of as many (warm)",
                      t["capacity-limit"], t["deployment-limit"], max_ratio=SWEEP_TARGET,
                      extra=f"floor: {LIMIT:,} replicas placed as simulate places them; {swept.fits} fit")]


POD_TARGET, REPLICAS, REPLICAS_TARGET = 2.0, 16, 4.0
WORKLOAD, WORKLOAD_TARGET = 64, 20.0
"""Issue 30 target 5: "how many of N replicas fit" for N = 64 costs at most 20 times one pod."""


def _pod_scaling(nodes: int, cap: float, iterations: int, seconds: float) -> list[Row]:
    """Issue 25: a Pod with a template claim costs little more than the claim alone (node filters,
    claims made from the template, one placement); a Deployment of ``REPLICAS`` identical pods,
    placed one at a time, costs at most ``REPLICAS_TARGET`` times ``REPLICAS`` one-replica
    requests: each further replica pays one search of the node it goes to (longer as that node
    fills, first fit), not a search of every node (node classes, filters and fits are shared
    across replicas). Both through the feasibility check of ``/validate``."""
    from webhook.allocator import model_for, warm
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot
    from webhook.workloads.report import feasibility_warnings
    gates = FeatureGates.parse(gen.GATES)
    snap = ClusterSnapshot.from_objects(gen.cluster(nodes) + [gen.claim_template("pair-tpl")],
                                        source=f"bench-pods-{nodes}")
    warm(snap, gates)
    model_for(snap, gates)
    objs = {"claim": gen.claim_template("pair-tpl"), "pod": gen.pod("trainer", "pair-tpl"),
            "one": gen.deployment("train", 1, "pair-tpl"), "many": gen.deployment("train", REPLICAS, "pair-tpl"),
            "workload": gen.deployment("train", WORKLOAD, "pair-tpl")}
    calls = {k: (lambda o=o: feasibility_warnings(o, snap, gates, deadline=time.monotonic() + 10 * cap,
                                                  max_steps=MAX_STEPS)) for k, o in objs.items()}
    short = bool(calls["workload"]())  # a quick run's small cluster cannot hold them all: no row then
    if short:
        del calls["workload"]
    assert all(not fn() for fn in calls.values()), "every replica fits"
    t = interleaved(calls, iterations=2 * iterations, max_seconds=2 * seconds, rounds=10)
    return [Row.timed(NAME, f"{nodes} nodes: pod with a template claim vs the claim alone (warm)", t["pod"],
                      t["claim"], max_ratio=POD_TARGET, extra="floor: the template's claim, /validate"),
            Row.timed(NAME, f"{nodes} nodes: deployment of {REPLICAS} replicas vs {REPLICAS} × 1 (warm)", t["many"],
                      Timing([x * REPLICAS for x in t["one"].samples]), max_ratio=REPLICAS_TARGET,
                      extra=f"floor: {REPLICAS} times the same deployment with one replica"),
            Row.na(NAME, f"{nodes} nodes: deployment of {WORKLOAD} replicas vs one pod (warm)",
                   f"{nodes} nodes cannot hold {WORKLOAD} replicas") if short else
            Row.timed(NAME, f"{nodes} nodes: deployment of {WORKLOAD} replicas vs one pod (warm)", t["workload"],
                      t["pod"], max_ratio=WORKLOAD_TARGET,
                      extra="floor: the pod alone; both through /validate's feasibility check")]


GANG, GANG_TARGET = 16, 20.0


def _podgroup_scaling(nodes: int, cap: float, iterations: int, seconds: float) -> list[Row]:
    """Issue 18 target 2: a PodGroup of ``GANG`` claims costs at most ``GANG_TARGET``× one claim
    (same cluster, same run), in each mode."""
    from webhook.allocator import JOINT, PER_CLAIM, Call, Limits, allocate, feasibility_warnings, model_for
    from webhook.allocator.feasibility import claims_for
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot
    gates = FeatureGates.parse(gen.GATES)
    objs = gen.cluster(nodes) + [gen.claim_template(f"gang{GANG}-tpl-{i}") for i in range(GANG)]
    snap = ClusterSnapshot.from_objects(objs, source=f"bench-gang-{nodes}")
    model = model_for(snap, gates)
    groups = {n: gen.podgroup(f"gang{GANG}", claims=n) for n in (1, GANG)}
    rows = []
    for mode in (JOINT, PER_CLAIM, "feasibility"):
        calls: dict[str, Any] = {}
        for n, pg in groups.items():
            claims, _ = claims_for(pg, snap)

            def call(c: list[dict[str, Any]] = claims, m: str = mode, p: dict[str, Any] = pg) -> Any:
                if m == "feasibility":
                    return feasibility_warnings(p, snap, gates, deadline=time.monotonic() + cap, max_steps=MAX_STEPS)
                return allocate(c, model, Call(mode=m, limits=Limits(MAX_STEPS, time.monotonic() + cap)))
            calls[str(n)] = call
        # Alternating rounds: load from other jobs hits the gang and its floor alike.
        t = {int(k): v for k, v in interleaved(calls, iterations=2 * iterations, max_seconds=2 * seconds,
                                                rounds=10).items()}
        what = "feasibility check (joint, then per-pod)" if mode == "feasibility" else f"{mode} mode"
        rows.append(Row.timed(NAME, f"{nodes} nodes: podgroup of {GANG} vs 1 claim, {what} (warm)", t[GANG], t[1],
                              max_ratio=GANG_TARGET, extra="floor: the PodGroup of one claim"))
    return rows


POOL_SIZES = (10, 2000)
POOL_TARGET = 2.0


def _pool_scaling(quick: bool, cases: dict[str, dict[str, Any]], cap: float, iterations: int,
                  seconds: float) -> list[Row]:
    """Issue 18 target 2: an infeasible claim on one node pool of identical machines costs at most
    ``POOL_TARGET``× as much at 2,000 nodes as at 10 (same run). The larger cluster's model and
    node classes are built first (``warm``, as the server does after a state change)."""
    from webhook.allocator import feasibility_warnings, warm
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot
    gates = FeatureGates.parse(gen.GATES)
    small, large = (10, 100) if quick else POOL_SIZES
    snaps = {n: ClusterSnapshot.from_objects(gen.cluster(n), source=f"bench-pool-{n}") for n in (small, large)}
    for snap in snaps.values():
        warm(snap, gates)
    rows = []
    for case, obj in cases.items():
        t: dict[int, Any] = {}
        for n, snap in snaps.items():
            def call(o: dict[str, Any] = obj, s: Any = snap) -> list[str]:
                return feasibility_warnings(o, s, gates, deadline=time.monotonic() + cap, max_steps=MAX_STEPS)
            t[n] = measure(call, iterations=iterations, max_seconds=seconds)
        rows.append(Row.timed(NAME, f"{case}: {large} vs {small} nodes in one pool (warm)", t[large], t[small],
                              max_ratio=POOL_TARGET, extra="floor: the same claim at the smaller size"))
    return rows


def _cold(snap: Any, gates: Any, obj: dict[str, Any], feas: Callable[..., list[str]],
          model_for: Callable[..., Any]) -> float:
    from webhook.state.base import ClusterSnapshot
    fresh = ClusterSnapshot(snap.objects, snap.source, snap.synced_at, snap.version + 1000)
    t0 = time.perf_counter()
    feas(obj, fresh, gates, deadline=time.monotonic() + 30, max_steps=MAX_STEPS)
    return time.perf_counter() - t0


def _growth(case: str, pts: list[tuple[int, float, float]]) -> Row:
    """Growth exponent between the smallest and largest cluster: time ∝ nodes^k; k ≤ 1 is linear."""
    import math
    (n0, t0, _), (n1, t1, _) = pts[0], pts[-1]
    k = math.log(t1 / t0) / math.log(n1 / n0) if t0 > 0 and t1 > 0 and n1 > n0 else float("nan")
    series = ", ".join(f"{n}: {fmt_time(t)}" for n, t, _ in pts)
    return Row(NAME, f"{case}: growth {n0}→{n1} nodes", f"k = {k:.2f}", "k = 1 (linear)", None,
               "≤ linear (k ≤ 1.1)", None if k != k else k <= 1.1, series)




SCALE_SIZES, SCALE_TARGET = (500, 5_000), 2.0


def nic_template(name: str) -> dict[str, Any]:
    """A claim template for a 10G share of one NIC (20 such shares fit on a node's two NICs)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {
                "deviceClassName": "nic.example.com", "allocationMode": "ExactCount", "count": 1,
                "capacity": {"requests": {"bandwidth": "10G"}}}}]}}}}


def scale_rows(quick: bool, cap: float = 2.0) -> list[Row]:
    """Issue 30 target 4: a claim, a pod and a PodGroup of ``GANG`` claims (NIC shares, which fit
    on one node) cost at most ``SCALE_TARGET``× as much at 5,000 nodes as at 500, on the shape with
    one GPU a node (8 GPU devices and 2 NICs); models warmed first, calls interleaved (full mode)."""
    if quick:
        return []
    from webhook.allocator import feasibility_warnings, warm
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot
    from webhook.state.compact import compact_all
    from webhook.workloads.report import feasibility_warnings as workload_warnings
    gates = FeatureGates.parse(gen.GATES)
    objs = {"claim": gen.grouped_claim(), "pod": gen.pod("trainer", "pair-tpl"),
            "podgroup": gen.podgroup("nics", claims=GANG)}
    calls = {}
    for n in SCALE_SIZES:
        extra = [gen.claim_template("pair-tpl"), *(nic_template(f"nics-tpl-{i}") for i in range(GANG))]
        snap = ClusterSnapshot.from_objects(compact_all(gen.cluster(n, gpus=1) + extra), source=f"bench-scale-{n}")
        warm(snap, gates)
        for k, o in objs.items():
            check = workload_warnings if k == "pod" else feasibility_warnings

            def call(o: dict[str, Any] = o, s: Any = snap, f: Any = check) -> list[str]:
                return f(o, s, gates, deadline=time.monotonic() + cap, max_steps=MAX_STEPS)
            assert not call(), f"{k} fits at {n} nodes"
            calls[f"{k}@{n}"] = call
    t = interleaved(calls, iterations=40, max_seconds=8.0, rounds=5)
    small, large = SCALE_SIZES
    return [Row.timed(NAME, f"{k}: {large} vs {small} nodes, 8 devices a node (warm)", t[f"{k}@{large}"],
                      t[f"{k}@{small}"], max_ratio=SCALE_TARGET, extra=f"floor: the same at {small} nodes")
            for k in objs]
