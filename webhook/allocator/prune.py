"""Pruning for the device search (search invariant 6): cut subtrees that provably hold no solution.

Pure. Pruning for a leaf is enabled only after every candidate's static fit (eligibility,
capacity, taints, gates) was evaluated without a fatal error; it then bounds how many usable
devices remain after each position, and with a bound ``matchAttribute`` how many share its
value. So the first solution and every fatal error are those of the unpruned search; only the
explanations of a failure may differ (they say what the bound found).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from webhook.allocator.capacity import CapacityError
from webhook.allocator.claims import AllocError, BudgetExceeded, Leaf
from webhook.allocator.constraints import ConstraintState, attribute_value
from webhook.allocator.derived import Value
from webhook.allocator.reasons import Code, Reason

if TYPE_CHECKING:
    from webhook.allocator.search import Search

OK, SKIP, STOP = 0, 1, 2
"""Verdicts for one candidate position: try it, skip it, or stop (no solution further on)."""


class PruneInfo:
    """Per (leaf, node): which candidates are statically usable, and how many from each position."""

    __slots__ = ("usable", "suffix", "by_attr", "vals_at")

    def __init__(self, n: int) -> None:
        self.usable: list[bool] = []
        self.suffix = [0] * (n + 1)
        self.by_attr: dict[str, dict[Value | None, list[int]]] = {}
        self.vals_at: dict[str, list[Value | None]] = {}

    def groups(self, p: Pruner, attr: str) -> dict[Value | None, list[int]]:
        """Usable positions per value of ``attr``."""
        got = self.by_attr.get(attr)
        if got is None:
            got = {}
            usable = self.usable
            for val, ps in p.values(attr).items():
                if val is not None:
                    keep = [q for q in ps if usable[q]]
                    if keep:
                        got[val] = keep
            self.by_attr[attr] = got
        return got

    def free_match(self, p: Pruner, cs: ConstraintState, leaf: Leaf
                   ) -> tuple[list[Value | None], str] | None:
        """(value per position, attribute) of a matchAttribute the next pick binds, if any."""
        if cs.lists:
            return None
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind == "matchAttribute" and not seen and c.applies(leaf) and c.attribute not in leaf.derived:
                got = self.vals_at.get(c.attribute)
                if got is None:
                    got = [None] * len(self.usable)
                    for val, ps in self.groups(p, c.attribute).items():
                        for q in ps:
                            got[q] = val
                    self.vals_at[c.attribute] = got
                return got, c.attribute
        return None


class Pruner:
    """The pruning data of one search, built lazily per leaf."""

    share = True
    """Leaves equal in content share their data (``info_for``); tests compare with it off."""

    def __init__(self, search: Search) -> None:
        self.s = search
        self.info: dict[int, PruneInfo | None] = {}
        """id(leaf) -> data; None: pruning disabled for that leaf (some candidate raised)."""
        self.attr_pos: dict[str, dict[Value | None, list[int]]] = {}
        self.by_content: dict[tuple[Any, ...], tuple[PruneInfo | None, int]] = {}
        """Leaves that ask the same of a device (a PodGroup's claims from one template) share
        their data: (data, steps its evaluation counted)."""

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
            _ticks(s, shared[1])
            self.info[lid] = shared[0]
            return shared[0]
        info: PruneInfo | None = PruneInfo(len(s.flat))
        usable = []
        steps = 0
        for d in s.flat:
            s.tick()
            steps += 1
            try:
                ok = s.static_ok(ci, leaf, d)
            except (AllocError, CapacityError):
                info = None
                break
            usable.append(ok)
        if info is not None:
            info.usable = usable
            suffix = info.suffix
            for pos in range(len(usable) - 1, -1, -1):
                suffix[pos] = suffix[pos + 1] + (1 if usable[pos] else 0)
        self.info[lid] = info
        self.by_content[key] = (info, steps)
        return info

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

    def bound(self, ci: int, leaf: Leaf, info: PruneInfo) -> tuple[list[int] | None, str]:
        """The usable positions sharing the value a bound matchAttribute demands (fewest first)."""
        cs = self.s.constraints[ci]
        if cs.lists:
            return None, ""
        best: tuple[list[int] | None, str] = (None, "")
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind != "matchAttribute" or not seen or not c.applies(leaf) or c.attribute in leaf.derived:
                continue
            ps = info.groups(self, c.attribute).get(seen[0], [])
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


def _ticks(s: Search, n: int) -> None:
    """Count ``n`` steps of ``s`` at once, stopping where ``n`` calls of ``s.tick`` would."""
    if s.steps + n > s.max_steps:
        s.steps = s.max_steps + 1
        raise BudgetExceeded(s.max_steps, "step budget")
    crosses = (s.steps + n) // 32 != s.steps // 32
    s.steps += n
    if s.deadline is not None and crosses and s.clock() > s.deadline:
        raise BudgetExceeded(s.steps, "deadline")


def _content(leaf: Leaf) -> tuple[Any, ...]:
    """What ``Search.static_ok`` reads of a leaf."""
    return (leaf.cls.name if leaf.cls is not None else "", tuple(sel.expr for sel in leaf.class_selectors),
            tuple(sel.expr for sel in leaf.selectors), leaf.admin, repr(leaf.capacity), leaf.tolerations)


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
            if val is not None:
                ps = info.groups(p, attr)[val]
                if len(ps) - bisect_left(ps, pos + 1) < need - 1:
                    p.cut(ci, leaf, where, slot + len(ps) - bisect_left(ps, pos), attr)
                    return SKIP
        return OK
