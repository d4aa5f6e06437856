"""Which nodes a pod may go to before its claims are looked at: the Node objects in name order,
what the pods bound or placed on each request (``NodeUse``), and the node filters' answers for
one pod shape, kept across its replicas and requests (``Filtered``).

Pure; the caches hold the latest snapshot's reading (replaced as one value, so serving threads
never see a mix).
"""

from __future__ import annotations

from bisect import insort
from typing import Any

from webhook.allocator.reasons import Reason
from webhook.allocator.runs import NodeList
from webhook.raw import as_dict
from webhook.state.pods import TERMINAL
from webhook.workloads.filters import NodeFacts, PodFilter, fit_reason, static_reason
from webhook.workloads.resources import Amounts, pod_requests


class NodeUse:
    """The Node objects, in name order, and what the pods on each request.

    The facts of a snapshot's nodes and the use of its bound pods are read once per snapshot
    (the live state keeps a kind's tuple while the kind does not change): ``_BASE`` holds the
    latest; each placement copies only the use of the nodes its pods go to.
    """

    def __init__(self, nodes: tuple[Any, ...], pods: tuple[Any, ...]) -> None:
        facts, used, count = _base(nodes, pods)
        self.facts: dict[str, NodeFacts] = facts
        self.used: dict[str, Amounts] = used
        self.count: dict[str, int] = count
        self.base_used, self.base_count = used, count
        """The use of the snapshot's bound pods (shared by every request: never changed)."""
        self.stamp: dict[str, int] = {}
        """Per node, how often its use changed (the fit cache's key)."""
        self.owned: dict[str, None] = {}
        """The nodes whose use changed, in the order they first did."""

    def add(self, node: str, requests: Amounts) -> None:
        if node not in self.owned:  # copy on first write: the base is shared by every request
            if not self.owned:
                self.used, self.count = dict(self.used), dict(self.count)
            self.owned[node] = None
            self.used[node] = dict(self.used.get(node, {}))
        used = self.used[node]
        for k, v in requests.items():
            used[k] = used.get(k, 0) + v
        self.count[node] = self.count.get(node, 0) + 1
        self.stamp[node] = self.stamp.get(node, 0) + 1


_Base = tuple[dict[str, NodeFacts], dict[str, Amounts], dict[str, int]]
_BASE: list[tuple[tuple[Any, ...], tuple[Any, ...], _Base] | None] = [None]
"""(the Node tuple, the Pod tuple, what ``_base`` made of them) of the latest snapshot read;
replaced as one value, so serving threads never see a mix."""


def _base(nodes: tuple[Any, ...], pods: tuple[Any, ...]) -> _Base:
    entry = _BASE[0]
    if entry is not None and entry[0] is nodes and entry[1] is pods:
        return entry[2]
    facts: dict[str, NodeFacts] = {}
    if entry is not None and entry[0] is nodes:
        facts = entry[2][0]
    else:
        named = sorted((n for n in nodes if isinstance(n, dict)),
                       key=lambda n: str(as_dict(n.get("metadata")).get("name")))
        for raw in named:
            f = NodeFacts(raw)
            if f.name:
                facts.setdefault(f.name, f)
    used: dict[str, Amounts] = {}
    count: dict[str, int] = {}
    for pod in pods:
        spec = as_dict(pod.get("spec")) if isinstance(pod, dict) else {}
        name = spec.get("nodeName")
        if isinstance(name, str) and name in facts and as_dict(pod.get("status")).get("phase") not in TERMINAL:
            into = used.setdefault(name, {})
            for k, v in pod_requests(pod).items():
                into[k] = into.get(k, 0) + v
            count[name] = count.get(name, 0) + 1
    got = (facts, used, count)
    _BASE[0] = (nodes, pods, got)
    return got


FILTERS_MAX = 64


class _Shape:
    """The node filters' answers for one pod shape against one snapshot's nodes and their use by
    the bound pods: computed once, shared by every request (read only)."""

    __slots__ = ("facts", "used", "static", "fit", "order", "index", "candidates", "rejected", "_positions")

    def __init__(self, pf: PodFilter, nodes: NodeUse, prebound: bool) -> None:
        self.facts, self.used = nodes.facts, nodes.base_used
        self.static: dict[str, Reason | None] = {n: static_reason(pf, f, prebound=prebound)
                                                 for n, f in nodes.facts.items()}
        self.order: list[str] = [n for n, why in self.static.items() if why is None]
        """The nodes no static filter rejects, in name order."""
        self.index = {n: i for i, n in enumerate(self.order)}
        self.fit: dict[str, Reason | None] = {
            n: fit_reason(pf, nodes.facts[n], self.used.get(n, {}), nodes.base_count.get(n, 0)) for n in self.order}
        """Per node of ``order``, NodeResourcesFit at the bound pods' use."""
        ok: list[str] = []
        rejected: dict[Reason, list[str]] = {}
        for name, why in self.static.items():
            why = why if why is not None else self.fit[name]
            if why is None:
                ok.append(name)
            else:
                rejected.setdefault(why._replace(node=""), []).append(name)
        self.candidates = NodeList(ok)
        self.rejected = rejected
        self._positions: dict[str, int] | None = None

    def positions(self) -> dict[str, int]:
        """Node -> its place in name order (every node; made when first needed)."""
        if self._positions is None:
            self._positions = {n: i for i, n in enumerate(self.static)}
        return self._positions


_FILTERS: dict[Any, _Shape] = {}
"""(pod shape, prebound) -> its node filters' answers for the latest snapshot asked about."""


def _shape(pf: PodFilter, nodes: NodeUse, prebound: bool) -> _Shape:
    key = (pf.signature(), prebound)
    hit = _FILTERS.get(key)
    if hit is None or hit.facts is not nodes.facts or hit.used is not nodes.base_used:
        hit = _Shape(pf, nodes, prebound)
        if len(_FILTERS) >= FILTERS_MAX:
            _FILTERS.clear()
        _FILTERS[key] = hit
    return hit


class Filtered:
    """The node filters' answers for one pod template, kept across its replicas: the answers of
    its shape at the bound pods' use (``_Shape``, once per snapshot: the same pod asked about
    again, or another replica of the same template in another request, costs nothing more),
    and the resource fit of the nodes whose use changed since, until it changes again. The
    candidate list is the shape's own (a ``NodeList``, whose runs of one node class the
    allocator keeps) until a node's verdict changes; then it is this placement's."""

    def __init__(self, pf: PodFilter, nodes: NodeUse, prebound: bool) -> None:
        self.pf = pf
        shape = self.shape = _shape(pf, nodes, prebound)
        self.static = shape.static
        self.order = shape.order
        self.index = shape.index
        self.fit: dict[str, tuple[int, Reason | None]] = {}
        """Per node whose use changed: (its ``NodeUse.stamp``, NodeResourcesFit then)."""
        self.candidates: NodeList = shape.candidates
        self.rejected: dict[Reason, list[str]] = shape.rejected
        self.seen: dict[str, Reason | None] = {}
        """Per node whose use changed: the verdict ``candidates``/``rejected`` hold for it."""

    def reason(self, name: str, nodes: NodeUse) -> Reason | None:
        """The filter reason that keeps the pod off ``name`` now (None: it is a candidate)."""
        why = self.static[name]
        if why is None:
            if name not in nodes.owned:
                return self.shape.fit[name]
            stamp = nodes.stamp[name]
            hit = self.fit.get(name)
            if hit is None or hit[0] != stamp:
                hit = self.fit[name] = (stamp, fit_reason(self.pf, nodes.facts[name], nodes.used.get(name, {}),
                                                          nodes.count.get(name, 0)))
            why = hit[1]
        return why

    def split(self, nodes: NodeUse) -> tuple[NodeList, dict[Reason, list[str]]]:
        """(candidate nodes in order, the nodes each filter reason rejected, in order); only the
        nodes whose use changed are asked again. Neither is to be changed by the caller."""
        moved: list[tuple[str, Reason | None, Reason | None]] = []
        for name in nodes.owned:
            if self.static.get(name, _ABSENT) is not None:
                continue
            was = self.seen.get(name, self.shape.fit[name])
            why = self.reason(name, nodes)
            if why != was:
                moved.append((name, was, why))
            self.seen[name] = why
        if moved:
            self._move(moved)
        return self.candidates, self.rejected

    def _move(self, moved: list[tuple[str, Reason | None, Reason | None]]) -> None:
        """Nodes whose verdict changed: out of their old place, into their new one (name order)."""
        pos = self.shape.positions()
        ok = list(self.candidates)
        rejected = {k: list(v) for k, v in self.rejected.items()}
        for name, was, why in moved:
            if was is None:
                ok.remove(name)
            else:
                rejected[was._replace(node="")].remove(name)
            if why is None:
                insort(ok, name, key=pos.__getitem__)
            else:
                insort(rejected.setdefault(why._replace(node=""), []), name, key=pos.__getitem__)
        self.candidates = NodeList(ok)
        self.rejected = {k: v for k, v in sorted(rejected.items(), key=lambda kv: pos[kv[1][0]] if kv[1] else 0) if v}

    def after(self, nodes: NodeUse, start: int, count: int) -> tuple[list[str], int]:
        """(up to ``count`` candidate nodes from ``order[start]`` on, the index to go on from)."""
        ok: list[str] = []
        i = start
        while i < len(self.order) and len(ok) < count:
            if self.reason(self.order[i], nodes) is None:
                ok.append(self.order[i])
            i += 1
        return ok, i


_ABSENT: Any = object()


def clear_caches() -> None:
    """Forget the node filters' answers kept per pod shape (tests that compare two ways of placing)."""
    _FILTERS.clear()
