"""The replicas of one workload after a placed one: the next replica's answer from the last one's.

Pure. ``placement.place`` places replicas one at a time through ``allocate``, which walks every
candidate node (as kube-scheduler filters every node). Two replicas of one template are the same
pod but for their names: they ask for claims of the same content (made from the same templates),
pass the same node filters and search alike. Between replica k-1 and replica k only the node
k-1 went to (``n``) changes: one more pod on it, its devices taken. So, when the devices k-1
took are all in pools of ``n`` alone (no other node's view changes) and ``n`` still passes the
node filters, ``allocate`` for replica k walks the nodes before ``n`` as it did for k-1 (same
views, same classes: the same failures, renamed to k's claims, in the same steps), then finds
``n`` under its new view, then checks the nodes after ``n`` for fatal errors as it did for k-1
(none, in the same steps). The replica path gives that answer without the walk when ``n``'s new
view has an answer kept for these claims (``answers.py``: a search of that view found it
before), exactly as ``allocate`` would take it there:

- the new view's class comes from the old one and the devices taken (``_next_class``: the same
  for every node of that class; kept per model, computed once by ``heldclasses``);
- the answer is the kept one, moved to ``n`` (``answers.moved``), its steps replacing those of
  k-1's answer in the total; with ``sweep`` (``place``'s), the walk starts at ``n`` and stops
  there, so the answer is that node's, and the nodes of the sweep's chunk after it unchecked.

Anything else (a class of that view that failed, no kept answer, a step total past the budget, a
pool other nodes see, claims that are shared, allocated or found rather than made, a PodGroup,
``spec.nodeName``, a capacity share) leaves the replica to ``allocate``. Claims are parsed once
per template (the first replica's parse, renamed: ``claims.renamed``) on both paths.
``tests/workloads/test_replicas.py`` places the same workloads with and without this path and
compares every answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.allocator.allocation import OK, Allocation, NodeReasons
from webhook.allocator.answers import moved
from webhook.allocator.claims import Claim, renamed
from webhook.allocator.classes import nodes_of_pools
from webhook.allocator.frame import DeviceResult
from webhook.allocator.heldclasses import Failures
from webhook.allocator.model import Model
from webhook.allocator.pools import pools_for
from webhook.allocator.reasons import Reason
from webhook.raw import as_dict, as_list, claim_allocation
from webhook.workloads.claims import ClaimUse, generated_name

ENABLED = True
"""Take the replica path where it applies; tests compare with it off."""
MOVES_MAX = 4096
"""Class transitions a model keeps at most (``_next_class``)."""


class Replicas:
    """What the replicas of one workload in one ``place`` call share on the replica path: the
    claims made for a replica (names aside) and their parse, and the last replica's answer."""

    def __init__(self, model: Model, max_steps: int, sweep: bool) -> None:
        self.model = model
        self.max_steps = max_steps
        self.sweep = sweep
        self.usable: bool | None = None
        """Whether the pod's claims allow the path (decided at the first replica placed)."""
        self.made: list[tuple[str, dict[str, Any]]] = []
        """Per claim entry of the pod: (entry, the claim made from its template for a replica)."""
        self.parsed: list[Claim] = []
        self.key: Any = None
        """The claims key of the ``ClassMemo`` the answers were found under."""
        self.prev: Allocation | None = None
        """The answer of the last replica placed, when the next one may follow it."""
        self.followed: Allocation | None = None
        """The last answer this path gave."""
        self.window = 0
        """Swept: the size of the last followed replica's chunk (its node's use aside, the
        nodes of the next one's are the same, with the same verdicts)."""

    def learn(self, pod: dict[str, Any], uses: Sequence[ClaimUse], out: Allocation, memo_key: Any) -> None:
        """A replica was placed with ``uses`` and the answer ``out`` (``memo_key``: the memo's
        claims key then); the first one decides whether the path applies to this pod at all."""
        if self.usable is None:
            self.usable = ENABLED and _made_alike(pod, uses) and len(out.claims) == len(uses)
            if self.usable:
                self.made = [(u.entry, u.claim) for u in uses]
                self.parsed = list(out.claims)
                self.key = memo_key
        # Swept, a replica's answer leaves the rest of its chunk unchecked: the next starts anew.
        if out is not self.followed:
            self.window = 0
        ok = self.usable and out.kind == OK and out.node_class is not None and (self.sweep or not out.unchecked)
        self.prev = out if ok and memo_key == self.key and not _shares(out.results) else None

    def uses(self, pod: dict[str, Any]) -> list[ClaimUse]:
        """The claims of replica ``pod``, made as ``pod_claims`` makes them (the path applies)."""
        meta = as_dict(pod.get("metadata"))
        ns, name = meta.get("namespace") or "default", str(meta.get("name"))
        out = []
        for entry, claim in self.made:
            cname = generated_name(name, entry)
            out.append(ClaimUse(entry, f"{ns}/{cname}", {**claim, "metadata": {"name": cname, "namespace": ns}}, False))
        return out

    def claims(self, uses: Sequence[ClaimUse]) -> list[Claim] | None:
        """The parse of ``uses``' claims (``pod_claims``'), when they are made as the first
        replica's were (same entries, same template specs); None: parse them."""
        if not self.usable or len(uses) != len(self.made) or any(
                u.entry != e or u.shared or as_dict(u.claim).get("spec") is not c.get("spec")
                for u, (e, c) in zip(uses, self.made, strict=True)):
            return None
        return self.parse(uses)

    def parse(self, uses: Sequence[ClaimUse]) -> list[Claim]:
        """The parse of the claims ``uses`` made (``uses``), renamed from the first replica's."""
        return [renamed(c, u.claim) for c, u in zip(self.parsed, uses, strict=True)]

    def follow(self, uses: Sequence[ClaimUse], claims: list[Claim], run: Any, filtered: Any,
               chunk: int) -> Allocation | None:
        """The answer ``allocate`` would give the replica with ``uses`` (parsed: ``claims``),
        taken from the last replica's, or None when the replica path does not apply. ``run`` and
        ``filtered`` are ``placement``'s ``_Run`` and ``nodeuse.Filtered`` (not imported: placement
        imports this module); ``chunk`` is the nodes a swept replica asks about at a time."""
        prev, memo = self.prev, run.memo
        if prev is None or prev.node is None or memo.claims != self.key or memo.answers is None:
            return None
        keys = [u.key for u in uses]
        n = prev.node
        if len(set(keys)) < len(keys) or filtered.reason(n, run.nodes) is not None:
            return None
        cls = _next_class(self.model, prev, claims, run)
        hit = memo.answers.get(cls) if cls is not None and cls not in memo.fails else None
        if hit is None:
            return None
        base = 0 if self.sweep else prev.steps - prev.node_steps
        if base + hit[1] > self.max_steps:
            return None
        found = moved(self.model, self.model.node(n), hit)
        if found is None:
            return None
        out = Allocation()
        out.feasible, out.node, out.kind, out.node_class = True, n, OK, cls
        out.claims, out.labels = claims, [c.label for c in claims]
        out.results, out.node_steps, out.in_order = found
        out.steps = base + found[1]
        memo.fits[cls] = found[1]  # as the search of ``n``'s class records it
        if self.sweep:
            if not self.window:
                self.window = len(filtered.after(run.nodes, filtered.index[n], chunk)[0])
            out.nodes_tried, out.unchecked = 1, self.window - 1
        else:
            out.nodes_tried = prev.nodes_tried
            out.entries = _renamed(prev.entries, dict(zip(prev.labels, out.labels, strict=True)))
        self.followed = out
        return out


def _made_alike(pod: dict[str, Any], uses: Sequence[ClaimUse]) -> bool:
    """Whether every claim of ``pod`` is made from a template for it alone (so the next replica's
    are the same but for their names), and nothing else of the pod is looked up per replica."""
    spec = as_dict(pod.get("spec"))
    if not uses or spec.get("nodeName") or as_dict(spec.get("schedulingGroup")) or \
            as_list(as_dict(pod.get("status")).get("resourceClaimStatuses")):
        return False
    meta = as_dict(pod.get("metadata"))
    ns, name = meta.get("namespace") or "default", str(meta.get("name"))
    return all(not u.shared and not claim_allocation(u.claim)
               and u.key == f"{ns}/{generated_name(name, u.entry)}" for u in uses)


def _shares(results: list[list[DeviceResult]]) -> bool:
    return any(r.share_id is not None or r.consumed is not None for got in results for r in got)


def _next_class(model: Model, prev: Allocation, claims: list[Claim], run: Any) -> int | None:
    """The class of ``prev.node`` now that ``prev``'s devices are taken too: a function of its
    class then and the devices taken (by pool place and name), kept per model; None when one
    of those pools is another node's too (then other views change: no shortcut)."""
    assert prev.node is not None
    places = _local_pools(model, prev.node)
    taken = []
    for got in prev.results:
        for r in got:
            i = places.get((r.device.slice.driver, r.device.slice.pool))
            if i is None:
                return None
            taken.append((i, r.device.name, r.admin))
    moves: dict[tuple[Any, ...], int | None] = model.class_data.setdefault("replica-moves", {})
    key = (prev.node_class, tuple(taken))
    if key not in moves:
        if len(moves) >= MOVES_MAX:
            moves.clear()
        moves[key] = Failures(model, claims, run.held, run.memo).class_of(prev.node)
    return moves[key]


def _local_pools(model: Model, name: str) -> dict[tuple[str, str], int]:
    """The pools (driver, pool) of node ``name`` that no other node sees, each with its place
    among the node's pools; kept per model."""
    kept: dict[str, dict[tuple[str, str], int]] = model.class_data.setdefault("local-pools", {})
    got = kept.get(name)
    if got is None:
        owners = nodes_of_pools(model)
        if len(kept) >= MOVES_MAX:
            kept.clear()
        got = kept[name] = {(p.driver, p.name): i for i, p in enumerate(pools_for(model, model.node(name)))
                            if owners.get((p.driver, p.name)) == [name]}
    return got


def _renamed(entries: list[Reason | NodeReasons], names: dict[str, str]) -> list[Reason | NodeReasons]:
    """``entries`` with the claims they name renamed (the last replica's to this one's)."""
    done: dict[int, list[Reason]] = {}
    out: list[Reason | NodeReasons] = []
    for e in entries:
        if isinstance(e, NodeReasons):
            why = done.get(id(e.why))
            if why is None:
                why = done[id(e.why)] = [r._replace(claim=names.get(r.claim, r.claim)) for r in e.why]
            out.append(NodeReasons(why, list(e.names)))
        else:
            out.append(e._replace(claim=names.get(e.claim, e.claim)))
    return out
