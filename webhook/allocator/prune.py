"""Pruning for the device search (search invariant 6): cut subtrees that provably hold no solution.

Pure. Pruning for a leaf is enabled only after every candidate's static fit (eligibility,
capacity, taints, gates) was evaluated without a fatal error; it then bounds how many usable
devices remain after each position, and with a bound binding constraint (``matchAttribute``) how
many share its value. So the first solution and every fatal error are those of the unpruned
search; only the explanations of a failure may differ (they say what the bound found). It reads
the search's ``Frame``, asks ``Candidates`` for eligibility and capacity, and reports steps and
cuts through the ``Hooks``. What the searches of one node share (per-device answers by request
content, each content's static fit with nothing in use) is in ``nodedata.NodeData``.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from typing import Any

from webhook.allocator.candidate import Candidates
from webhook.allocator.capacity import CapacityError, Consumed, remaining_fit
from webhook.allocator.claims import AllocError, Leaf
from webhook.allocator.constraints import Value, attribute_value
from webhook.allocator.frame import Frame, Hooks, Where
from webhook.allocator.model import Device
from webhook.allocator.reasons import Code, Reason
from webhook.allocator.taints import untolerated

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


def content(leaf: Leaf) -> tuple[Any, ...]:
    """What ``Pruner.static_ok`` reads of a leaf: its class and selectors (``Leaf.sel_id``), its
    capacity request (``Leaf.cap_id``), admin access and tolerations."""
    return leaf.sel_id, leaf.cap_id, leaf.admin, leaf.tolerations


_INELIGIBLE = "ineligible"


class Pruner:
    """The pruning data of one search, built lazily per leaf."""

    share = True
    """Leaves equal in content share their data (``info_for``); tests compare with it off."""

    __slots__ = ("frame", "hooks", "candidates", "info", "by_content", "known")

    def __init__(self, frame: Frame, hooks: Hooks, candidates: Candidates,
                 known: set[tuple[Any, ...]] | None = None) -> None:
        self.frame = frame
        self.hooks = hooks
        self.candidates = candidates
        self.info: dict[int, PruneInfo | None] = {}
        """id(leaf) -> data; None: pruning disabled for that leaf (some candidate raised)."""
        self.by_content: dict[tuple[Any, ...], tuple[PruneInfo | None, int]] = {}
        """Leaves that ask the same of a device (a PodGroup's claims from one template) share
        their data: (data, steps its evaluation counted)."""
        self.known: set[tuple[Any, ...]] = known if known is not None else set()
        """Contents whose data a search of this call built (this one, or an earlier claim's in
        per-pod mode): a leaf of such content prunes from its first candidate (``knows``)."""

    def info_for(self, leaf: Leaf) -> PruneInfo | None:
        """Pruning data for ``leaf`` on this node, or None when some candidate raises (no pruning).

        A leaf equal in content to one evaluated before gets that one's data and counts the
        same steps, as if it had evaluated every candidate again (``static_ok`` depends on the
        leaf's content only)."""
        lid = id(leaf)
        if lid in self.info:
            return self.info[lid]
        hooks = self.hooks
        key = content(leaf)
        shared = self.by_content.get(key) if self.share else None
        if shared is not None:
            hooks.ticks(shared[1])
            self.info[lid] = shared[0]
            return shared[0]
        info: PruneInfo | None = None
        usable = self.from_base(leaf, key) if self.share else None
        if usable is not None:
            steps = len(usable)
            hooks.ticks(steps)
        else:
            usable = []
            steps = 0
            for d in self.frame.flat:
                hooks.tick()
                steps += 1
                try:
                    ok = self.static_ok(leaf, d)
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
        return content(leaf) in self.known

    def from_base(self, leaf: Leaf, key: tuple[Any, ...]) -> list[bool] | None:
        """``static_ok`` of every candidate, from the node's state-free evaluation of a leaf of
        content ``key`` (``NodeData.base``), redone for the devices in use; None when some
        candidate raises there (the caller then evaluates them one by one, as before)."""
        f = self.frame
        data = f.data
        if key in data.base:
            base = data.base[key]
        else:
            base = data.base[key] = self.state_free(leaf)
        if base is None:
            return None
        usable = list(base[0])
        alloc = f.allocated
        if not alloc.dedicated and not alloc.aggregated:
            return usable
        pos_of = data.pos_of
        if pos_of is None:
            pos_of = data.pos_of = {d.dkey: i for i, d in enumerate(f.flat)}
        flat = f.flat
        if not leaf.admin:  # in use: unusable (the state-free answer stands for admin access)
            for k in _common(alloc.dedicated, pos_of):
                usable[pos_of[k]] = False
        if f.switches.consumable:  # capacity already consumed: fit again
            for k in _common(alloc.aggregated, pos_of):
                if leaf.admin or k not in alloc.dedicated:
                    i = pos_of[k]
                    usable[i] = self._usable(leaf, flat[i], base[1][i])
        return usable

    def state_free(self, leaf: Leaf) -> tuple[list[bool], list[Any]] | None:
        """``static_ok`` of every candidate as if nothing were in use, and per candidate what
        ``_usable`` needs to redo it for a device in use; None when a candidate raises (its
        selectors or capacity request)."""
        cands = self.candidates
        consumable = self.frame.switches.consumable
        usable: list[bool] = []
        parts: list[Any] = []
        try:
            for d in self.frame.flat:
                part: Any = _INELIGIBLE
                if cands.eligible(leaf, d):
                    part = cands.consumed(leaf, d) if consumable else None
                parts.append(part)
                usable.append(part is not _INELIGIBLE and self._usable(leaf, d, part, free=True))
        except (AllocError, CapacityError):
            return None
        return usable, parts

    def static_ok(self, leaf: Leaf, dev: Device) -> bool:
        """False when ``dev`` fails ``leaf`` whatever else is picked; raises what
        ``Candidates.pick`` raises."""
        cands = self.candidates
        if not cands.eligible(leaf, dev):
            return False
        if not leaf.admin and dev.dkey in self.frame.allocated.dedicated:
            return False
        return self._fits(leaf, dev, cands.consumed(leaf, dev) if self.frame.switches.consumable else None)

    def _usable(self, leaf: Leaf, d: Device, part: Any, free: bool = False) -> bool:
        """``static_ok`` of a device whose eligibility and capacity answer is ``part``
        (``state_free``), in the same order; ``free``: as if nothing were in use."""
        if part is _INELIGIBLE:
            return False
        if not free and not leaf.admin and d.dkey in self.frame.allocated.dedicated:
            return False
        return self._fits(leaf, d, part, free)

    def _fits(self, leaf: Leaf, dev: Device, consumed: Consumed | Reason | None, free: bool = False) -> bool:
        """The rest of ``static_ok`` for an eligible device, given what ``leaf`` consumes there
        (None without DRAConsumableCapacity); ``free``: as if nothing were in use."""
        f = self.frame
        sw = f.switches
        if consumed is not None and (isinstance(consumed, Reason) or remaining_fit(
                dev, consumed, None if free else f.allocated.aggregated.get(dev.dkey), None) is not None):
            return False
        if dev.skip_node_ops and not sw.node_ops:
            return False
        if dev.consumes and not sw.partitionable:
            return False
        return not (sw.taints and untolerated(leaf.tolerations, f.model.taints(dev)) is not None)

    def raw_cut(self, ci: int, leaf: Leaf, start: int, need: int) -> bool:
        """Too few candidates after ``start`` (sharing a bound constraint's value) for ``need``."""
        if len(self.frame.flat) - start < need:
            return True
        for attr, val in self.frame.constraints[ci].bound(leaf):
            if self._enough_near(attr, val, start, need):
                continue
            ps = self.values(attr).get(val, [])
            if len(ps) - bisect_left(ps, start) < need:
                return True
        return False

    NEAR = 32
    """Candidates ``_enough_near`` reads before it leaves the count to ``values`` (all of them)."""

    def _enough_near(self, attr: str, val: Value, start: int, need: int) -> bool:
        """Whether ``need`` of the ``NEAR`` candidates from ``start`` on have ``attr`` equal to ``val``
        (then ``raw_cut`` cannot cut for it), when ``values`` was not built for ``attr``: a search
        that takes devices side by side (issue 30's partitions of one GPU) reads a few devices
        rather than every candidate of the node. Never "enough" where ``values`` would say fewer."""
        if self.frame.data.attr_pos.get(attr) is not None:
            return False
        found = 0
        for d in self.frame.flat[start:start + self.NEAR]:
            if attribute_value(d, attr, False) == val:
                found += 1
                if found >= need:
                    return True
        return False

    def values(self, attr: str) -> dict[Value | None, list[int]]:
        """Positions of the candidates per value of ``attr`` (scalar semantics)."""
        data = self.frame.data
        got = data.attr_pos.get(attr)
        if got is None:
            got = {}
            for pos, d in enumerate(self.frame.flat):
                got.setdefault(attribute_value(d, attr, False), []).append(pos)
            data.attr_pos[attr] = got
        return got

    def values_at(self, attr: str) -> list[Value | None]:
        """The value of ``attr`` per candidate position (scalar semantics)."""
        data = self.frame.data
        got = data.attr_at.get(attr)
        if got is None:
            got = [None] * len(self.frame.flat)
            for val, ps in self.values(attr).items():
                for q in ps:
                    got[q] = val
            data.attr_at[attr] = got
        return got

    def bound(self, ci: int, leaf: Leaf, info: PruneInfo) -> tuple[list[int] | None, str]:
        """The usable positions sharing the value a bound constraint demands (fewest first)."""
        best: tuple[list[int] | None, str] = (None, "")
        for attr, val in self.frame.constraints[ci].bound(leaf):
            ps = info.group(self, attr, val)
            if best[0] is None or len(ps) < len(best[0]):
                best = (ps, attr)
        return best

    def free_match(self, ci: int, leaf: Leaf) -> tuple[list[Value | None], str] | None:
        """(value per position, attribute) of a binding constraint the next pick binds, if any."""
        attr = self.frame.constraints[ci].binding_next(leaf)
        return None if attr is None else (self.values_at(attr), attr)

    def cut(self, ci: int, leaf: Leaf, where: Where, most: int, attr: str) -> None:
        """Explain a pruned subtree, at the depth the search did reach."""
        hooks = self.hooks
        if where < hooks.frontier:
            return
        code = Code.MATCH_TOO_FEW if attr else Code.AT_MOST
        hooks.note(where, Reason(code, claim=self.frame.claims[ci].label, request=leaf.name, attribute=attr,
                                 number=leaf.count, got=most))


def _common(keys: Any, pos_of: dict[tuple[str, str, str], int]) -> list[tuple[str, str, str]]:
    """The device keys both in ``keys`` (a set or dict) and in ``pos_of``, walking the smaller."""
    if len(keys) < len(pos_of):
        return [k for k in keys if k in pos_of]
    return [k for k in pos_of if k in keys]


class Window:
    """What pruning says about the positions of one slot of one leaf."""

    __slots__ = ("pruner", "ci", "leaf", "need", "info", "bound_pos", "bound_attr", "free")

    def __init__(self, pruner: Pruner, ci: int, leaf: Leaf, info: PruneInfo, need: int) -> None:
        self.pruner, self.ci, self.leaf, self.need, self.info = pruner, ci, leaf, need, info
        self.bound_pos, self.bound_attr = pruner.bound(ci, leaf, info)
        self.free = pruner.free_match(ci, leaf) if need > 1 else None

    def verdict(self, where: Where, slot: int, pos: int) -> int:
        """OK, SKIP (a pick at ``pos`` for ``slot`` cannot lead to a solution) or STOP (no
        position from here can)."""
        info, need = self.info, self.need
        b = info.suffix[pos]
        attr = ""
        if self.bound_pos is not None:
            bg = len(self.bound_pos) - bisect_left(self.bound_pos, pos)
            if bg < b:
                b, attr = bg, self.bound_attr
        if b < need:
            self.pruner.cut(self.ci, self.leaf, where, slot + b, attr)
            return STOP
        if self.free is not None:
            # This pick would bind a constraint: the rest of the slots need devices after ``pos``
            # sharing its value. Too few: no solution below, skip it.
            vals, attr = self.free
            val = vals[pos]
            if val is not None and info.usable[pos]:
                ps = info.group(self.pruner, attr, val)
                if len(ps) - bisect_left(ps, pos + 1) < need - 1:
                    self.pruner.cut(self.ci, self.leaf, where, slot + len(ps) - bisect_left(ps, pos), attr)
                    return SKIP
        return OK
