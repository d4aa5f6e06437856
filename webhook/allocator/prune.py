"""Pruning for the device search (search invariant 6): cut subtrees that provably hold no solution.

Pure. Pruning for a leaf is enabled only after every candidate's static fit (eligibility,
capacity, taints, gates) was evaluated without a fatal error; it then bounds how many usable
devices remain after each position, and with a bound ``matchAttribute`` how many share its
value. So the first solution and every fatal error are those of the unpruned search; only the
explanations of a failure may differ (they say what the bound found). ``NodeData`` holds what
the searches of one node share, within a call (per-pod mode runs one search per claim) and, kept
in the model (``node_data``), across requests: per-device answers keyed by request content, and
each content's static fit with nothing in use, which a search redoes only for the devices its
allocated state touches.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from webhook.allocator.capacity import CapacityError, Consumed, remaining_fit
from webhook.allocator.claims import AllocError, Leaf
from webhook.allocator.constraints import ConstraintState, attribute_value
from webhook.allocator.derived import Value
from webhook.allocator.reasons import Code, Reason
from webhook.allocator.taints import untolerated

if TYPE_CHECKING:
    from webhook.allocator.model import Device, Model, NodeInfo
    from webhook.allocator.pools import Pool
    from webhook.allocator.search import Search

OK, SKIP, STOP = 0, 1, 2
"""Verdicts for one candidate position: try it, skip it, or stop (no solution further on)."""


class PruneInfo:
    """Per (leaf, node): which candidates are statically usable, and how many from each position."""

    __slots__ = ("usable", "suffix", "by_value")

    def __init__(self, usable: list[bool]) -> None:
        self.usable = usable
        counted = list(accumulate(map(int, reversed(usable)), initial=0))
        self.suffix = counted[::-1]
        """Usable candidates from each position on (one entry more than positions, the last 0)."""
        self.by_value: dict[tuple[str, Value | None], list[int]] = {}

    def group(self, p: Pruner, attr: str, val: Value | None) -> list[int]:
        """Usable positions whose ``attr`` is ``val`` (built when first asked for)."""
        key = (attr, val)
        got = self.by_value.get(key)
        if got is None:
            usable = self.usable
            got = self.by_value[key] = [q for q in p.values(attr).get(val, ()) if usable[q]]
        return got

    def free_match(self, p: Pruner, cs: ConstraintState, leaf: Leaf
                   ) -> tuple[list[Value | None], str] | None:
        """(value per position, attribute) of a matchAttribute the next pick binds, if any."""
        if cs.lists:
            return None
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind == "matchAttribute" and not seen and c.applies(leaf) and c.attribute not in leaf.derived:
                return p.values_at(c.attribute), c.attribute
        return None


class NodeData:
    """What every search on one node of one model can share: the candidates, and per device what
    depends only on the device, the gates and a request's *content* (never on what is in use).
    Per-pod mode runs one search per claim on a node, so the claims of a PodGroup made from one
    template evaluate each device once, not once per claim; and the model keeps it per node
    (``node_data``), so later requests with the same content do not evaluate it again."""

    __slots__ = ("pools", "flat", "misfits", "consumed", "all_sets", "attr_pos", "attr_at", "base", "pos_of",
                 "consumers")

    def __init__(self, pools: list[Pool]) -> None:
        self.pools = pools
        self.flat: tuple[Device, ...] = tuple(d for p in pools for d in p.candidates)
        self.misfits: dict[tuple[int, int], Any] = {}
        """(Leaf.sel_id, device uid) -> ``Search._misfit``."""
        self.consumed: dict[tuple[int, int], Any] = {}
        """(Leaf.cap_id, device uid) -> ``consumed_capacity`` (or its error)."""
        self.all_sets: dict[tuple[int, int], list[Device]] = {}
        self.attr_pos: dict[str, dict[Value | None, list[int]]] = {}
        """Attribute name -> positions in ``flat`` per value (``Pruner.values``)."""
        self.attr_at: dict[str, list[Value | None]] = {}
        """Attribute name -> value per position in ``flat`` (``Pruner.values_at``)."""
        self.base: dict[tuple[Any, ...], tuple[list[bool], list[Any]] | None] = {}
        """``_content(leaf)`` -> per candidate: statically usable with nothing in use, and its
        eligibility and capacity answer (``_state_free``); None when some candidate raises."""
        self.pos_of: dict[tuple[str, str, str], int] | None = None
        """Device key -> position in ``flat``, on first use."""
        self.consumers: dict[tuple[str, str], tuple[Device, ...]] = {}
        """Per pool, its devices that consume counters (``pooluse.PoolUse``)."""

    def size(self) -> int:
        return (len(self.misfits) + len(self.consumed) + len(self.all_sets) + len(self.base) + len(self.attr_pos)
                + len(self.attr_at))


NODE_DATA_MAX = 2_000
"""Entries one node's kept ``NodeData`` may hold before it starts afresh (~30 distinct request
contents on a node of 66 devices; a PodGroup's claims from one template are one content)."""
NODE_DATA_NODES = 64
"""Nodes whose ``NodeData`` a model keeps (the oldest goes first). Entries take ~170 bytes, so
what a burst of distinct requests can make one model hold stays under ~25 MiB per worker."""


def node_data(model: Model, node: NodeInfo, pools: list[Pool]) -> NodeData:
    """The ``NodeData`` of ``node``, kept in the model while the node has the same pools (the
    model's cached ones): everything in it depends on the node's candidates, the gates and
    request content only, so every later request on that model shares its evaluations. Serving
    threads may share one: each entry is written whole, and two writers write equal values."""
    kept = model.node_data
    got: NodeData | None = kept.get(node.name)
    if got is None or got.pools is not pools or got.size() > NODE_DATA_MAX:
        got = NodeData(pools)
        with model.lock:
            kept.pop(node.name, None)
            while len(kept) >= NODE_DATA_NODES:
                del kept[next(iter(kept))]
            kept[node.name] = got
    return got


class Pruner:
    """The pruning data of one search, built lazily per leaf."""

    share = True
    """Leaves equal in content share their data (``info_for``); tests compare with it off."""

    def __init__(self, search: Search, known: set[tuple[Any, ...]] | None = None) -> None:
        # A weak reference: the search holds its pruner, and a strong one back would make every
        # search a reference cycle that only the garbage collector frees (~190 objects per claim
        # review, 40-70 µs of collection each, measured by the serving work of issue 18).
        self.s: Search = weakref.proxy(search)
        self.info: dict[int, PruneInfo | None] = {}
        """id(leaf) -> data; None: pruning disabled for that leaf (some candidate raised)."""
        self.attr_pos: dict[str, dict[Value | None, list[int]]] = search.data.attr_pos
        self.attr_at: dict[str, list[Value | None]] = search.data.attr_at
        self.by_content: dict[tuple[Any, ...], tuple[PruneInfo | None, int]] = {}
        """Leaves that ask the same of a device (a PodGroup's claims from one template) share
        their data: (data, steps its evaluation counted)."""
        self.known: set[tuple[Any, ...]] = known if known is not None else set()
        """Contents whose data a search of this call built (this one, or an earlier claim's in
        per-pod mode): a leaf of such content prunes from its first candidate (``knows``)."""

    def info_for(self, ci: int, leaf: Leaf) -> PruneInfo | None:
        """Pruning data for ``leaf`` on this node, or None when some candidate raises (no pruning).

        A leaf equal in content to one evaluated before gets that one's data and counts the
        same steps, as if it had evaluated every candidate again (``static_ok`` depends on the
        leaf's content only)."""
        lid = id(leaf)
        if lid in self.info:
            return self.info[lid]
        s = self.s
        key = _content(leaf)
        shared = self.by_content.get(key) if self.share else None
        if shared is not None:
            s.ticks(shared[1])
            self.info[lid] = shared[0]
            return shared[0]
        info: PruneInfo | None = None
        usable = self._from_base(ci, leaf, key) if self.share else None
        if usable is not None:
            steps = len(usable)
            s.ticks(steps)
        else:
            usable = []
            steps = 0
            for d in s.flat:
                s.tick()
                steps += 1
                try:
                    ok = static_ok(s, leaf, d)
                except (AllocError, CapacityError):
                    usable = None
                    break
                usable.append(ok)
        if usable is not None:
            info = PruneInfo(usable)
        self.info[lid] = info
        self.by_content[key] = (info, steps)
        self.known.add(key)
        return info

    def knows(self, leaf: Leaf) -> bool:
        """Whether a search of this call already built data for ``leaf``'s content. Its claims
        then prune from the first candidate: a PodGroup's later claims from one template skip
        the dead ends an earlier one had to try before its data was worth building. Decided
        alike whether data is shared (``share``) or not, so sharing changes no outcome."""
        return _content(leaf) in self.known

    def _from_base(self, ci: int, leaf: Leaf, key: tuple[Any, ...]) -> list[bool] | None:
        """``static_ok`` of every candidate, from the node's state-free evaluation of a leaf of
        this content (``NodeData.base``), redone for the devices in use; None when some
        candidate raises there (the caller then evaluates them one by one, as before)."""
        s = self.s
        data = s.data
        if key in data.base:
            base = data.base[key]
        else:
            base = data.base[key] = _state_free(s, leaf)
        if base is None:
            return None
        usable = list(base[0])
        alloc = s.allocated
        if not alloc.dedicated and not alloc.aggregated:
            return usable
        pos_of = data.pos_of
        if pos_of is None:
            pos_of = data.pos_of = {d.dkey: i for i, d in enumerate(s.flat)}
        flat = s.flat
        if not leaf.admin:  # in use: unusable (the state-free answer stands for admin access)
            for k in _common(alloc.dedicated, pos_of):
                usable[pos_of[k]] = False
        if s.cc:  # capacity already consumed: fit again
            for k in _common(alloc.aggregated, pos_of):
                if leaf.admin or k not in alloc.dedicated:
                    i = pos_of[k]
                    usable[i] = _usable(s, leaf, flat[i], base[1][i])
        return usable

    def raw_cut(self, ci: int, leaf: Leaf, start: int, need: int) -> bool:
        """Too few candidates after ``start`` (sharing a bound matchAttribute value) for ``need``."""
        if len(self.s.flat) - start < need:
            return True
        cs = self.s.constraints[ci]
        if cs.lists:
            return False
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind == "matchAttribute" and seen and c.applies(leaf) and c.attribute not in leaf.derived:
                ps = self.values(c.attribute).get(seen[0], [])
                if len(ps) - bisect_left(ps, start) < need:
                    return True
        return False

    def values(self, attr: str) -> dict[Value | None, list[int]]:
        """Positions of the candidates per value of ``attr`` (scalar semantics)."""
        got = self.attr_pos.get(attr)
        if got is None:
            got = {}
            for pos, d in enumerate(self.s.flat):
                got.setdefault(attribute_value(d, attr, False), []).append(pos)
            self.attr_pos[attr] = got
        return got

    def values_at(self, attr: str) -> list[Value | None]:
        """The value of ``attr`` per candidate position (scalar semantics)."""
        got = self.attr_at.get(attr)
        if got is None:
            got = [None] * len(self.s.flat)
            for val, ps in self.values(attr).items():
                for q in ps:
                    got[q] = val
            self.attr_at[attr] = got
        return got

    def bound(self, ci: int, leaf: Leaf, info: PruneInfo) -> tuple[list[int] | None, str]:
        """The usable positions sharing the value a bound matchAttribute demands (fewest first)."""
        cs = self.s.constraints[ci]
        if cs.lists:
            return None, ""
        best: tuple[list[int] | None, str] = (None, "")
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind != "matchAttribute" or not seen or not c.applies(leaf) or c.attribute in leaf.derived:
                continue
            ps = info.group(self, c.attribute, seen[0])
            if best[0] is None or len(ps) < len(best[0]):
                best = (ps, c.attribute)
        return best

    def cut(self, ci: int, leaf: Leaf, where: tuple[int, ...], most: int, attr: str) -> None:
        """Explain a pruned subtree, at the depth the search did reach."""
        s = self.s
        if where < s.frontier:
            return
        code = Code.MATCH_TOO_FEW if attr else Code.AT_MOST
        s.note(where, Reason(code, claim=s.claims[ci].label, request=leaf.name, attribute=attr,
                             number=leaf.count, got=most))


_INELIGIBLE = "ineligible"


def _state_free(s: Search, leaf: Leaf) -> tuple[list[bool], list[Any]] | None:
    """``static_ok`` of every candidate as if nothing were in use, and per candidate what
    ``_usable`` needs to redo it for a device in use; None when a candidate raises (its
    selectors or capacity request)."""
    usable: list[bool] = []
    parts: list[Any] = []
    try:
        for d in s.flat:
            part: Any = _INELIGIBLE
            if s._eligible(leaf, d):
                part = s._consumed(leaf, d) if s.cc else None
            parts.append(part)
            usable.append(part is not _INELIGIBLE and _usable(s, leaf, d, part, free=True))
    except (AllocError, CapacityError):
        return None
    return usable, parts


def static_ok(s: Search, leaf: Leaf, dev: Device) -> bool:
    """False when ``dev`` fails ``leaf`` whatever else is picked; raises what ``Search._try`` raises."""
    if not s._eligible(leaf, dev):
        return False
    if not leaf.admin and dev.dkey in s.allocated.dedicated:
        return False
    return _fits(s, leaf, dev, s._consumed(leaf, dev) if s.cc else None)


def _usable(s: Search, leaf: Leaf, d: Device, part: Any, free: bool = False) -> bool:
    """``static_ok`` of a device whose eligibility and capacity answer is ``part``
    (``_state_free``), in the same order; ``free``: as if nothing were in use."""
    if part is _INELIGIBLE:
        return False
    if not free and not leaf.admin and d.dkey in s.allocated.dedicated:
        return False
    return _fits(s, leaf, d, part, free)


def _fits(s: Search, leaf: Leaf, dev: Device, consumed: Consumed | Reason | None, free: bool = False) -> bool:
    """The rest of ``static_ok`` for an eligible device, given what ``leaf`` consumes there
    (None without DRAConsumableCapacity); ``free``: as if nothing were in use."""
    if consumed is not None and (isinstance(consumed, Reason) or remaining_fit(
            dev, consumed, None if free else s.allocated.aggregated.get(dev.dkey), None) is not None):
        return False
    if dev.skip_node_ops and not s.node_ops:
        return False
    if dev.consumes and not s.pd:
        return False
    return not (s.taints_on and untolerated(leaf.tolerations, s.model.taints(dev)) is not None)


def _common(keys: Any, pos_of: dict[tuple[str, str, str], int]) -> list[tuple[str, str, str]]:
    """The device keys both in ``keys`` (a set or dict) and in ``pos_of``, walking the smaller."""
    if len(keys) < len(pos_of):
        return [k for k in keys if k in pos_of]
    return [k for k in pos_of if k in keys]


def _content(leaf: Leaf) -> tuple[Any, ...]:
    """What ``Search.static_ok`` reads of a leaf: its class and selectors (``Leaf.sel_id``), its
    capacity request (``Leaf.cap_id``), admin access and tolerations."""
    return leaf.sel_id, leaf.cap_id, leaf.admin, leaf.tolerations


class Window:
    """What pruning says about the positions of one slot of one leaf."""

    __slots__ = ("info", "bound_pos", "bound_attr", "free")

    def __init__(self, p: Pruner, ci: int, leaf: Leaf, info: PruneInfo, need: int) -> None:
        self.info = info
        self.bound_pos, self.bound_attr = p.bound(ci, leaf, info)
        self.free = info.free_match(p, p.s.constraints[ci], leaf) if need > 1 else None

    def verdict(self, p: Pruner, ci: int, leaf: Leaf, where: tuple[int, ...], slot: int, pos: int,
                need: int) -> int:
        """OK, SKIP (this pick cannot lead to a solution) or STOP (no position from here can)."""
        info = self.info
        b = info.suffix[pos]
        attr = ""
        if self.bound_pos is not None:
            bg = len(self.bound_pos) - bisect_left(self.bound_pos, pos)
            if bg < b:
                b, attr = bg, self.bound_attr
        if b < need:
            p.cut(ci, leaf, where, slot + b, attr)
            return STOP
        if self.free is not None:
            # This pick would bind a matchAttribute: the rest of the slots need devices after
            # ``pos`` sharing its value. Too few: no solution below, skip it.
            vals, attr = self.free
            val = vals[pos]
            if val is not None and info.usable[pos]:
                ps = info.group(p, attr, val)
                if len(ps) - bisect_left(ps, pos + 1) < need - 1:
                    p.cut(ci, leaf, where, slot + len(ps) - bisect_left(ps, pos), attr)
                    return SKIP
        return OK
