"""What ``engine.allocate`` answers: an ``Allocation`` (feasible or not, where, with which
devices, and if not, why) and the kinds of outcome it can have.

Pure. Kept apart from the engine that fills it in, so the callers that only read answers (the
workloads' placement, the CLI's results, the planning views) depend on the answer, not on how
it is found.
"""

from __future__ import annotations

from typing import Any

from webhook.allocator.claims import Claim
from webhook.allocator.frame import DeviceResult
from webhook.allocator.reasons import Reason, full, rank

OK, UNSATISFIABLE, INVALID_POOL, ERROR, CUT_SHORT = "ok", "unsatisfiable", "invalid-pool", "error", "cut-short"
"""``Allocation.kind``: fits; no node fits; a pool is invalid; an error fails the attempt; the
budget or deadline ran out first."""


class Allocation:
    """What ``allocate`` answers for a set of claims: feasible or not, on which node, with which
    devices (``results[i]`` belongs to ``claims[i]`` when feasible), and if not, why.

    ``reasons`` are data (``reasons.Reason``), most useful first after ``ranked()``; ``summary``
    is the one-line verdict of an infeasible outcome. Both are worded by ``reasons.full``.
    Nodes of one class (``classes.py``) share their reasons: they are held once, with the node
    names, and renamed per node only when ``reasons`` or ``ranked()`` is read.
    """

    def __init__(self) -> None:
        self.feasible = False
        self.node: str | None = None
        self.claims: list[Claim] = []
        self.labels: list[str] = []
        self.results: list[list[DeviceResult]] = []
        self.kind = UNSATISFIABLE
        self.summary: Reason | None = None
        self.entries: list[Reason | NodeReasons] = []
        """The reasons in node order: single reasons, and the reasons of nodes that share them."""
        self.steps = 0
        self.nodes_tried = 0
        self.in_order = False
        """Feasible, and the search took each claim's first fit in claim order (it never went
        back into an earlier claim): claim by claim (per-pod mode) gives the same answer."""
        self.unchecked = 0
        """Feasible, but the budget or deadline ran out before these later candidate nodes were
        searched for a fatal error (the scheduler would filter them)."""
        self.node_steps = 0
        """Feasible: the steps of the answer node's own search (or of the search it recalled)."""
        self.node_class: int | None = None
        """Feasible: the answer node's class under the call's held state (None: none known)."""

    @property
    def reasons(self) -> list[Reason]:
        """Every reason, in node order."""
        out: list[Reason] = []
        for e in self.entries:
            if isinstance(e, NodeReasons):
                out += [r._replace(node=n) for n in e.names for r in e.why]
            else:
                out.append(e)
        return out

    @reasons.setter
    def reasons(self, value: list[Reason]) -> None:
        self.entries = list(value)

    def add_nodes(self, why: list[Reason], names: list[str]) -> None:
        """The reasons ``why`` (node unset) of each node of ``names``, in that order."""
        last = self.entries[-1] if self.entries else None
        if isinstance(last, NodeReasons) and last.why is why:
            last.names += names
        else:
            self.entries.append(NodeReasons(why, list(names)))

    @property
    def message(self) -> str:
        """The summary, worded ("" when feasible)."""
        return full(self.summary) if self.summary is not None else ""

    def ranked(self, limit: int | None = None) -> list[Reason]:
        """The reasons, most useful first (stable within a rank); the first ``limit`` of them
        without renaming every node's copies."""
        if limit is None:
            return sorted(self.reasons, key=rank)
        levels = sorted({rank(r) for e in self.entries
                         for r in (e.why if isinstance(e, NodeReasons) else (e,))})
        top: list[Reason] = []
        for level in levels:
            for e in self.entries:
                if isinstance(e, NodeReasons):
                    some = [r for r in e.why if rank(r) == level]
                    for n in e.names if some else ():
                        top += [r._replace(node=n) for r in some]
                        if len(top) >= limit:
                            return top[:limit]
                elif rank(e) == level:
                    top.append(e)
                    if len(top) >= limit:
                        return top
        return top

    def reason_texts(self) -> list[str]:
        return [full(r) for r in self.ranked()]

    def allocations(self) -> list[dict[str, Any]]:
        if not self.feasible:
            return []
        return [{"claim": label, "results": [r.as_dict() for r in res]}
                for label, res in zip(self.labels, self.results, strict=True)]


class NodeReasons:
    """The reasons of one failed search (node unset), shared by the nodes ``names``."""

    __slots__ = ("why", "names")

    def __init__(self, why: list[Reason], names: list[str]) -> None:
        self.why = why
        self.names = names
