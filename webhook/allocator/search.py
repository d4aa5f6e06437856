"""The device search for one node (docs/allocator.md §4-§8): depth-first, first solution wins.

Algorithm. Claims in the given order, requests in spec order, subrequests of ``firstAvailable``
in order, device slots 0..count-1; candidates are the node's devices in pool/slice/device order
(§2.5). Within one request the next slot only looks *after* the previous pick (combinations, not
permutations); a new request restarts at the first device. ``All`` requests take exactly their
precomputed device list, in order. A candidate passes, in upstream's order: in use → eligibility
(bindings, class and request CEL selectors cached per device × leaf content, per-device node)
→ capacity fit (for All after the constraints) → ``Candidates._allocate_device`` (node operations,
PartitionableDevices, groups, counters, taints, constraints, mark in use, capacity share). The
first complete assignment is the answer. A run of candidates in use passes at once
(``_pass_in_use``), as one by one it would.

Parts. The state of one search is ``frame.Frame`` (what it reads, what it changes); its steps
and explanations are ``frame.Progress``, which the other parts reach as ``frame.Hooks``. One
candidate's checks: ``candidate.Candidates``; counters and groups: ``pooluse.PoolUse``;
constraint values: ``constraintstate.ConstraintState`` over the kinds of ``constraints``;
pruning: ``prune.Pruner``; what the searches of one node share: ``nodedata.NodeData``;
failures: ``Reason``s.

Invariants. (1) Every mutation done for a candidate (counter tally, group state, constraint
values, in-use marks, capacity shares, results) is pushed on one undo list and undone on
rejection and on backtracking, so state after a failed branch equals state before it.
(2) Counters: for every counter of every counter set of a touched pool, available (counter
value minus allocated devices' consumption) >= consumed in this attempt. (3) Group state per
(pool, counter set) is the running intersection over allocated and picked devices. (4) At most
32 devices per claim. (5) Steps count work at candidate granularity: every call of ``_one``
and every device tried (or evaluated for pruning) is one step, one more when it gets as far
as counters, groups and constraints (so a step is a few µs); past ``Limits.max_steps`` or
``Limits.deadline`` the search stops with ``BudgetExceeded`` — never a wrong answer.
(6) Pruning (``prune.py``) only cuts subtrees that provably hold no solution and raise no error:
it is enabled for a leaf only after every candidate's eligibility and capacity were evaluated
without a fatal error, and it bounds the devices still obtainable (statically usable devices
after a position; with a constraint that binds a value, matchAttribute, only those sharing it). So the first
solution, and every fatal error, are those of the unpruned search; only explanations and steps
may differ. A leaf prunes from its first candidate once a search of the call built data for its
content (``Pruner.knows``), else from its first backtrack or raw cut.
Pure: no I/O; time is read only through ``Limits.clock``.
"""

from __future__ import annotations

from webhook.allocator.candidate import Candidates, undo_all
from webhook.allocator.capacity import CapacityError, consumed_capacity
from webhook.allocator.claims import (
    ALL,
    DEVICES_PER_CLAIM_MAX,
    AllocError,
    Claim,
    Leaf,
    Request,
    too_many_devices,
)
from webhook.allocator.frame import DEFAULT_LIMITS, Carry, DeviceResult, Frame, Limits, Progress, Where
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo
from webhook.allocator.pools import Pool
from webhook.allocator.pooluse import PoolUse
from webhook.allocator.prune import OK, SKIP, STOP, Pruner, Window
from webhook.allocator.reasons import Code, Reason, fatal


class Search:
    """One allocation attempt: (node, claims, allocated state) on one model, within ``limits``.

    ``carry``: what the earlier searches of a per-pod call on this node hand on (``frame.Carry``).
    Read after ``run``: ``results``, ``steps``, ``reasons``, ``revisited``."""

    pruning = True
    """Cut subtrees that provably hold no solution (invariant 6); tests compare with it off."""
    runs = True
    """Pass runs of candidates in use at once (``_pass_in_use``); tests compare with it off."""

    __slots__ = ("frame", "progress", "candidates", "pruner", "revisited")

    def __init__(self, model: Model, node: NodeInfo, claims: list[Claim], allocated: AllocatedState,
                 limits: Limits = DEFAULT_LIMITS, carry: Carry | None = None) -> None:
        self.frame = Frame(model, node, claims, allocated, carry)
        self.progress = Progress(claims, limits)
        self.candidates = Candidates(self.frame, self.progress)
        self.pruner = Pruner(self.frame, self.progress, self.candidates, carry.known if carry is not None else None)
        self.revisited = False
        """Some claim's devices were taken back after the next claim found no fit with them."""

    # ---------------------------------------------------------------- what callers read
    @property
    def model(self) -> Model:
        return self.frame.model

    @property
    def claims(self) -> list[Claim]:
        return self.frame.claims

    @property
    def pools(self) -> list[Pool]:
        return self.frame.pools

    @property
    def use(self) -> PoolUse:
        """Counters and groups after the search (per-pod mode carries them on)."""
        return self.frame.use

    @property
    def results(self) -> list[list[DeviceResult]]:
        """Per claim, its devices (after a successful ``run``)."""
        return self.frame.results

    @property
    def steps(self) -> int:
        return self.progress.steps

    def invalid_pools(self) -> list[Pool]:
        return self.frame.invalid_pools()

    def could_select(self, leaf: Leaf, dev: Device, error: bool = True) -> bool:
        """Whether ``leaf``'s class and selectors select ``dev`` (a CEL error counts as ``error``)."""
        return self.candidates.could_select(leaf, dev, error)

    # ---------------------------------------------------------------- entry point
    def run(self) -> bool:
        """True when every claim got devices (then ``results`` holds them)."""
        for claim in self.frame.claims:
            total = sum(min(len(self._all_set(claim, leaf)) if leaf.mode == ALL else leaf.count
                            for leaf in _leaves(req)) for req in claim.requests)
            if total > DEVICES_PER_CLAIM_MAX:
                raise too_many_devices(claim.label, total)
        return self._one(0, 0, -1, 0, 0)

    @property
    def reasons(self) -> dict[Reason, int]:
        """The reasons at the frontier with their counts, in the order first seen."""
        out: dict[Reason, int] = {}
        progress, could_select = self.progress, self.candidates.could_select
        for r, n in progress.noted.items():
            if isinstance(r, Reason):
                out[r] = out.get(r, 0) + n
                continue
            ci, leaf = r[0], r[1]
            for dev in (r[2],) if len(r) == 3 else self.frame.flat[r[2]:r[3]]:
                if could_select(leaf, dev, error=False):
                    why = progress.reason(ci, leaf, Code.IN_USE, device=dev.name)
                    out[why] = out.get(why, 0) + n
        return out

    # ---------------------------------------------------------------- the recursion
    def _one(self, ci: int, ri: int, si: int, slot: int, start: int) -> bool:
        """Fill slot ``slot`` of request ``ri`` (subrequest ``si``) of claim ``ci``, and the rest."""
        self.progress.tick()
        claims = self.frame.claims
        if ci >= len(claims):
            return True
        claim = claims[ci]
        if ri >= len(claim.requests):
            if self._one(ci + 1, 0, -1, 0, 0):
                return True
            self.revisited = True
            return False
        req = claim.requests[ri]
        if req.leaf is None and si < 0:
            return self._first_available(ci, ri, req)
        leaf = req.leaf if req.leaf is not None else req.subrequests[si]
        if leaf.mode == ALL:
            return self._all_slot(ci, ri, si, slot, leaf)
        if slot >= leaf.count:
            return self._one(ci, ri + 1, -1, 0, 0)
        return self._exact_slot(ci, ri, si, slot, start, leaf)

    def _first_available(self, ci: int, ri: int, req: Request) -> bool:
        """Try the subrequests in order; the first that leads to a full solution wins."""
        progress = self.progress
        for j, sub in enumerate(req.subrequests):
            need = len(self._all_set(self.frame.claims[ci], sub)) if sub.mode == ALL else sub.count
            if len(self.frame.results[ci]) + need > DEVICES_PER_CLAIM_MAX:
                progress.note((ci, ri), progress.reason(ci, sub, Code.OVER_LIMIT, got=DEVICES_PER_CLAIM_MAX))
                continue
            if self._one(ci, ri, j, 0, 0):
                return True
        return False

    def _all_slot(self, ci: int, ri: int, si: int, slot: int, leaf: Leaf) -> bool:
        """``All``: take the precomputed device list, one device per slot, in order."""
        where = (ci, ri, slot)
        devs = self._all_set(self.frame.claims[ci], leaf)
        if not devs:
            self.progress.note(where, self.progress.reason(ci, leaf, Code.ALL_NONE))
            return False
        if slot >= len(devs):
            return self._one(ci, ri + 1, -1, 0, 0)
        undo = self.candidates.pick(ci, leaf, devs[slot], where, all_mode=True)
        if undo is None:
            return False
        if self._one(ci, ri, si, slot + 1, 0):
            return True
        undo_all(undo)
        return False

    def _exact_slot(self, ci: int, ri: int, si: int, slot: int, start: int, leaf: Leaf) -> bool:
        """``ExactCount``: try the candidates after ``start`` for this slot, pruning where provable."""
        where = (ci, ri, slot)
        f, progress = self.frame, self.progress
        flat = f.flat
        need = leaf.count - slot
        pr = self.pruner
        pending = self.pruning and id(leaf) not in pr.info
        info = pr.info.get(id(leaf))
        # Data for this content built already, or a raw bound says "cut" (make sure it is exact).
        if pending and (pr.knows(leaf) or pr.raw_cut(ci, leaf, start, need)):
            info = pr.info_for(leaf)
            pending = False
        window = Window(pr, ci, leaf, info, need) if info else None
        tick, pick = progress.tick, self.candidates.pick
        runs = self.runs and not leaf.admin
        held, picked = f.allocated.dedicated, f.picked
        after = 0  # the end of a run of candidates in use, once passed
        for pos in range(start, len(flat)):
            if pos < after:
                continue
            if window is not None:
                verdict = window.verdict(where, slot, pos)
                if verdict == STOP:
                    break
                if verdict == SKIP:
                    continue
            if runs and (flat[pos].dkey in held or flat[pos].dkey in picked):
                after = self._pass_in_use(ci, leaf, where, pos, window)
                if after < 0:  # pruning said stop within the run
                    break
                continue
            tick()
            undo = pick(ci, leaf, flat[pos], where, False)
            if undo is None:
                continue
            if self._one(ci, ri, si, slot + 1, pos + 1):
                return True
            undo_all(undo)
            if pending:
                # Backtracking: the search may explore combinations, so pruning pays off.
                info = pr.info_for(leaf)
                pending = False
                window = Window(pr, ci, leaf, info, need) if info else None
        if not flat:
            progress.note(where, progress.reason(ci, leaf, Code.NO_DEVICES, node=f.node.name))
        elif progress.frontier < where:
            progress.note(where, progress.reason(ci, leaf, Code.TOO_FEW, number=leaf.count, got=slot,
                                                 **self._shortage(leaf)))
        return False

    def _shortage(self, leaf: Leaf) -> dict[str, object]:
        """The device counts of a ``TOO_FEW`` reason when they decide it: fewer devices on the
        node that ``leaf`` selects are free of the cluster's allocations than it needs (with the
        pool, when they all come from one). {} otherwise (constraints, counters or capacity are
        what stopped it, and their own reasons say so)."""
        if leaf.admin:
            return {}
        held, could_select = self.frame.allocated.dedicated, self.candidates.could_select
        matching = [d for d in self.frame.flat if could_select(leaf, d, error=False)]
        free = sum(1 for d in matching if d.dkey not in held)
        if not matching or free >= leaf.count:
            return {}
        pools = {d.dkey[:2] for d in matching}
        pool = "/".join(next(iter(pools))) if len(pools) == 1 else ""
        return {"free": free, "total": len(matching), "pool": pool}

    def _pass_in_use(self, ci: int, leaf: Leaf, where: Where, pos: int, window: Window | None) -> int:
        """Pass the run of candidates from ``pos`` (pruning said try it) that are in use for a
        leaf without admin access (held by the allocated state or picked by this search), as
        ``Candidates.pick`` passes each: a step and an "in use" note when ``leaf`` would select
        it. Pruning is asked about each position after the first as the loop would ask, except
        where its answer cannot have changed: after a held device, unusable to it, the counts are
        the same. The notes are one per stretch that pruning let through. ``where`` is the slot's
        (claim, request, slot). The position after the run, or -1 when pruning said stop."""
        f = self.frame
        flat, end = f.flat, len(f.flat)
        held, picked = f.allocated.dedicated, f.picked
        slot = where[-1]
        first, steps = pos, 1
        same = flat[pos].dkey in held
        pos += 1
        while pos < end:
            key = flat[pos].dkey
            is_held = key in held
            if not (is_held or key in picked):
                break
            if window is not None and not (is_held and same):
                verdict = window.verdict(where, slot, pos)
                if verdict != OK:
                    self._note_in_use(ci, leaf, where, first, pos)
                    if verdict == STOP:
                        self.progress.ticks(steps)
                        return -1
                    first = pos + 1  # SKIP: no step, no note for this one
                    same = False
                    pos += 1
                    continue
            same = is_held
            steps += 1
            pos += 1
        self._note_in_use(ci, leaf, where, first, pos)
        self.progress.ticks(steps)
        return pos

    def _note_in_use(self, ci: int, leaf: Leaf, where: Where, first: int, end: int) -> None:
        """One lazy "in use" note for the candidates at ``first``..``end-1`` (``reasons`` builds
        them), if the search got this far and ``leaf`` would select one of them."""
        progress = self.progress
        if first < end and where >= progress.frontier:
            could_select = self.candidates.could_select
            if any(could_select(leaf, dev, False) for dev in self.frame.flat[first:end]):
                progress.note(where, (ci, leaf, first, end))

    # ---------------------------------------------------------------- All (§6.4)
    def _all_set(self, claim: Claim, leaf: Leaf) -> list[Device]:
        """The devices an ``All`` request takes (fatal when a pool is being updated or invalid)."""
        f = self.frame
        ak = (leaf.sel_id, leaf.cap_id)
        all_sets = f.data.all_sets
        got = all_sets.get(ak)
        if got is not None:
            return got
        for p in f.pools:
            if p.incomplete or p.invalid:
                state = "being updated" if p.incomplete else "invalid"
                raise AllocError(fatal(f"asks for all devices, but resource pool {p.label()} is currently "
                                       f"{state}", claim.label, leaf.name))
        out = []
        eligible, consumable = self.candidates.eligible, f.switches.consumable
        for d in f.flat:
            if not eligible(leaf, d):
                continue
            if consumable and leaf.capacity is not None:
                try:
                    if isinstance(consumed_capacity(d, leaf.capacity, f.model.gates), Reason):
                        continue
                except CapacityError as e:
                    raise AllocError(fatal(str(e), claim.label, leaf.name)) from None
            out.append(d)
        all_sets[ak] = out
        return out


def _leaves(req: Request) -> tuple[Leaf, ...]:
    return (req.leaf,) if req.leaf is not None else req.subrequests
