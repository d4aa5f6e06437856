"""How many more of a pod (a workload's pod, or a claim) fit now, per node and in total, and how
full each pool is.

Pure. The unit is placed again and again (``workloads.place``: node filters, then the one
allocator, each copy holding what it got, nodes tried in name order) until a copy does not fit
or ``limit`` copies are placed; the answer then is "at least ``limit``". A ResourceClaim or a
ResourceClaimTemplate is counted as pods that each get such a claim and tolerate every taint
(so only the devices, and a node's pod limit, bound them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from webhook import BadInput
from webhook.allocator.model import AllocatedState, Model, model_for
from webhook.allocator.reasons import Reason
from webhook.gates import FeatureGates
from webhook.planning.verdicts import Budget
from webhook.raw import as_dict
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, Workload, WorkloadError, is_pod_source, place, workload_of
from webhook.workloads.placement import REPLICAS_MAX

Number = int | Fraction
"""A quantity as the model holds it."""
LIMIT = 1_000
"""Copies tried by default; at most ``REPLICAS_MAX``."""
UNIT_TEMPLATE = "capacity-unit"


@dataclass(frozen=True)
class PoolUse:
    """One pool now: devices, counters and consumable capacity, used and total."""

    driver: str
    pool: str
    devices: int
    allocated: int
    counters: dict[str, dict[str, tuple[Number, Number]]]
    """counter set -> counter -> (used, total)."""
    capacity: dict[str, tuple[Number, Number]]
    """consumable capacity name -> (used, total) over the pool's shareable devices."""


@dataclass
class Capacity:
    unit: str
    """What is counted ("pod default/x", "pods of Deployment default/d", "claims like default/c")."""
    fits: int
    limit: int
    capped: bool
    per_node: dict[str, int] = field(default_factory=dict)
    """Every node, in name order, and how many copies went there."""
    stopped: Reason | None = None
    """Why the next copy did not fit (its summary)."""
    pools: list[PoolUse] = field(default_factory=list)
    replicas: int = 1
    """Pods per workload (whole workloads that fit: ``fits // replicas``)."""


def _unit(objects: Sequence[dict[str, Any]]) -> tuple[Workload, list[dict[str, Any]], str]:
    """(the workload whose pod is the unit, the objects it refers to, what the unit is called)."""
    try:
        sources = [workload_of(o) for o in objects if is_pod_source(o)]
    except WorkloadError as e:
        raise BadInput(str(e)) from None
    others = [o for o in objects if not is_pod_source(o)]
    if sources:
        w = sources[0]
        what = f"pod {w.namespace}/{w.name}" if w.kind == "Pod" else f"pods of {w.label}"
        return w, others, what
    spec_of = {"ResourceClaim": lambda o: as_dict(o.get("spec")),
               "ResourceClaimTemplate": lambda o: as_dict(as_dict(o.get("spec")).get("spec"))}
    claim = next((o for o in objects if o.get("kind") in spec_of), None)
    if claim is None:
        raise BadInput("capacity takes a Pod, a workload (Deployment, ReplicaSet, StatefulSet, Job, CronJob), "
                       "a ResourceClaim or a ResourceClaimTemplate")
    meta = as_dict(claim.get("metadata"))
    ns = str(meta.get("namespace") or "default")
    tpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": UNIT_TEMPLATE, "namespace": ns}, "spec": {"spec": spec_of[claim["kind"]](claim)}}
    pod = {"metadata": {"name": "unit", "namespace": ns},
           "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{"name": "c", "image": "x"}],
                    "resourceClaims": [{"name": "claim", "resourceClaimTemplateName": UNIT_TEMPLATE}]}}
    what = f"claims like {claim['kind']} {ns}/{meta.get('name')}"
    return Workload("Pod", ns, "unit", 1, pod), [tpl, *others], what


def capacity(objects: Sequence[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
             budget: Budget, limit: int = LIMIT) -> Capacity:
    """How many more copies of the unit in ``objects`` fit in ``snapshot`` (at most ``limit``)."""
    if not 1 <= limit <= REPLICAS_MAX:
        raise BadInput(f"the limit must be between 1 and {REPLICAS_MAX}, got {limit}")
    unit, others, what = _unit(objects)
    # Copies as replicas of one ReplicaSet: each its own name, so its own template claims.
    copies = Workload("ReplicaSet", unit.namespace, unit.name, limit, unit.template)
    model = model_for(snapshot, gates)
    got = place([copies], model, Lookup(snapshot, others), gates, max_steps=budget.max_steps,
                deadline=budget.deadline, sweep=True, report=budget.report)
    per_node = Counter(p.node for p in got.pods if p.node is not None)
    out = Capacity(what, got.placed, limit, got.placed >= limit or got.cut,
                   {n: per_node.get(n, 0) for n in sorted(model.nodes)},
                   got.failed.outcome.summary if got.failed is not None else None,
                   pool_use(model), unit.replicas if unit.kind != "Pod" else 1)
    return out


def pool_use(model: Model, held: AllocatedState | None = None) -> list[PoolUse]:
    """Every pool of the model (as the gates show it), sorted by driver and pool. What does not
    depend on use (devices, totals) is read once per model (``_pools``); then only the devices
    in use and the shareable ones are looked at. The use under the model's own allocated state
    is kept per model (``_USE``: the latest): read it, never change it."""
    if held is None:
        kept = _USE[0]
        if kept is not None and kept[0] is model:
            return list(kept[1])
        got = _pool_use(model, model.allocated)
        _USE[0] = (model, got)
        return list(got)
    return _pool_use(model, held)


_USE: list[tuple[Model, list[PoolUse]] | None] = [None]
"""The latest model and its pools' use under its allocated state (as one value: threads)."""


def _pool_use(model: Model, alloc: AllocatedState) -> list[PoolUse]:
    pools, occurrences = _pools(model)
    allocated: dict[tuple[str, str], int] = {}
    used: dict[tuple[str, str], dict[tuple[str, str], Number]] = {}
    for k in alloc.dedicated | alloc.shared | alloc.aggregated.keys():
        for d in occurrences.get(k, ()):
            pk = (k[0], k[1])
            allocated[pk] = allocated.get(pk, 0) + 1
            into = used.setdefault(pk, {})
            for cs, counters, _groups in d.consumes:
                for c, v in counters:
                    into[(cs, c)] = into.get((cs, c), 0) + v
    out = []
    for pk, (devices, totals, multi) in pools.items():
        mine = used.get(pk, {})
        caps: dict[str, list[Number]] = {}
        for d in multi:
            agg = alloc.aggregated.get(d.dkey, {})
            for _qualified, name, spec in d.caps:
                got = caps.setdefault(name, [0, 0])
                got[0] += agg.get(name, 0)
                got[1] += spec.value
        counters = {cs: {c: (mine.get((cs, c), 0), total) for c, total in vals.items()} for cs, vals in totals.items()}
        out.append(PoolUse(pk[0], pk[1], devices, allocated.get(pk, 0), counters,
                           {n: (u, t) for n, (u, t) in sorted(caps.items())}))
    return out


_PoolFacts = tuple[int, dict[str, dict[str, Number]], list[Any]]
"""(devices, counter set -> counter -> total, the shareable devices) of one pool."""
_STATIC: list[tuple[Model, dict[tuple[str, str], _PoolFacts], dict[Any, list[Any]]] | None] = [None]
"""The latest model's pools, sorted, and each device key's devices (as one value: threads)."""


def _pools(model: Model) -> tuple[dict[tuple[str, str], _PoolFacts], dict[Any, list[Any]]]:
    entry = _STATIC[0]
    if entry is not None and entry[0] is model:
        return entry[1], entry[2]
    by_pool: dict[tuple[str, str], list[Any]] = {}
    for sl in model.slices:
        by_pool.setdefault(sl.pool_key(), []).append(sl)
    pools: dict[tuple[str, str], _PoolFacts] = {}
    occurrences: dict[Any, list[Any]] = {}
    for pk, slices in sorted(by_pool.items()):
        totals: dict[str, dict[str, Number]] = {}
        devices = 0
        multi = []
        for sl in slices:
            for cs, vals in sl.counter_sets.items():
                totals.setdefault(cs, vals)
            for d in sl.devices:
                devices += 1
                occurrences.setdefault(d.dkey, []).append(d)
                if d.allow_multi:
                    multi.append(d)
        pools[pk] = (devices, totals, multi)
    _STATIC[0] = (model, pools, occurrences)
    return pools, occurrences
