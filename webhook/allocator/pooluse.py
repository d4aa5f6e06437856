"""Shared counters (docs/allocator.md §4) and compatibility groups (§5) of the pools one search touches.

Pure. ``PoolUse`` starts from what allocated devices already consume and tracks what the current
attempt adds; every change pushes its undo on the caller's list (search invariant 1). A failed
check returns the ``Reason`` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.allocator.model import AllocatedState, Device
from webhook.allocator.pools import Pool
from webhook.allocator.reasons import Code, Reason

Undo = list[Callable[[], None]]

_EMPTY, _ALL_EMPTY = "empty", "all-empty"
"""Group state of a counter set: nothing seen yet; only devices without groups seen."""


class PoolUse:
    """Counter tallies and group intersections per (driver, pool) for one search."""

    def __init__(self, allocated: AllocatedState,
                 consumers: dict[tuple[str, str], tuple[Device, ...]] | None = None) -> None:
        self.allocated = allocated
        self.consumers = consumers if consumers is not None else {}
        """Per pool, its devices that consume counters (static: searches of one node share it)."""
        self.held: dict[tuple[str, str], list[Device]] = {}
        self.available: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.tally: dict[tuple[str, str], dict[tuple[str, str], Any]] = {}
        self.overdrawn: dict[tuple[str, str], bool] = {}
        self.set_order: dict[tuple[str, str], dict[str, int]] = {}
        self.groups: dict[tuple[str, str], dict[str, Any]] = {}

    def carried(self, picks: list[Device], admin: list[bool]) -> PoolUse | None:
        """The ``PoolUse`` of the next search on this allocated state, once the caller folded
        this search's picks (``picks``, ``admin`` per pick) in: per-pod mode's next claim. Its
        counters and groups equal a fresh one's, without walking the allocated devices again:
        every pick's consumption moves from the tally into what is available, and group states
        stay (a pick passed the admits check, so the fold over the allocated devices in pool
        order gives the same intersection). None when a pick has admin access and consumes
        counters: the allocated state leaves it out, the tally does not."""
        if any(a and d.consumes for d, a in zip(picks, admin, strict=True)):
            return None
        nxt = PoolUse(self.allocated, self.consumers)
        for pk, avail in self.available.items():
            tally = self.tally.get(pk)
            if tally:
                for (cs, c), v in tally.items():
                    have = avail.get(cs)
                    if have is not None and c in have:  # what ``_available`` would subtract
                        have[c] -= v
        nxt.available, nxt.overdrawn, nxt.set_order, nxt.groups = (
            self.available, self.overdrawn, self.set_order, self.groups)
        return nxt

    def _allocated_consumers(self, pool: Pool) -> list[Device]:
        """The pool's allocated devices that consume counters, in pool order (computed once)."""
        pk = (pool.driver, pool.name)
        got = self.held.get(pk)
        if got is None:
            a = self.allocated
            ded, shared, agg = a.dedicated, a.shared, a.aggregated
            got = []
            if ded or shared or agg:  # else nothing is in use (a one-shot check): no device is read
                devs = self.consumers.get(pk)
                if devs is None:
                    devs = self.consumers[pk] = tuple(d for d in pool.all_devices() if d.consumes)
                got = [d for d in devs if d.dkey in ded or d.dkey in shared or d.dkey in agg]
            self.held[pk] = got
        return got

    # ---------------------------------------------------------------- counters (§4)
    def _available(self, pool: Pool) -> dict[str, dict[str, Any]]:
        """Counter values minus what allocated devices of the pool consume (computed once)."""
        pk = (pool.driver, pool.name)
        got = self.available.get(pk)
        if got is None:
            got = {cs: dict(vals) for cs, vals in pool.counter_sets.items()}
            for d in self._allocated_consumers(pool):
                for cs, counters, _g in d.consumes:
                    have = got.get(cs)
                    if have is None:
                        continue
                    for c, v in counters:
                        if c in have:
                            have[c] -= v
            self.available[pk] = got
            # Counter sets are checked in pool order; a set over-committed by allocated devices
            # fails every attempt in the pool (upstream behaviour), so then check them all.
            self.overdrawn[pk] = any(have < 0 for vals in got.values() for have in vals.values())
            self.set_order[pk] = {cs: i for i, cs in enumerate(got)}
        return got

    def counters(self, pool: Pool, dev: Device, undo: Undo) -> Reason | None:
        """Add what ``dev`` consumes to the tally, or the first counter it would exhaust."""
        pk = (pool.driver, pool.name)
        avail = self._available(pool)
        tally = self.tally.setdefault(pk, {})
        added: list[tuple[tuple[str, str], Any]] = [((cs, c), v) for cs, counters, _g in dev.consumes
                                                    for c, v in counters]
        if not self.overdrawn[pk]:
            why = self._first_short(pk, avail, tally, dev, added)
            if why is not None:
                return _exhausted(pool, avail, tally, added, why)
            for k, v in added:
                tally[k] = tally.get(k, 0) + v
        else:
            short = next(((cs, c) for cs, vals in avail.items() for c, have in vals.items()
                          if have < tally.get((cs, c), 0) + sum(v for k, v in added if k == (cs, c))), None)
            if short is not None:
                return _exhausted(pool, avail, tally, added, short)
            for k, v in added:
                tally[k] = tally.get(k, 0) + v

        def _release() -> None:
            for k, v in added:
                tally[k] -= v
        undo.append(_release)
        return None

    def _first_short(self, pk: tuple[str, str], avail: dict[str, dict[str, Any]],
                     tally: dict[tuple[str, str], Any], dev: Device,
                     added: list[tuple[tuple[str, str], Any]]) -> tuple[str, str] | None:
        """The first counter (in pool order) the device cannot get, checked before any change.

        Counters the device does not consume cannot fail: their tally only grew through picks
        that passed this check and none is overdrawn (else all are checked, as upstream does).
        """
        need: dict[tuple[str, str], Any] = {}
        for k, v in added:
            need[k] = need.get(k, 0) + v
        if len(dev.consumes) == 1:
            cs0 = dev.consumes[0][0]
            sets: Any = ((cs0, avail[cs0]),) if cs0 in avail else ()
        else:
            order = self.set_order[pk]
            touched = sorted({cs for cs, _c, _g in dev.consumes if cs in avail}, key=order.__getitem__)
            sets = [(cs, avail[cs]) for cs in touched]
        for cs, vals in sets:
            for c, have in vals.items():
                v = need.get((cs, c))
                if v is not None and have < tally.get((cs, c), 0) + v:
                    return cs, c
        return None

    # ---------------------------------------------------------------- compatibility groups (§5)
    def _group_state(self, pool: Pool) -> dict[str, Any]:
        pk = (pool.driver, pool.name)
        got = self.groups.get(pk)
        if got is None:
            got = {}
            for d in self._allocated_consumers(pool):
                for cs, _c, groups in d.consumes:
                    got[cs] = _group_add(got.get(cs, _EMPTY), groups)
            self.groups[pk] = got
        return got

    def compatible(self, pool: Pool, dev: Device, undo: Undo) -> Reason | None:
        """Narrow each touched counter set's intersection by ``dev``'s groups, or say which is empty."""
        state = self._group_state(pool)
        for cs, _c, groups in dev.consumes:
            if not _group_admits(state.get(cs, _EMPTY), groups):
                return Reason(Code.GROUPS_EMPTY, counter_set=cs)
        before = {cs: state.get(cs, _EMPTY) for cs, _c, _g in dev.consumes}
        for cs, _c, groups in dev.consumes:
            state[cs] = _group_add(state.get(cs, _EMPTY), groups)

        def _restore() -> None:
            for cs, old in before.items():
                if old is _EMPTY:
                    state.pop(cs, None)
                else:
                    state[cs] = old
        undo.append(_restore)
        return None


def _exhausted(pool: Pool, avail: dict[str, dict[str, Any]], tally: dict[tuple[str, str], Any],
               added: list[tuple[tuple[str, str], Any]], short: tuple[str, str]) -> Reason:
    """Why counter ``short`` (set, counter) cannot serve the device whose needs are ``added``:
    what it has free next to the allocated devices and this attempt's picks, of its value."""
    cs, c = short
    need = sum(v for k, v in added if k == short)
    free = avail[cs][c] - tally.get(short, 0)
    return Reason(Code.COUNTER_EXHAUSTED, counter=c, counter_set=cs, need=need, free=free,
                  total=pool.counter_sets[cs][c])


def _group_admits(state: Any, groups: frozenset[str] | None) -> bool:
    if state is _EMPTY:
        return True
    if not groups:
        return state is _ALL_EMPTY
    if state is _ALL_EMPTY:
        return False
    return bool(state & groups)


def _group_add(state: Any, groups: frozenset[str] | None) -> Any:
    if state is _EMPTY:
        return groups if groups else _ALL_EMPTY
    if state is _ALL_EMPTY or not groups:
        return state
    return state & groups
