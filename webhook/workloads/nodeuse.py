"""Which nodes a pod may go to before its claims are looked at: the Node objects in name order,
what the pods bound or placed on each request (``NodeUse``), and the node filters' answers for
one pod shape, kept across its replicas and requests (``Filtered``).

Pure; the caches hold the latest snapshot's reading (replaced as one value, so serving threads
never see a mix).
"""

from __future__ import annotations

from typing import Any

from webhook.allocator.reasons import Reason
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
        self.stamp: dict[str, int] = {}
        """Per node, how often its use changed (the fit cache's key)."""
        self._own: set[str] = set()

    def add(self, node: str, requests: Amounts) -> None:
        if node not in self._own:  # copy on first write: the base is shared by every request
            if not self._own:
                self.used, self.count = dict(self.used), dict(self.count)
            self._own.add(node)
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
_FILTERS: dict[Any, tuple[Any, Any, dict[str, Reason | None], dict[str, tuple[int, Reason | None]]]] = {}
"""Pod shape -> (the node facts and use it was filtered against, static reasons, fit at that use)."""


class Filtered:
    """The node filters' answers for one pod template, kept across its replicas: the static
    ones once, the resource fit per node until that node's use changes. Both are computed once
    per snapshot and pod shape (``_FILTERS``): the same pod asked about again, or another
    replica of the same template in another request, costs a copy."""

    def __init__(self, pf: PodFilter, nodes: NodeUse, prebound: bool) -> None:
        self.pf = pf
        key = (pf.signature(), prebound)
        hit = _FILTERS.get(key)
        if hit is None or hit[0] is not nodes.facts or hit[1] is not nodes.used:
            static = {n: static_reason(pf, f, prebound=prebound) for n, f in nodes.facts.items()}
            fit = {n: (0, fit_reason(pf, nodes.facts[n], nodes.used.get(n, {}), nodes.count.get(n, 0)))
                   for n, why in static.items() if why is None}
            hit = (nodes.facts, nodes.used, static, fit)
            if len(_FILTERS) >= FILTERS_MAX:
                _FILTERS.clear()
            _FILTERS[key] = hit
        self.static: dict[str, Reason | None] = hit[2]
        self.fit: dict[str, tuple[int, Reason | None]] = dict(hit[3])
        self.order: list[str] = [n for n, why in self.static.items() if why is None]
        """The nodes no static filter rejects, in name order (``after`` walks them)."""
        self.index = {n: i for i, n in enumerate(self.order)}

    def reason(self, name: str, nodes: NodeUse) -> Reason | None:
        """The filter reason that keeps the pod off ``name`` now (None: it is a candidate)."""
        why = self.static[name]
        if why is None:
            stamp = nodes.stamp.get(name, 0)
            hit = self.fit.get(name)
            if hit is None or hit[0] != stamp:
                hit = self.fit[name] = (stamp, fit_reason(self.pf, nodes.facts[name], nodes.used.get(name, {}),
                                                          nodes.count.get(name, 0)))
            why = hit[1]
        return why

    def split(self, nodes: NodeUse) -> tuple[list[str], dict[Reason, list[str]]]:
        """(candidate nodes in order, the nodes each filter reason rejected)."""
        ok: list[str] = []
        rejected: dict[Reason, list[str]] = {}
        for name in self.static:
            why = self.reason(name, nodes)
            if why is None:
                ok.append(name)
            else:
                rejected.setdefault(why._replace(node=""), []).append(name)
        return ok, rejected

    def after(self, nodes: NodeUse, start: int, count: int) -> tuple[list[str], int]:
        """(up to ``count`` candidate nodes from ``order[start]`` on, the index to go on from)."""
        ok: list[str] = []
        i = start
        while i < len(self.order) and len(ok) < count:
            if self.reason(self.order[i], nodes) is None:
                ok.append(self.order[i])
            i += 1
        return ok, i


def filter_reasons(pf: PodFilter, nodes: NodeUse) -> dict[str, Reason | None]:
    """Per node, in name order, the first node filter that keeps the pod off it given ``nodes``'
    use (None: none does): the answers ``place`` keeps per pod shape, so asking again is cheap."""
    f = Filtered(pf, nodes, bool(pf.node_name))
    return {n: f.reason(n, nodes) for n in f.static}


def clear_caches() -> None:
    """Forget the node filters' answers kept per pod shape (tests that compare two ways of placing)."""
    _FILTERS.clear()
