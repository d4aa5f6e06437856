"""Per node, the first thing that keeps one pod off it, and nodes grouped by that verdict.

Pure. A node's verdict is the first node filter it fails (``workloads.filters`` through
``nodeuse.Filtered``, in the scheduler's order: node name, unschedulable, taints,
selector/affinity, then allocatable pods, cpu, memory and the rest), else what the one
allocator says when the pod's claims are allocated on that node alone (``allocator.allocate``):
fits, or its most useful reason.

The allocator is asked once per node class (``allocator.classes``): nodes whose devices it
cannot tell apart answer alike, so the first node of a class stands for the rest, exactly as
``allocate`` itself reuses a class's search. Claims whose selectors read an identifying
attribute (a GPU UUID) have no classes; then each candidate node is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.allocator.allocation import Allocation
from webhook.allocator.claims import AllocError, parse_claim
from webhook.allocator.classes import class_of, transferable
from webhook.allocator.engine import Call, allocate
from webhook.allocator.frame import Limits
from webhook.allocator.heldclasses import ClassMemo
from webhook.allocator.model import Model
from webhook.allocator.nodesel import parse_node_selector
from webhook.allocator.reasons import Code, Reason, note, rank
from webhook.allocator.runs import Runs
from webhook.raw import as_dict, claim_allocation
from webhook.workloads.filters import PodFilter
from webhook.workloads.nodeuse import Filtered, NodeUse

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


def grouped_verdicts(pod: dict[str, Any], claims: list[dict[str, Any]], model: Model, nodes: NodeUse,
                     budget: Budget) -> list[Verdict]:
    """Every node's verdict for ``pod`` whose claims are ``claims`` (as the pod uses them: found,
    or made from their templates), with ``nodes`` holding what the bound pods use, nodes with the
    same verdict together (as ``grouped`` groups them). The node filters' answers are those
    ``place`` keeps per pod shape (``nodeuse.Filtered``), and runs of one node class among the
    candidates are taken whole (``allocator.runs``): no node is asked on its own when its class
    was."""
    pf = PodFilter.of(pod)
    candidates, rejected = Filtered(pf, nodes, bool(pf.node_name)).split(nodes)
    groups: dict[tuple[Reason | None, tuple[Reason, ...]], list[Sequence[str]]] = {}
    for why, names in rejected.items():
        groups.setdefault((why, ()), []).append(names)
    for verdict, found in _device_verdicts(claims, model, candidates, budget):
        groups.setdefault(verdict, []).append(found)
    out = [Verdict(_joined(parts), why, more) for (why, more), parts in groups.items()]
    return sorted(out, key=lambda v: not v.fits)


def _joined(parts: list[Sequence[str]]) -> tuple[str, ...]:
    if len(parts) == 1:
        return tuple(parts[0])  # the candidates' own tuple (a ``NodeList``) is not copied
    return tuple(n for names in parts for n in names)


def _device_verdicts(claims: list[dict[str, Any]], model: Model, candidates: Sequence[str],
                     budget: Budget) -> list[tuple[tuple[Reason | None, tuple[Reason, ...]], Sequence[str]]]:
    """(verdict, nodes) per group of candidate nodes the allocator answers alike, in order."""
    if not candidates:
        return []
    if not claims:
        return [((None, ()), candidates)]
    pending = [c for c in claims if not claim_allocation(c)]
    fixed = [c for c in claims if claim_allocation(c)]
    try:
        parsed = [parse_claim(c, model) for c in pending]
    except AllocError as e:  # a class missing, a bad selector: the same on every node
        return [((e.reason._replace(node=""), ()), candidates)]
    memo = ClassMemo()  # the devices a class's search found are kept (``allocator.answers``): asked again, none is
    memo.usable = usable = not pending or transferable(model, parsed)
    usable = usable and all(_key(c) in model.allocated_claims for c in fixed)
    selectors = [parse_node_selector(claim_allocation(c).get("nodeSelector")) for c in fixed]
    runs = Runs.kept(model, candidates) if usable and pending and not selectors else None
    groups: dict[Any, list[Sequence[str]]] = {}
    i = 0
    while i < len(candidates):
        name = candidates[i]
        cls = (class_of(model, name) if pending else 0) if usable else None
        if cls is None:
            groups[("node", name)] = [(name,)]
        elif runs is not None:  # the run of its class: one slice, not node by node
            end = runs.end(candidates, i)
            groups.setdefault((cls, ()), []).append(candidates if i == 0 and end == len(candidates)
                                                    else candidates[i:end])
            i = end
            continue
        else:
            node = model.node(name)
            groups.setdefault((cls, tuple(s is None or s.matches(node) for s in selectors)), []).append((name,))
        i += 1
    out: list[tuple[tuple[Reason | None, tuple[Reason, ...]], Sequence[str]]] = []
    for k, parts in enumerate(groups.values()):
        names = _joined(parts)
        budget.report(k, len(groups), f"node {names[0]}")
        got = allocate(claims, model, Call(nodes=names[:1], memo=memo,
                                           limits=Limits(budget.max_steps, budget.deadline)))
        out.append((_verdict(got), names))
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
