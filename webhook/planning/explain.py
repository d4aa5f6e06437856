"""Why a pod (or a workload's replicas) cannot be placed: per node, the first thing in the way.

Pure. ``explain`` places the pods as ``simulate`` does (``workloads.place``: node filters, then
the one allocator, pod by pod), so its yes/no is ``simulate``'s. Then, for the first pod that
was not placed, every node's reason comes from that attempt (``verdicts.from_outcome``); when
every pod was placed, the first pod's verdict is asked of every node (``verdicts.grouped_verdicts``)
so that the answer names every node that fits. Nodes are grouped by verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook import BadInput
from webhook.allocator.model import model_for
from webhook.allocator.reasons import Code, Reason, note
from webhook.gates import FeatureGates
from webhook.planning.members import Member, members
from webhook.planning.verdicts import Budget, Verdict, from_outcome, grouped, grouped_verdicts
from webhook.raw import as_dict
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, WorkloadError, is_pod_source, place, pod_claims, workload_of
from webhook.workloads.nodeuse import NodeUse
from webhook.workloads.placement import deallocated


@dataclass
class Explanation:
    """The answer: whether the pods fit, and per group of nodes what keeps the pod off them."""

    pod: str
    """``namespace/name`` of the pod the verdicts are about: the first not placed, else the first."""
    fits: bool
    node: str | None = None
    """Where ``pod`` goes when it fits (the first node in name order that takes it)."""
    verdicts: list[Verdict] = field(default_factory=list)
    blockers: list[Reason] = field(default_factory=list)
    """Reasons about the pod as a whole (a claim not found, a PodGroup missing), before any node."""
    summary: Reason | None = None
    """The scheduler-style count ("0/N nodes are available: ...") when it fits nowhere."""
    notes: list[Reason] = field(default_factory=list)
    placed: int = 0
    replicas: int = 0
    nodes: int = 0
    """Nodes in the state."""
    members: list[Member] = field(default_factory=list)
    """The pods that name a PodGroup, each with its verdict (``planning.members``)."""

    @property
    def exit_code(self) -> int:
        return 0 if self.fits else 1


def explain(objects: Sequence[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
            budget: Budget) -> Explanation:
    """Explain the Pods and workloads among ``objects`` (already as the apiserver stores them);
    the other objects are the claims, templates and PodGroups they name. Raises ``BadInput``
    when there is no pod to explain."""
    try:
        workloads = [workload_of(o) for o in objects if is_pod_source(o)]
    except WorkloadError as e:
        raise BadInput(str(e)) from None
    if not workloads:
        raise BadInput("nothing to explain: give a Pod or a Deployment, ReplicaSet, StatefulSet, Job or CronJob")
    others = [o for o in objects if not is_pod_source(o)]
    model = model_for(snapshot, gates)
    lookup = Lookup(snapshot, others)
    placement = place(workloads, model, lookup, gates, max_steps=budget.max_steps, deadline=budget.deadline,
                      sweep=True, report=budget.report)
    nodes = NodeUse(snapshot.of("Node"), snapshot.of("Pod"))
    names = list(nodes.facts)
    out = Explanation("", placement.feasible, notes=list(placement.notes), placed=placement.placed,
                      replicas=placement.replicas, nodes=len(names), members=members(workloads, placement))
    failed = placement.failed
    if failed is not None:
        out.pod = failed.pod
        whole = [r for r in failed.outcome.reasons if not r.node and r.code != Code.NODES_UNAVAILABLE]
        if any(r.node for r in failed.outcome.reasons) or not whole:
            out.verdicts = grouped(from_outcome(failed.outcome, names))
            out.summary = failed.outcome.summary
        out.blockers = whole
        return out
    first = next((w for w in workloads if w.replicas), None)
    if first is None:
        out.notes.append(note("no pods to place: every workload asks for 0 replicas"))
        return out
    pod = first.pod(0)
    out.pod = f"{first.namespace}/{pod['metadata']['name']}"
    out.node = placement.pods[0].node if placement.pods else None
    uses, missing = pod_claims(pod, lookup, _group(pod, lookup), gates)
    if missing:  # placed all the same? only when a gang note unplaced it; say why
        out.blockers = [note(m) for m in missing]
        return out
    # A claim the scheduler deallocates on the way is judged as it will be: not allocated.
    claims = [deallocated(u.claim) if u.key in placement.released else u.claim for u in uses]
    out.notes += [note(f"kube-scheduler deallocates claim {k} (allocated where the pod cannot run, reserved by "
                       f"no pod) after a failed attempt, and allocates it again") for k in placement.released]
    out.verdicts = grouped_verdicts(pod, claims, model, nodes, budget)
    return out



def _group(pod: dict[str, Any], lookup: Lookup) -> dict[str, Any] | None:
    ref = as_dict(as_dict(pod.get("spec")).get("schedulingGroup")).get("podGroupName")
    if not isinstance(ref, str) or not ref:
        return None
    return lookup.find("PodGroup", str(as_dict(pod.get("metadata")).get("namespace") or "default"), ref)


def without_pod(snapshot: ClusterSnapshot, namespace: str, name: str) -> ClusterSnapshot:
    """``snapshot`` without the Pod ``namespace/name``: a live pod is explained as if it were
    new (its own requests do not count against the node it may be bound to)."""
    def other(p: dict[str, Any]) -> bool:
        meta = as_dict(p.get("metadata"))
        return not (meta.get("name") == name and (meta.get("namespace") or "default") == namespace)
    objects = {k: (tuple(p for p in v if other(p)) if k == "Pod" else v) for k, v in snapshot.objects.items()}
    return ClusterSnapshot(objects, snapshot.source, snapshot.synced_at, snapshot.version)


def as_new(pod: dict[str, Any]) -> dict[str, Any]:
    """A live pod as a new one: a node the scheduler bound it to (``spec.nodeName`` with a
    PodScheduled condition) is dropped, so every node is judged; its claims stay as they are."""
    spec = as_dict(pod.get("spec"))
    conditions = as_dict(pod.get("status")).get("conditions")
    scheduled = any(as_dict(c).get("type") == "PodScheduled" and as_dict(c).get("status") == "True"
                    for c in (conditions if isinstance(conditions, list) else ()))
    if not spec.get("nodeName") or not scheduled:
        return pod
    return {**pod, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}
