"""The device search for one node (allocator.md §4-§8): depth-first, first solution wins.

Algorithm. Claims in the given order, requests in spec order, subrequests of ``firstAvailable``
in order, device slots 0..count-1; candidates are the node's devices in pool/slice/device order
(§2.5). Within one request the next slot only looks *after* the previous pick (combinations, not
permutations); a new request restarts at the first device. ``All`` requests take exactly their
precomputed device list, in order. A candidate passes: in use → eligibility (bindings, class and
request CEL selectors, cached per device × leaf) → capacity fit → ``_allocate_device``
(PartitionableDevices gate, compatibility groups, counters, taints, constraints, mark in use,
record capacity share). The first complete assignment is the answer.

Invariants. (1) Every mutation done for a candidate (counter tally, group state, constraint
values, in-use marks, capacity shares, results) is pushed on one undo list and undone on
rejection and on backtracking, so state after a failed branch equals state before it.
(2) Counters: for every counter of every counter set of a touched pool, available (counter
value minus allocated devices' consumption) >= consumed in this attempt. (3) Group state per
(pool, counter set) is the running intersection over allocated and picked devices. (4) At most
32 devices per claim. (5) Steps count work at candidate granularity: every call of ``_one``
and every device tried (or evaluated for pruning) is one step, one more when it gets as far
as counters, groups and constraints (so a step is a few µs); past ``max_steps`` or the
monotonic ``deadline`` the search stops with ``BudgetExceeded`` — never a wrong answer.
(6) Pruning (``_Prune``) only cuts subtrees that provably hold no solution and raise no error:
it is enabled for a leaf only after every candidate's eligibility and capacity were evaluated
without a fatal error, and it bounds the devices still obtainable (statically usable devices
after a position; with a bound matchAttribute, only those sharing its value). So the first
solution, and every fatal error, are those of the unpruned search; only explanations may differ.
Pure: no I/O; time is read only through the ``clock`` argument.
"""

from __future__ import annotations

import time
import uuid
from bisect import bisect_left
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from webhook.allocator.capacity import (
    CapacityError,
    Consumed,
    consumed_capacity,
    remaining_fit,
    render_consumed,
)
from webhook.allocator.claims import ALL, MAX_DEVICES_PER_CLAIM, AllocError, Claim, Leaf, Selector
from webhook.allocator.constraints import ConstraintState, Value, attribute_value
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo
from webhook.allocator.pools import Pool

_EMPTY, _ALL_EMPTY = "empty", "all-empty"
_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


class BudgetExceeded(Exception):
    def __init__(self, steps: int, why: str) -> None:
        super().__init__(f"the check was cut short after {steps} steps ({why})")
        self.steps = steps
        self.why = why


class DeviceResult:
    __slots__ = ("request", "device", "admin", "consumed", "share_id")

    def __init__(self, request: str, device: Device, admin: bool, consumed: dict[str, str] | None,
                 share_id: str | None) -> None:
        self.request = request
        self.device = device
        self.admin = admin
        self.consumed = consumed
        self.share_id = share_id

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.device.slice.driver,
                               "pool": self.device.slice.pool, "device": self.device.name}
        if self.admin:
            out["adminAccess"] = True
        if self.consumed is not None:
            out["consumedCapacity"] = self.consumed
        return out


def selector_matches(model: Model, sel: Selector, dev: Device) -> bool:
    """Cached CEL evaluation; a runtime error is fatal for the attempt (§6.3)."""
    cache = model.sel_cache.get(sel.expr)
    if cache is None:
        cache = model.sel_cache[sel.expr] = {}
    got = cache.get(dev.uid)
    if got is None:
        from webhook.cel import CelDeadlineExceeded, CelRuntimeError
        try:
            got = bool(sel.compiled.matches(dev.view()))
        except CelDeadlineExceeded:  # out of time, not the device's fault: never cached
            raise BudgetExceeded(0, "deadline") from None
        except CelRuntimeError as e:
            got = f"{sel.where}: CEL runtime error: {e}"
        except Exception as e:  # an engine bug must not crash admission; report it as fatal
            got = f"{sel.where}: CEL evaluation failed: {e}"
        cache[dev.uid] = got
    if isinstance(got, str):
        raise AllocError(got)
    return got


class Search:
    """One allocation attempt: (node, claims, pools, allocated state, gates)."""

    pruning = True
    """Cut subtrees that provably hold no solution (invariant 6); tests compare with it off."""

    def __init__(self, model: Model, node: NodeInfo, claims: list[Claim], allocated: AllocatedState,
                 *, max_steps: int = 100_000, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self.gates = model.gates
        self.node = node
        self.claims = claims
        self.allocated = allocated
        self.pools: list[Pool] = model.pools_for(node)
        self.flat: tuple[Device, ...] = tuple(d for p in self.pools for d in p.candidates)
        self.pool_of: dict[tuple[str, str], Pool] = {(p.driver, p.name): p for p in self.pools}
        self.max_steps = max_steps
        self.deadline = deadline
        self.clock = clock
        self.steps = 0
        g = self.gates
        self.cc = g.enabled("DRAConsumableCapacity")
        self.pd = g.enabled("DRAPartitionableDevices")
        self.cg = g.enabled("DRADeviceCompatibilityGroups")
        self.taints_on = g.enabled("DRADeviceTaints")
        self.binding_on = g.enabled("DRADeviceBindingConditions") and g.enabled(
            "DRAResourceClaimDeviceStatus")
        self.picked: set[tuple[str, str, str]] = set()          # non-shared picks (in use)
        self.claim_picked: list[set[tuple[str, str, str]]] = [set() for _ in claims]
        self.shares: dict[tuple[str, str, str], int] = {}
        self.share_capacity: dict[tuple[str, str, str], dict[str, Fraction]] = {}
        self.available: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.tally: dict[tuple[str, str], dict[tuple[str, str], Any]] = {}
        self.overdrawn: dict[tuple[str, str], bool] = {}
        self.set_order: dict[tuple[str, str], dict[str, int]] = {}
        self.groups: dict[tuple[str, str], dict[str, Any]] = {}
        self.constraints = [ConstraintState(c, self.gates) for c in claims]
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.eligible: dict[tuple[int, int], bool] = {}
        self.consumed: dict[tuple[int, int], Consumed | str | CapacityError] = {}
        self.all_sets: dict[int, list[Device]] = {}
        self.node_ops = g.enabled("DRAOptionalNodeOperations")
        self.prune: dict[int, _Prune | None] = {}     # id(leaf) -> info; None: pruning disabled
        self.attr_pos: dict[str, dict[Value | None, list[int]]] = {}
        self.whos: dict[int, str] = {}
        # Explanations: the reasons seen at the furthest point the search reached.
        self.frontier: tuple[int, ...] = ()
        self.reasons: dict[str, int] = {}

    # ---------------------------------------------------------------- entry point
    def run(self) -> bool:
        """True when every claim got devices (then ``results`` holds them)."""
        for ci, claim in enumerate(self.claims):
            total = 0
            for req in claim.requests:
                leaves = [req.leaf] if req.leaf is not None else list(req.subrequests)
                counts = []
                for leaf in leaves:
                    if leaf.mode == ALL:
                        counts.append(len(self._all_set(claim, leaf)))
                    else:
                        counts.append(leaf.count)
                total += min(counts)
            if total > MAX_DEVICES_PER_CLAIM:
                raise AllocError(f"claim {claim.label}: number of requested devices {total} exceeds "
                                 f"the claim limit of {MAX_DEVICES_PER_CLAIM}")
            del ci
        return self._one(0, 0, -1, 0, 0)

    def invalid_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.invalid]

    # ---------------------------------------------------------------- bookkeeping
    def _note(self, where: tuple[int, ...], reason: str) -> None:
        if where > self.frontier:
            self.frontier, self.reasons = where, {}
        if where == self.frontier:
            self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise BudgetExceeded(self.max_steps, "step budget")
        if self.deadline is not None and not self.steps & 31 and self.clock() > self.deadline:
            raise BudgetExceeded(self.steps, "deadline")

    def _who(self, ci: int, leaf: Leaf) -> str:
        got = self.whos.get(id(leaf))
        if got is None:
            got = self.whos[id(leaf)] = f"claim {self.claims[ci].label} request {leaf.name}"
        return got

    def _claim_total(self, ci: int) -> int:
        return len(self.results[ci])

    # ---------------------------------------------------------------- the recursion
    def _one(self, ci: int, ri: int, si: int, slot: int, start: int) -> bool:
        self._tick()
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            return self._one(ci + 1, 0, -1, 0, 0)
        req = claim.requests[ri]
        if req.leaf is None and si < 0:
            for j, sub in enumerate(req.subrequests):
                need = len(self._all_set(claim, sub)) if sub.mode == ALL else sub.count
                if self._claim_total(ci) + need > MAX_DEVICES_PER_CLAIM:
                    self._note((ci, ri), f"claim {claim.label} request {sub.name}: over the "
                                         f"{MAX_DEVICES_PER_CLAIM}-device limit")
                    continue
                if self._one(ci, ri, j, 0, 0):
                    return True
            return False
        leaf = req.leaf if req.leaf is not None else req.subrequests[si]
        where = (ci, ri, slot)
        if leaf.mode == ALL:
            devs = self._all_set(claim, leaf)
            if not devs:
                self._note(where, f"claim {claim.label} request {leaf.name}: no device matches the "
                                  "class and selectors (All)")
                return False
            if slot >= len(devs):
                return self._one(ci, ri + 1, -1, 0, 0)
            dev = devs[slot]
            undo = self._try(ci, leaf, dev, where, all_mode=True)
            if undo is None:
                return False
            if self._one(ci, ri, si, slot + 1, 0):
                return True
            for u in reversed(undo):
                u()
            return False
        if slot >= leaf.count:
            return self._one(ci, ri + 1, -1, 0, 0)
        flat = self.flat
        n = len(flat)
        need = leaf.count - slot
        lid = id(leaf)
        pending = self.pruning and lid not in self.prune
        info = self.prune.get(lid)
        if pending and self._raw_cut(ci, leaf, start, need):
            info = self._prune_info(ci, leaf)       # a raw bound says "cut": make sure cutting is exact
            pending = False
        bound_pos, bound_attr = self._bound(ci, leaf, info) if info else (None, "")
        free = info.free_match(self, self.constraints[ci], leaf) if info and need > 1 else None
        for pos in range(start, n):
            if info:
                b = info.suffix[pos]
                attr = ""
                if bound_pos is not None:
                    bg = len(bound_pos) - bisect_left(bound_pos, pos)
                    if bg < b:
                        b, attr = bg, bound_attr
                if b < need:
                    self._cut(ci, leaf, where, slot + b, attr)
                    break
                if free is not None:
                    # This pick would bind a matchAttribute: the rest of the slots need devices
                    # after ``pos`` sharing its value. Too few: no solution below, skip it.
                    vals, attr = free
                    val = vals[pos]
                    if val is not None:
                        ps = info.groups(self, attr)[val]
                        if len(ps) - bisect_left(ps, pos + 1) < need - 1:
                            self._cut(ci, leaf, where, slot + len(ps) - bisect_left(ps, pos), attr)
                            continue
            dev = flat[pos]
            self._tick()
            undo = self._try(ci, leaf, dev, where, all_mode=False)
            if undo is None:
                continue
            if self._one(ci, ri, si, slot + 1, pos + 1):
                return True
            for u in reversed(undo):
                u()
            if pending:
                # Backtracking: the search may explore combinations, so pruning pays off.
                info = self._prune_info(ci, leaf)
                pending = False
                bound_pos, bound_attr = self._bound(ci, leaf, info) if info else (None, "")
                free = info.free_match(self, self.constraints[ci], leaf) if info and need > 1 else None
        if not flat:
            self._note(where, f"claim {claim.label} request {leaf.name}: no devices on node "
                              f"{self.node.name}")
        elif self.frontier < where:
            self._note(where, f"claim {claim.label} request {leaf.name}: needs {leaf.count} devices, "
                              f"only {slot} could be allocated")
        return False

    # ---------------------------------------------------------------- pruning (invariant 6)
    def _prune_info(self, ci: int, leaf: Leaf) -> _Prune | None:
        """Pruning data for ``leaf`` on this node, or None when some candidate raises (no pruning)."""
        lid = id(leaf)
        if lid in self.prune:
            return self.prune[lid]
        info: _Prune | None = _Prune(len(self.flat))
        usable = []
        for d in self.flat:
            self._tick()
            try:
                ok = self._static_ok(ci, leaf, d)
            except (AllocError, CapacityError):
                info = None
                break
            usable.append(ok)
        if info is not None:
            info.usable = usable
            suffix = info.suffix
            for pos in range(len(usable) - 1, -1, -1):
                suffix[pos] = suffix[pos + 1] + (1 if usable[pos] else 0)
        self.prune[lid] = info
        return info

    def _raw_cut(self, ci: int, leaf: Leaf, start: int, need: int) -> bool:
        """Too few candidates after ``start`` (sharing a bound matchAttribute value) for ``need``."""
        if len(self.flat) - start < need:
            return True
        cs = self.constraints[ci]
        if cs.lists:
            return False
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind == "matchAttribute" and seen and c.applies(leaf):
                ps = self._values(c.attribute).get(seen[0], [])
                if len(ps) - bisect_left(ps, start) < need:
                    return True
        return False

    def _static_ok(self, ci: int, leaf: Leaf, dev: Device) -> bool:
        """False when ``dev`` fails ``leaf`` whatever else is picked; raises what ``_try`` raises."""
        if not self._eligible(leaf, dev):
            return False
        key = dev.dkey
        if not leaf.admin and key in self.allocated.dedicated:
            return False
        if self.cc:
            got = self._consumed(leaf, dev)
            if isinstance(got, str) or remaining_fit(dev, got, self.allocated.aggregated.get(key),
                                                     None) is not None:
                return False
        if dev.skip_node_ops and not self.node_ops:
            return False
        if dev.consumes and not self.pd:
            return False
        if self.taints_on:
            for tkey, tval, effect in dev.taints:
                if effect in _TAINT_EFFECTS and not _tolerated(leaf.tolerations, tkey, tval, effect):
                    return False
        return True

    def _values(self, attr: str) -> dict[Value | None, list[int]]:
        """Positions of the candidates per value of ``attr`` (scalar semantics)."""
        got = self.attr_pos.get(attr)
        if got is None:
            got = {}
            for pos, d in enumerate(self.flat):
                got.setdefault(attribute_value(d, attr, False), []).append(pos)
            self.attr_pos[attr] = got
        return got

    def _bound(self, ci: int, leaf: Leaf, info: _Prune) -> tuple[list[int] | None, str]:
        """The usable positions sharing the value a bound matchAttribute demands (fewest first)."""
        cs = self.constraints[ci]
        if cs.lists:
            return None, ""
        best: tuple[list[int] | None, str] = (None, "")
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind != "matchAttribute" or not seen or not c.applies(leaf):
                continue
            ps = info.groups(self, c.attribute).get(seen[0], [])
            if best[0] is None or len(ps) < len(best[0]):
                best = (ps, c.attribute)
        return best

    def _cut(self, ci: int, leaf: Leaf, where: tuple[int, ...], most: int, attr: str) -> None:
        """Explain a pruned subtree, at the depth the search did reach."""
        if where < self.frontier:
            return
        if attr:
            self._note(where, f"{self._who(ci, leaf)}: constraint matchAttribute {attr}: at most "
                              f"{most} of {leaf.count} devices share a value")
        else:
            self._note(where, f"{self._who(ci, leaf)}: needs {leaf.count} devices, at most "
                              f"{most} could be allocated")

    # ---------------------------------------------------------------- one candidate
    def _consumed(self, leaf: Leaf, dev: Device) -> Consumed | str:
        """``consumed_capacity`` for (leaf, device), cached; raises its CapacityError every time."""
        ck = (id(leaf), dev.uid)
        got = self.consumed.get(ck)
        if got is None:
            try:
                got = consumed_capacity(dev, leaf.capacity, self.gates)
            except CapacityError as e:
                got = e
            self.consumed[ck] = got
        if isinstance(got, CapacityError):
            raise got
        return got

    def _in_use(self, ci: int, leaf: Leaf, dev: Device) -> bool:
        key = dev.dkey
        if key in self.claim_picked[ci] and not (self.cc and dev.allow_multi):
            return True
        if leaf.admin:
            return False
        if key in self.allocated.dedicated or key in self.picked:
            return True
        return False

    def _eligible(self, leaf: Leaf, dev: Device) -> bool:
        ck = (id(leaf), dev.uid)
        got = self.eligible.get(ck)
        if got is None:
            got = self._eligible_uncached(leaf, dev)
            self.eligible[ck] = got
        return got

    def _eligible_uncached(self, leaf: Leaf, dev: Device) -> bool:
        if dev.binding and not self.binding_on:
            return False
        for sel in leaf.class_selectors:
            if not selector_matches(self.model, sel, dev):
                return False
        for sel in leaf.selectors:
            if not selector_matches(self.model, sel, dev):
                return False
        return True

    def _try(self, ci: int, leaf: Leaf, dev: Device, where: tuple[int, ...],
             all_mode: bool) -> list[Callable[[], None]] | None:
        """Allocate ``dev`` for one slot of ``leaf``: the undo list, or None (reason noted)."""
        noting = where >= self.frontier
        if self._in_use(ci, leaf, dev):
            if noting:
                self._note(where, f"{self._who(ci, leaf)}: device {dev.name} already in use")
            return None
        if not all_mode and not self._eligible(leaf, dev):
            if noting:
                self._note(where, f"{self._who(ci, leaf)}: selector false")
            return None
        consumed: Consumed | None = None
        key = dev.dkey
        if self.cc:
            try:
                got = self._consumed(leaf, dev)
            except CapacityError as e:
                raise AllocError(f"{self._who(ci, leaf)}: {e}") from None
            if isinstance(got, str):
                if noting:
                    self._note(where, f"{self._who(ci, leaf)}: {got}")
                return None
            consumed = got
            why = remaining_fit(dev, consumed, self.allocated.aggregated.get(key),
                                self.share_capacity.get(key))
            if why is not None:
                if noting:
                    self._note(where, f"{self._who(ci, leaf)}: {why}")
                return None
        undo: list[Callable[[], None]] = []
        self._tick()  # the costly half of a candidate (counters, groups, constraints) counts again
        reason = self._allocate_device(ci, leaf, dev, undo)
        if reason is not None:
            for u in reversed(undo):
                u()
            if all_mode and reason.startswith("constraint"):
                raise AllocError(f"claim {self.claims[ci].label}, request {leaf.name}: cannot add device "
                                 f"{dev.label()} because a claim constraint would not be satisfied")
            if noting:
                self._note(where, f"{self._who(ci, leaf)}: {reason}")
            return None
        shared = self.cc and dev.allow_multi
        rendered = None
        share_id = None
        if shared and consumed is not None:
            cap = self.share_capacity.setdefault(key, {})
            for full, (val, _fmt) in consumed.items():
                cap[full] = cap.get(full, Fraction(0)) + val

            def _uncap(cap: dict[str, Fraction] = cap, consumed: Any = consumed) -> None:
                for full, (val, _f) in consumed.items():
                    cap[full] -= val
            undo.append(_uncap)
            rendered = render_consumed(dev, consumed) if dev.caps else None
            share_id = str(uuid.uuid4())
        self.shares[key] = self.shares.get(key, 0) + (1 if shared else 0)
        undo.append(lambda: self.shares.__setitem__(key, self.shares[key] - (1 if shared else 0)))
        self.results[ci].append(DeviceResult(leaf.name, dev, leaf.admin, rendered, share_id))
        results = self.results[ci]

        def _unresult() -> None:
            results.pop()
        undo.append(_unresult)
        return undo

    def _allocate_device(self, ci: int, leaf: Leaf, dev: Device,
                         undo: list[Callable[[], None]]) -> str | None:
        key = dev.dkey
        if dev.skip_node_ops and not self.node_ops:
            return f"device {dev.name} needs optional node operations (gate off)"
        if dev.consumes:
            if not self.pd:
                return f"device {dev.name} consumes counters (DRAPartitionableDevices off)"
            pool = self.pool_of.get((dev.slice.driver, dev.slice.pool))
            already_shared = self.cc and dev.allow_multi and (
                key in self.allocated.shared or key in self.allocated.aggregated
                or self.shares.get(key, 0) > 0)
            if pool is not None and not already_shared:
                if self.cg:
                    why = self._groups(pool, dev, undo)
                    if why:
                        return why
                why = self._counters(pool, dev, undo)
                if why:
                    return why
        if self.taints_on:
            for tkey, tval, effect in dev.taints:
                if effect in _TAINT_EFFECTS and not _tolerated(leaf.tolerations, tkey, tval, effect):
                    return f"taint {tkey}={tval}:{effect} on {dev.name} not tolerated"
        why = self.constraints[ci].add(leaf, dev, undo)
        if why:
            return "constraint " + why
        if not (self.cc and dev.allow_multi):
            self.picked.add(key)
            undo.append(lambda: self.picked.discard(key))
        if key not in self.claim_picked[ci]:
            self.claim_picked[ci].add(key)
            undo.append(lambda: self.claim_picked[ci].discard(key))
        return None

    # ---------------------------------------------------------------- counters (§4)
    def _available(self, pool: Pool) -> dict[str, dict[str, Any]]:
        pk = (pool.driver, pool.name)
        got = self.available.get(pk)
        if got is None:
            got = {cs: dict(vals) for cs, vals in pool.counter_sets.items()}
            for d in pool.all_devices():
                if d.consumes and self.allocated.is_allocated(d.dkey):
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

    def _counters(self, pool: Pool, dev: Device, undo: list[Callable[[], None]]) -> str | None:
        pk = (pool.driver, pool.name)
        avail = self._available(pool)
        tally = self.tally.get(pk)
        if tally is None:
            tally = self.tally[pk] = {}
        added: list[tuple[tuple[str, str], Any]] = []
        for cs, counters, _g in dev.consumes:
            for c, v in counters:
                added.append(((cs, c), v))
        if not self.overdrawn[pk]:
            # Counters the device does not consume cannot fail: their tally only grew through
            # picks that passed this check and none is overdrawn (else all are checked, as
            # upstream does). Check before mutating, in pool order, for the same first reason.
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
                        return f"counter {c} of {cs} exhausted"
            for k, v in added:
                tally[k] = tally.get(k, 0) + v
        else:
            for k, v in added:
                tally[k] = tally.get(k, 0) + v
            for cs, vals in avail.items():
                for c, have in vals.items():
                    if have < tally.get((cs, c), 0):
                        for k, v in added:
                            tally[k] -= v
                        return f"counter {c} of {cs} exhausted"

        def _release() -> None:
            for k, v in added:
                tally[k] -= v
        undo.append(_release)
        return None

    # ---------------------------------------------------------------- compatibility groups (§5)
    def _group_state(self, pool: Pool) -> dict[str, Any]:
        pk = (pool.driver, pool.name)
        got = self.groups.get(pk)
        if got is None:
            got = {}
            for d in pool.all_devices():
                if d.consumes and self.allocated.is_allocated(d.dkey):
                    for cs, _c, groups in d.consumes:
                        got[cs] = _group_add(got.get(cs, _EMPTY), groups)
            self.groups[pk] = got
        return got

    def _groups(self, pool: Pool, dev: Device, undo: list[Callable[[], None]]) -> str | None:
        state = self._group_state(pool)
        for cs, _c, groups in dev.consumes:
            if not _group_admits(state.get(cs, _EMPTY), groups):
                return f"compatibility group intersection empty on {cs}"
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

    # ---------------------------------------------------------------- All (§6.4)
    def _all_set(self, claim: Claim, leaf: Leaf) -> list[Device]:
        got = self.all_sets.get(id(leaf))
        if got is not None:
            return got
        for p in self.pools:
            if p.incomplete:
                raise AllocError(f"claim {claim.label}, request {leaf.name}: asks for all devices, but "
                                 f"resource pool {p.label()} is currently being updated",
                                 kind="error")
            if p.invalid:
                raise AllocError(f"claim {claim.label}, request {leaf.name}: asks for all devices, but "
                                 f"resource pool {p.label()} is currently invalid", kind="error")
        out = []
        for d in self.flat:
            if not self._eligible(leaf, d):
                continue
            if self.cc and leaf.capacity is not None:
                try:
                    if isinstance(consumed_capacity(d, leaf.capacity, self.gates), str):
                        continue
                except CapacityError as e:
                    raise AllocError(f"claim {claim.label}, request {leaf.name}: {e}") from None
            out.append(d)
        self.all_sets[id(leaf)] = out
        return out


class _Prune:
    """Per (leaf, node): which candidates are statically usable, and how many from each position."""

    __slots__ = ("usable", "suffix", "by_attr", "vals_at")

    def __init__(self, n: int) -> None:
        self.usable: list[bool] = []
        self.suffix = [0] * (n + 1)
        self.by_attr: dict[str, dict[Value | None, list[int]]] = {}
        self.vals_at: dict[str, list[Value | None]] = {}

    def groups(self, s: Search, attr: str) -> dict[Value | None, list[int]]:
        """Usable positions per value of ``attr``."""
        got = self.by_attr.get(attr)
        if got is None:
            got = {}
            usable = self.usable
            for val, ps in s._values(attr).items():
                if val is not None:
                    keep = [p for p in ps if usable[p]]
                    if keep:
                        got[val] = keep
            self.by_attr[attr] = got
        return got

    def free_match(self, s: Search, cs: ConstraintState, leaf: Leaf
                   ) -> tuple[list[Value | None], str] | None:
        """(value per position, attribute) of a matchAttribute the next pick binds, if any."""
        if cs.lists:
            return None
        for c, seen in zip(cs.constraints, cs.seen, strict=True):
            if c.kind == "matchAttribute" and not seen and c.applies(leaf):
                got = self.vals_at.get(c.attribute)
                if got is None:
                    got = [None] * len(self.usable)
                    for val, ps in self.groups(s, c.attribute).items():
                        for p in ps:
                            got[p] = val
                    self.vals_at[c.attribute] = got
                return got, c.attribute
        return None


def _tolerated(tolerations: tuple[tuple[str, str, str, str], ...], key: str, value: str, effect: str) -> bool:
    for tkey, op, tval, teffect in tolerations:
        if teffect and teffect != effect:
            continue
        if tkey and tkey != key:
            continue
        if op == "Exists":
            return True
        if op == "Equal" and tval == value:
            return True
    return False


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
