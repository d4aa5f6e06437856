"""What one candidate device costs a search (allocator.md §4-§7): the half of ``Search`` that
checks and records a single pick, in upstream's order: in use → eligibility (bindings, class and
request CEL selectors, per-device node) → capacity fit → ``_allocate_device`` (node operations,
counters and groups, taints, constraints, marking it in use) → the capacity share and result.
Every change is pushed on the caller's undo list (search invariant 1); a rejection notes why.
``Search`` (search.py) owns the state these methods read and the recursion that calls them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from webhook.allocator.capacity import (
    CapacityError,
    Consumed,
    consumed_capacity,
    remaining_fit,
    render_consumed,
)
from webhook.allocator.claims import AllocError, Claim, Leaf, Selector
from webhook.allocator.constraints import ConstraintState
from webhook.allocator.fit import selector_matches
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo, Num
from webhook.allocator.pools import Pool
from webhook.allocator.pooluse import PoolUse, Undo
from webhook.allocator.reasons import Code, Reason, fatal
from webhook.allocator.taints import untolerated
from webhook.gates import FeatureGates

BINDING = "binding"
"""``_misfit``: a device with binding conditions while their gates are off."""
OTHER_NODE = "other-node"
"""``_misfit``: a device of a per-device slice that does not serve this node."""
_UNSEEN = object()
"""A device not evaluated for a leaf's content yet (``Search.misfits``)."""


class DeviceResult:
    """One allocated device of a claim, as ``status.allocation.devices.results`` holds it."""

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


class Candidates:
    """The per-candidate methods of ``Search``; the attributes below are set by its constructor."""

    model: Model
    gates: FeatureGates
    node: NodeInfo
    claims: list[Claim]
    allocated: AllocatedState
    cc: bool
    pd: bool
    cg: bool
    taints_on: bool
    binding_on: bool
    node_ops: bool
    frontier: tuple[int, ...]
    picked: dict[tuple[str, str, str], int]
    claim_picked: list[set[tuple[str, str, str]]]
    shares: dict[tuple[str, str, str], int]
    share_capacity: dict[tuple[str, str, str], dict[str, Num]]
    use: PoolUse
    constraints: list[ConstraintState]
    results: list[list[DeviceResult]]
    misfits: dict[tuple[int, int], Selector | str | None]
    consumed: dict[tuple[int, int], Consumed | Reason | CapacityError]
    pool_of: dict[tuple[str, str], Pool]
    selector_reasons: dict[tuple[int, int, int], Reason]

    tick: Callable[[], None]
    note: Callable[[tuple[int, ...], Reason | tuple[Any, ...]], None]
    _reason: Callable[..., Reason]
    _of: Callable[[int, Leaf, Reason], Reason]

    def _consumed(self, leaf: Leaf, dev: Device) -> Consumed | Reason:
        """``consumed_capacity`` for (leaf, device), cached per capacity request (``Leaf.cap_id``);
        raises its CapacityError every time."""
        ck = (leaf.cap_id, dev.uid)
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

    def _eligible(self, leaf: Leaf, dev: Device) -> bool:
        return self._misfit(leaf, dev) is None

    def _misfit(self, leaf: Leaf, dev: Device) -> Selector | str | None:
        """Why ``leaf`` can never take ``dev``: the first selector that is false, ``BINDING``
        (binding conditions with their gates off), or None when the device is eligible. Cached per
        class and selectors (``Leaf.sel_id``: leaves equal in those get equal answers; a selector
        of another such leaf has the same ``name()``)."""
        ck = (leaf.sel_id, dev.uid)
        if ck in self.misfits:
            return self.misfits[ck]
        got: Selector | str | None = None
        if dev.binding and not self.binding_on:
            got = BINDING
        else:
            got = next((sel for sel in leaf.class_selectors + leaf.selectors
                        if not selector_matches(self.model, sel, dev)), None)
            if got is None and dev.slice.per_device and not dev.matches_node(self.node):
                got = OTHER_NODE  # checked after the selectors, as upstream (their errors count)
        self.misfits[ck] = got
        return got

    def _try(self, ci: int, leaf: Leaf, dev: Device, where: tuple[int, ...],
             all_mode: bool) -> Undo | None:
        """Allocate ``dev`` for one slot of ``leaf``: the undo list, or None (reason noted)."""
        noting = where >= self.frontier
        # In use first, as upstream: a device in use is never shown to the selectors (whose
        # errors are fatal). A reason only names devices the class and selectors select.
        # In use: picked by this claim (unless shareable), or, without admin access, by the
        # cluster or another claim of the search. Inline: most candidates a PodGroup's later
        # claims pass are in use (240 of the 336 a PodGroup of 16 partition pairs tries).
        key = dev.dkey
        if ((key in self.claim_picked[ci] and not (self.cc and dev.allow_multi))
                or (not leaf.admin and (key in self.allocated.dedicated or key in self.picked))):
            if noting and self.could_select(leaf, dev, error=False):
                self.note(where, (ci, leaf, dev))
            return None
        misfit = None if all_mode else self._misfit(leaf, dev)
        if misfit is not None:
            if noting and misfit is not OTHER_NODE:  # not this node's device: nothing to explain
                self.note(where, self._misfit_reason(ci, leaf, dev, misfit))
            return None
        fit = self._capacity_fit(ci, leaf, dev) if self.cc and not all_mode else None
        if isinstance(fit, Reason):
            if noting:
                self.note(where, self._of(ci, leaf, fit))
            return None
        undo: Undo = []
        self.tick()  # the costly half of a candidate (counters, groups, constraints) counts again
        reason = self._allocate_device(ci, leaf, dev, undo)
        if reason is None and all_mode and self.cc:  # All: capacity after the constraints, as upstream
            late = self._capacity_fit(ci, leaf, dev)
            if isinstance(late, Reason):
                reason = late
            else:
                fit = late
        if reason is not None:
            undo_all(undo)
            if all_mode and reason.code in (Code.CONSTRAINT_MISSING, Code.CONSTRAINT_UNSATISFIED):
                raise AllocError(fatal(f"cannot add device {dev.label()} because a claim constraint "
                                       "would not be satisfied", self.claims[ci].label, leaf.name))
            if noting:
                self.note(where, self._of(ci, leaf, reason))
            return None
        self._record(ci, leaf, dev, fit, undo)
        return undo

    def _misfit_reason(self, ci: int, leaf: Leaf, dev: Device, misfit: Selector | str) -> Reason:
        if isinstance(misfit, Selector):
            key = (ci, id(leaf), id(misfit))
            got = self.selector_reasons.get(key)
            if got is None:
                got = self.selector_reasons[key] = self._reason(ci, leaf, Code.SELECTOR_FALSE,
                                                                selector=misfit.name())
            return got
        return self._reason(ci, leaf, Code.BINDING_OFF, device=dev.name)

    def could_select(self, leaf: Leaf, dev: Device, error: bool = True) -> bool:
        """Whether ``leaf``'s class and selectors select ``dev`` (a CEL error counts as ``error``)."""
        known = self.misfits.get((leaf.sel_id, dev.uid), _UNSEEN)
        if known is not _UNSEEN:  # most devices were evaluated for this content before
            return known is None
        try:
            return self._misfit(leaf, dev) is None
        except AllocError:
            return error

    def _capacity_fit(self, ci: int, leaf: Leaf, dev: Device) -> Consumed | Reason:
        """What ``leaf`` consumes on ``dev``, or why it does not fit (next to what is in use)."""
        try:
            got = self._consumed(leaf, dev)
        except CapacityError as e:
            raise AllocError(fatal(str(e), self.claims[ci].label, leaf.name)) from None
        if isinstance(got, Reason):
            return got
        key = dev.dkey
        why = remaining_fit(dev, got, self.allocated.aggregated.get(key), self.share_capacity.get(key))
        return got if why is None else why

    def _record(self, ci: int, leaf: Leaf, dev: Device, consumed: Consumed | None, undo: Undo) -> None:
        """Record the pick: the capacity share of a shareable device, and the result."""
        key = dev.dkey
        shared = self.cc and dev.allow_multi
        rendered = None
        share_id = None
        if shared and consumed is not None:
            cap = self.share_capacity.setdefault(key, {})
            for full, (val, _fmt) in consumed.items():
                cap[full] = cap.get(full, 0) + val

            def _uncap(cap: dict[str, Num] = cap, consumed: Any = consumed) -> None:
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

    def _allocate_device(self, ci: int, leaf: Leaf, dev: Device, undo: Undo) -> Reason | None:
        """Gates, counters, groups, taints and constraints for one pick; marks it in use."""
        key = dev.dkey
        if dev.skip_node_ops and not self.node_ops:
            return Reason(Code.NODE_OPERATIONS, device=dev.name)
        if dev.consumes:
            why = self._pool_counters(dev, undo)
            if why is not None:
                return why
        if self.taints_on:
            taint = untolerated(leaf.tolerations, self.model.taints(dev))
            if taint is not None:
                return Reason(Code.TAINT, device=dev.name, taint=taint.label(), rule=taint.rule)
        why = self.constraints[ci].add(leaf, dev, undo)
        if why is not None:
            return why
        if not (self.cc and dev.allow_multi):
            # Counted per claim: undoing one claim's (admin) pick keeps another claim's mark.
            self.picked[key] = self.picked.get(key, 0) + 1
            undo.append(lambda: _release(self.picked, key))
        if key not in self.claim_picked[ci]:
            self.claim_picked[ci].add(key)
            undo.append(lambda: self.claim_picked[ci].discard(key))
        return None

    def _pool_counters(self, dev: Device, undo: Undo) -> Reason | None:
        """§4/§5 for a device that consumes counters (a device already shared consumes nothing new)."""
        if not self.pd:
            return Reason(Code.COUNTERS_GATE_OFF, device=dev.name)
        key = dev.dkey
        pool = self.pool_of.get((dev.slice.driver, dev.slice.pool))
        already_shared = self.cc and dev.allow_multi and (
            key in self.allocated.shared or key in self.allocated.aggregated or self.shares.get(key, 0) > 0)
        if pool is None or already_shared:
            return None
        if self.cg:
            why = self.use.compatible(pool, dev, undo)
            if why is not None:
                return why
        return self.use.counters(pool, dev, undo)


def _release(counts: dict[Any, int], key: Any) -> None:
    if counts[key] == 1:
        del counts[key]
    else:
        counts[key] -= 1


def undo_all(undo: Undo) -> None:
    for u in reversed(undo):
        u()
