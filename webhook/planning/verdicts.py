"""Per node, the first thing that keeps one pod off it, and nodes grouped by that verdict.

Pure. A node's verdict is the first node filter it fails (``workloads.filters`` through
``nodeuse.filter_reasons``, in the scheduler's order: node name, unschedulable, taints,
selector/affinity, then allocatable pods, cpu, memory and the rest), else what the one
allocator says when the pod's claims are allocated on that node alone (``allocator.allocate``):
fits, or its most useful reason.

The allocator is asked once per node class (``allocator.classes``): nodes whose devices it
cannot tell apart answer alike, so the first node of a class stands for the rest, exactly as
``allocate`` itself reuses a class's search. Claims whose selectors read an identifying
attribute (a GPU UUID) have no classes; then each candidate node is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.allocator.claims import AllocError, parse_claim
from webhook.allocator.classes import class_of, transferable
from webhook.allocator.engine import Allocation, Call, allocate
from webhook.allocator.frame import Limits
from webhook.allocator.model import Model
from webhook.allocator.nodesel import parse_node_selector
from webhook.allocator.reasons import Code, Reason, note, rank
from webhook.raw import as_dict, claim_allocation
from webhook.workloads.filters import PodFilter
from webhook.workloads.nodeuse import NodeUse, filter_reasons

MORE_MAX = 2
"""Reasons shown after a node's first one (the allocator's next most useful)."""


@dataclass(frozen=True)
class Verdict:
    """Nodes that share one verdict: ``reason`` None means the pod fits on each of them."""

    nodes: tuple[str, ...]
    reason: Reason | None
    more: tuple[Reason, ...] = ()

    @property
    def fits(self) -> bool:
        return self.reason is None


PerNode = dict[str, tuple[Reason | None, tuple[Reason, ...]]]
"""Node -> (its first reason, None when the pod fits there; the next reasons)."""


Report = Callable[[int, int, str], None]
"""Told ``(done, total, what)`` as a long run goes on (item ``done``, 0-based, of ``total`` starts)."""


def _quiet(done: int, total: int, what: str) -> None:
    return None


@dataclass(frozen=True)
class Budget:
    """The allocator's step budget per search and the deadline (``time.monotonic()``) of the call,
    and what the call reports its progress to (nothing by default; a terminal line in the CLI)."""

    max_steps: int
    deadline: float
    report: Report = _quiet


def node_verdicts(pod: dict[str, Any], claims: list[dict[str, Any]], model: Model, nodes: NodeUse,
                  budget: Budget) -> PerNode:
    """Every node's verdict for ``pod`` whose claims are ``claims`` (as the pod uses them: found,
    or made from their templates), with ``nodes`` holding what the bound pods use."""
    out: PerNode = {}
    candidates: list[str] = []
    for name, why in filter_reasons(PodFilter.of(pod), nodes).items():
        if why is None:
            candidates.append(name)
        else:
            out[name] = (why._replace(node=""), ())
    out.update(_device_verdicts(claims, model, candidates, budget))
    return out


def _device_verdicts(claims: list[dict[str, Any]], model: Model, candidates: list[str],
                     budget: Budget) -> PerNode:
    if not candidates:
        return {}
    if not claims:
        return {n: (None, ()) for n in candidates}
    pending = [c for c in claims if not claim_allocation(c)]
    fixed = [c for c in claims if claim_allocation(c)]
    try:
        parsed = [parse_claim(c, model) for c in pending]
    except AllocError as e:  # a class missing, a bad selector: the same on every node
        return {n: (e.reason._replace(node=""), ()) for n in candidates}
    usable = not pending or transferable(model, parsed)
    usable = usable and all(_key(c) in model.allocated_claims for c in fixed)
    selectors = [parse_node_selector(claim_allocation(c).get("nodeSelector")) for c in fixed]
    groups: dict[Any, list[str]] = {}
    for name in candidates:
        cls = (class_of(model, name) if pending else 0) if usable else None
        if cls is None:
            groups[("node", name)] = [name]
            continue
        node = model.node(name)
        groups.setdefault((cls, tuple(s is None or s.matches(node) for s in selectors)), []).append(name)
    out: PerNode = {}
    for i, names in enumerate(groups.values()):
        budget.report(i, len(groups), f"node {names[0]}")
        got = allocate(claims, model, Call(nodes=names[:1], limits=Limits(budget.max_steps, budget.deadline)))
        verdict = _verdict(got)
        for n in names:
            out[n] = verdict
    return out


def _key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = as_dict(raw.get("metadata"))
    return (str(meta.get("namespace") or "default"), str(meta.get("name")))


def _verdict(out: Allocation) -> tuple[Reason | None, tuple[Reason, ...]]:
    if out.feasible:
        return None, ()
    ranked = [r._replace(node="") for r in out.ranked(MORE_MAX + 1)] or [out.summary or Reason(Code.NO_ALLOCATION)]
    return ranked[0], tuple(ranked[1:])


NOT_SEARCHED = note("not searched: the attempt stopped on another node first")


def from_outcome(out: Allocation, names: list[str]) -> PerNode:
    """The verdicts an infeasible placement attempt gives (node-filter reasons and the
    allocator's, per node): each node's most useful reason first. Nodes the attempt did not
    reach (it stopped on a fatal error or its budget) get ``NOT_SEARCHED``."""
    per: dict[str, list[Reason]] = {}
    for r in out.reasons:
        if r.node:
            per.setdefault(r.node, []).append(r._replace(node=""))
    got: PerNode = {}
    for n in names:
        rs = sorted(per.get(n, ()), key=rank)
        got[n] = (rs[0], tuple(rs[1:MORE_MAX + 1])) if rs else (NOT_SEARCHED, ())
    return got


def grouped(per_node: PerNode) -> list[Verdict]:
    """Nodes with the same verdict together, in the order of each group's first node; fitting
    nodes first."""
    groups: dict[tuple[Reason | None, tuple[Reason, ...]], list[str]] = {}
    for name, verdict in per_node.items():
        groups.setdefault(verdict, []).append(name)
    out = [Verdict(tuple(names), why, more) for (why, more), names in groups.items()]
    return sorted(out, key=lambda v: not v.fits)
