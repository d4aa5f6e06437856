"""What one candidate device costs a search (docs/allocator.md §4-§7): the checks of a single
pick, in upstream's order: in use → eligibility (bindings, class and request CEL selectors,
per-device node) → capacity fit → ``allocate_device`` (node operations, counters and groups,
taints, constraints, marking it in use) → the capacity share and result. Every change is made to
the search's ``Frame`` and pushed on the caller's undo list (search invariant 1); a rejection
notes why through the ``Hooks``. ``search.Search`` runs the recursion that calls ``pick``.
"""

from __future__ import annotations

import uuid
from typing import Any

from webhook.allocator.capacity import (
    CapacityError,
    Consumed,
    consumed_capacity,
    remaining_fit,
    render_consumed,
)
from webhook.allocator.claims import AllocError, Leaf, Selector
from webhook.allocator.fit import selector_matches
from webhook.allocator.frame import DeviceResult, Frame, Hooks, Where
from webhook.allocator.model import Device, Num
from webhook.allocator.pooluse import Undo
from webhook.allocator.reasons import Code, Reason, fatal
from webhook.allocator.taints import untolerated

BINDING = "binding"
"""``misfit``: a device with binding conditions while their gates are off."""
OTHER_NODE = "other-node"
"""``misfit``: a device of a per-device slice that does not serve this node."""
_UNSEEN = object()
"""A device not evaluated for a leaf's content yet (``NodeData.misfits``)."""


def allocation_of(results: list[DeviceResult]) -> dict[str, Any]:
    """A claim's ``status.allocation`` for these results, with the ``nodeSelector`` upstream's
    allocator gives it: the node of a node-local device; else the requirements of the devices'
    single-term node selectors, in one term; none when every device is on all nodes."""
    out: dict[str, Any] = {"devices": {"results": [status_result(r) for r in results]}}
    fields: list[dict[str, Any]] = []
    exprs: list[dict[str, Any]] = []
    for r in results:
        where: Device | Any = r.device if r.device.slice.per_device else r.device.slice
        if where.node_name:
            out["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [where.node_name]}]}]}
            return out
        sel = where.node_selector
        if sel is not None and len(sel.terms) == 1:
            for source, key, op, values in sel.terms[0]:
                req = {"key": key, "operator": op, **({"values": list(values)} if values else {})}
                into = fields if source == "field" else exprs
                if req not in into:
                    into.append(req)
    if fields or exprs:
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        out["nodeSelector"] = {"nodeSelectorTerms": [term]}
    return out


def status_result(r: DeviceResult) -> dict[str, Any]:
    """One entry of ``status.allocation.devices.results`` (with its ``shareID``)."""
    d = r.as_dict()
    if r.share_id:
        d["shareID"] = r.share_id
    return d


class Candidates:
    """Checks and records single picks in one search's ``Frame``."""

    __slots__ = ("frame", "hooks", "misfits", "consumed_cache", "selector_reasons")

    def __init__(self, frame: Frame, hooks: Hooks) -> None:
        self.frame = frame
        self.hooks = hooks
        self.misfits = frame.data.misfits
        """(Leaf.sel_id, device uid) -> ``misfit``: shared by the searches of the node."""
        self.consumed_cache = frame.data.consumed
        """(Leaf.cap_id, device uid) -> ``consumed_capacity``: shared by the searches of the node."""
        self.selector_reasons: dict[tuple[int, int, int], Reason] = {}
        """The "selector is false" reason per (claim, leaf, selector): one instance for every
        device the selector turns down (they name no device)."""

    def consumed(self, leaf: Leaf, dev: Device) -> Consumed | Reason:
        """``consumed_capacity`` for (leaf, device), cached per capacity request (``Leaf.cap_id``);
        raises its CapacityError every time."""
        ck = (leaf.cap_id, dev.uid)
        got = self.consumed_cache.get(ck)
        if got is None:
            try:
                got = consumed_capacity(dev, leaf.capacity, self.frame.model.gates)
            except CapacityError as e:
                got = e
            self.consumed_cache[ck] = got
        if isinstance(got, CapacityError):
            raise got
        return got

    def eligible(self, leaf: Leaf, dev: Device) -> bool:
        """Whether ``leaf``'s class, selectors and bindings let it take ``dev`` on this node."""
        return self.misfit(leaf, dev) is None

    def misfit(self, leaf: Leaf, dev: Device) -> Selector | str | None:
        """Why ``leaf`` can never take ``dev``: the first selector that is false, ``BINDING``
        (binding conditions with their gates off), ``OTHER_NODE``, or None when the device is
        eligible. Cached per class and selectors (``Leaf.sel_id``: leaves equal in those get equal
        answers; a selector of another such leaf has the same ``name()``)."""
        ck = (leaf.sel_id, dev.uid)
        if ck in self.misfits:
            return self.misfits[ck]
        f = self.frame
        got: Selector | str | None = None
        if dev.binding and not f.switches.binding:
            got = BINDING
        else:
            got = next((sel for sel in leaf.class_selectors + leaf.selectors
                        if not selector_matches(f.model, sel, dev)), None)
            if got is None and dev.slice.per_device and not dev.matches_node(f.node):
                got = OTHER_NODE  # checked after the selectors, as upstream (their errors count)
        self.misfits[ck] = got
        return got

    def pick(self, ci: int, leaf: Leaf, dev: Device, where: Where, all_mode: bool) -> Undo | None:
        """Allocate ``dev`` for one slot of ``leaf`` of claim ``ci``: the undo list, or None (the
        reason noted at ``where``). ``all_mode``: an ``All`` request, whose devices are eligible."""
        f, hooks = self.frame, self.hooks
        noting = where >= hooks.frontier
        consumable = f.switches.consumable
        # In use first, as upstream: a device in use is never shown to the selectors (whose
        # errors are fatal). A reason only names devices the class and selectors select.
        # In use: picked by this claim (unless shareable), or, without admin access, by the
        # cluster or another claim of the search. Inline: most candidates a PodGroup's later
        # claims pass are in use (240 of the 336 a PodGroup of 16 partition pairs tries).
        key = dev.dkey
        if ((key in f.claim_picked[ci] and not (consumable and dev.allow_multi))
                or (not leaf.admin and (key in f.allocated.dedicated or key in f.picked))):
            if noting and self.could_select(leaf, dev, error=False):
                hooks.note(where, (ci, leaf, dev))
            return None
        misfit = None if all_mode else self.misfit(leaf, dev)
        if misfit is not None:
            if noting and misfit is not OTHER_NODE:  # not this node's device: nothing to explain
                hooks.note(where, self._misfit_reason(ci, leaf, dev, misfit))
            return None
        fit = self._capacity_fit(ci, leaf, dev) if consumable and not all_mode else None
        if isinstance(fit, Reason):
            if noting:
                hooks.note(where, hooks.attribute(ci, leaf, fit))
            return None
        undo: Undo = []
        hooks.tick()  # the costly half of a candidate (counters, groups, constraints) counts again
        reason = self._allocate_device(ci, leaf, dev, undo)
        if reason is None and all_mode and consumable:  # All: capacity after the constraints, as upstream
            late = self._capacity_fit(ci, leaf, dev)
            if isinstance(late, Reason):
                reason = late
            else:
                fit = late
        if reason is not None:
            undo_all(undo)
            if all_mode and reason.code in (Code.CONSTRAINT_MISSING, Code.CONSTRAINT_UNSATISFIED):
                raise AllocError(fatal(f"cannot add device {dev.label()} because a claim constraint "
                                       "would not be satisfied", f.claims[ci].label, leaf.name))
            if noting:
                hooks.note(where, hooks.attribute(ci, leaf, reason))
            return None
        self._record(ci, leaf, dev, fit, undo)
        return undo

    def _misfit_reason(self, ci: int, leaf: Leaf, dev: Device, misfit: Selector | str) -> Reason:
        if isinstance(misfit, Selector):
            key = (ci, id(leaf), id(misfit))
            got = self.selector_reasons.get(key)
            if got is None:
                got = self.selector_reasons[key] = self.hooks.reason(ci, leaf, Code.SELECTOR_FALSE,
                                                                     selector=misfit.name())
            return got
        return self.hooks.reason(ci, leaf, Code.BINDING_OFF, device=dev.name)

    def could_select(self, leaf: Leaf, dev: Device, error: bool = True) -> bool:
        """Whether ``leaf``'s class and selectors select ``dev`` (a CEL error counts as ``error``)."""
        known = self.misfits.get((leaf.sel_id, dev.uid), _UNSEEN)
        if known is not _UNSEEN:  # most devices were evaluated for this content before
            return known is None
        try:
            return self.misfit(leaf, dev) is None
        except AllocError:
            return error

    def _capacity_fit(self, ci: int, leaf: Leaf, dev: Device) -> Consumed | Reason:
        """What ``leaf`` consumes on ``dev``, or why it does not fit (next to what is in use)."""
        f = self.frame
        try:
            got = self.consumed(leaf, dev)
        except CapacityError as e:
            raise AllocError(fatal(str(e), f.claims[ci].label, leaf.name)) from None
        if isinstance(got, Reason):
            return got
        key = dev.dkey
        why = remaining_fit(dev, got, f.allocated.aggregated.get(key), f.share_capacity.get(key))
        return got if why is None else why

    def _record(self, ci: int, leaf: Leaf, dev: Device, consumed: Consumed | None, undo: Undo) -> None:
        """Record the pick: the capacity share of a shareable device, and the result."""
        f = self.frame
        key = dev.dkey
        shared = f.switches.consumable and dev.allow_multi
        rendered = None
        share_id = None
        if shared and consumed is not None:
            cap = f.share_capacity.setdefault(key, {})
            for full, (val, _fmt) in consumed.items():
                cap[full] = cap.get(full, 0) + val

            def _uncap(cap: dict[str, Num] = cap, consumed: Any = consumed) -> None:
                for full, (val, _f) in consumed.items():
                    cap[full] -= val
            undo.append(_uncap)
            rendered = render_consumed(dev, consumed) if dev.caps else None
            share_id = str(uuid.uuid4())
        shares = f.shares
        shares[key] = shares.get(key, 0) + (1 if shared else 0)
        undo.append(lambda: shares.__setitem__(key, shares[key] - (1 if shared else 0)))
        results = f.results[ci]
        results.append(DeviceResult(leaf.name, dev, leaf.admin, rendered, share_id))

        def _unresult() -> None:
            results.pop()
        undo.append(_unresult)

    def _allocate_device(self, ci: int, leaf: Leaf, dev: Device, undo: Undo) -> Reason | None:
        """Gates, counters, groups, taints and constraints for one pick; marks it in use."""
        f = self.frame
        sw = f.switches
        key = dev.dkey
        if dev.skip_node_ops and not sw.node_ops:
            return Reason(Code.NODE_OPERATIONS, device=dev.name)
        if dev.consumes:
            why = self._pool_counters(dev, undo)
            if why is not None:
                return why
        if sw.taints:
            taint = untolerated(leaf.tolerations, f.model.taints(dev))
            if taint is not None:
                return Reason(Code.TAINT, device=dev.name, taint=taint.label(), rule=taint.rule)
        why = f.constraints[ci].add(leaf, dev, undo)
        if why is not None:
            return why
        if not (sw.consumable and dev.allow_multi):
            # Counted per claim: undoing one claim's (admin) pick keeps another claim's mark.
            picked = f.picked
            picked[key] = picked.get(key, 0) + 1
            undo.append(lambda: _release(picked, key))
        mine = f.claim_picked[ci]
        if key not in mine:
            mine.add(key)
            undo.append(lambda: mine.discard(key))
        return None

    def _pool_counters(self, dev: Device, undo: Undo) -> Reason | None:
        """§4/§5 for a device that consumes counters (a device already shared consumes nothing new)."""
        f = self.frame
        sw = f.switches
        if not sw.partitionable:
            return Reason(Code.COUNTERS_GATE_OFF, device=dev.name)
        key = dev.dkey
        pool = f.pool_of.get((dev.slice.driver, dev.slice.pool))
        already_shared = sw.consumable and dev.allow_multi and (
            key in f.allocated.shared or key in f.allocated.aggregated or f.shares.get(key, 0) > 0)
        if pool is None or already_shared:
            return None
        if sw.groups:
            why = f.use.compatible(pool, dev, undo)
            if why is not None:
                return why
        return f.use.counters(pool, dev, undo)


def _release(counts: dict[Any, int], key: Any) -> None:
    if counts[key] == 1:
        del counts[key]
    else:
        counts[key] -= 1


def undo_all(undo: Undo) -> None:
    for u in reversed(undo):
        u()
