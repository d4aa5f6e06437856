"""The device search for one node (allocator.md §4-§8): depth-first, first solution wins.

Algorithm. Claims in the given order, requests in spec order, subrequests of ``firstAvailable``
in order, device slots 0..count-1; candidates are the node's devices in pool/slice/device order
(§2.5). Within one request the next slot only looks *after* the previous pick (combinations, not
permutations); a new request restarts at the first device. ``All`` requests take exactly their
precomputed device list, in order. A candidate passes, in upstream's order: in use → eligibility
(bindings, class and request CEL selectors cached per device × leaf content, per-device node)
→ capacity fit (for All after the constraints) → ``_allocate_device`` (node operations,
PartitionableDevices, groups, counters, taints, constraints, mark in use, capacity share). The
first complete assignment is the answer. One candidate's checks: ``candidate.py``; counters and
groups: ``pooluse.py``; pruning and what the searches of one node share: ``prune.py``;
failures: ``Reason``s. A run of candidates in use passes at once (``_pass_in_use``), as one by
one it would.

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
(6) Pruning (``prune.py``) only cuts subtrees that provably hold no solution and raise no error:
it is enabled for a leaf only after every candidate's eligibility and capacity were evaluated
without a fatal error, and it bounds the devices still obtainable (statically usable devices
after a position; with a bound matchAttribute, only those sharing its value). So the first
solution, and every fatal error, are those of the unpruned search; only explanations and steps
may differ. A leaf prunes from its first candidate once a search of the call built data for its
content (``Pruner.knows``), else from its first backtrack or raw cut.
Pure: no I/O; time is read only through the ``clock`` argument.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from webhook.allocator.candidate import Candidates, DeviceResult, undo_all
from webhook.allocator.capacity import (
    CapacityError,
    Consumed,
    consumed_capacity,
)
from webhook.allocator.claims import (
    ALL,
    DEVICES_PER_CLAIM_MAX,
    AllocError,
    BudgetExceeded,
    Claim,
    Leaf,
    Request,
    Selector,
    too_many_devices,
)
from webhook.allocator.constraints import ConstraintState
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo, Num
from webhook.allocator.pools import Pool, pools_for
from webhook.allocator.pooluse import PoolUse
from webhook.allocator.prune import OK, SKIP, STOP, NodeData, Pruner, Window, node_data
from webhook.allocator.reasons import Code, Reason, fatal
from webhook.allocator.variant import EXPERIMENTAL
from webhook.gates import Gate


class Search(Candidates):
    """One allocation attempt: (node, claims, pools, allocated state, gates)."""

    pruning = True
    """Cut subtrees that provably hold no solution (invariant 6); tests compare with it off."""
    runs = True
    """Pass runs of candidates in use at once (``_pass_in_use``); tests compare with it off."""

    def __init__(self, model: Model, node: NodeInfo, claims: list[Claim], allocated: AllocatedState,
                 *, max_steps: int = 100_000, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic, data: NodeData | None = None,
                 use: PoolUse | None = None, known: set[tuple[Any, ...]] | None = None) -> None:
        self.model = model
        self.gates = model.gates
        self.node = node
        self.claims = claims
        self.allocated = allocated
        self.pools: list[Pool] = pools_for(model, node)
        self.data = data if data is not None else node_data(model, node, self.pools)
        """What the searches of this node share: kept in the model across requests, and given by
        the caller to the claims' searches of one per-pod call (``prune.node_data``)."""
        self.flat: tuple[Device, ...] = self.data.flat
        self.pool_of: dict[tuple[str, str], Pool] = {(p.driver, p.name): p for p in self.pools}
        self.max_steps = max_steps
        self.deadline = deadline
        self.clock = clock
        self.steps = 0
        g = self.gates
        self.cc = g.enabled(Gate.DRA_CONSUMABLE_CAPACITY)
        self.pd = g.enabled(Gate.DRA_PARTITIONABLE_DEVICES)
        self.cg = g.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS)
        self.taints_on = g.enabled(Gate.DRA_DEVICE_TAINTS)
        self.binding_on = g.enabled(Gate.DRA_DEVICE_BINDING_CONDITIONS) and g.enabled(
            Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS)
        # Only the experimental allocator knows skipNodeOperations: it needs the gate and a node
        # that declares the feature.
        self.node_ops = model.variant != EXPERIMENTAL or (
            g.enabled(Gate.DRA_OPTIONAL_NODE_OPERATIONS) and "DRAOptionalNodeOperations" in node.features)
        self.picked: dict[tuple[str, str, str], int] = {}  # non-shared picks: how many claims hold each
        self.claim_picked: list[set[tuple[str, str, str]]] = [set() for _ in claims]
        self.shares: dict[tuple[str, str, str], int] = {}
        self.share_capacity: dict[tuple[str, str, str], dict[str, Num]] = {}
        self.use = use if use is not None else PoolUse(allocated, self.data.consumers)
        """Counters and groups; per-pod mode carries the previous claim's (``PoolUse.carried``)."""
        self.constraints = [ConstraintState(c, self.gates) for c in claims]
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.misfits: dict[tuple[int, int], Selector | str | None] = self.data.misfits
        self.consumed: dict[tuple[int, int], Consumed | Reason | CapacityError] = self.data.consumed
        self.all_sets: dict[tuple[int, int], list[Device]] = self.data.all_sets
        self.pruner = Pruner(self, known)
        """Per-pod mode gives it the contents earlier claims' searches built data for (``known``)."""
        # Explanations: the reasons seen at the furthest point the search reached.
        self.frontier: tuple[int, ...] = ()
        self.noted: dict[Reason | tuple[Any, ...], int] = {}
        """Reasons at the frontier and how often each was seen. "In use" reasons are built only
        when read (``reasons``): most are dropped when the search goes further, and a PodGroup's
        later claims pass many devices in use. Their keys: (claim, leaf, device) for one device,
        (claim, leaf, first, end) for the candidates at positions first..end-1."""
        self.selector_reasons: dict[tuple[int, int, int], Reason] = {}
        """The "selector is false" reason per (claim, leaf, selector): one instance for every
        device the selector turns down (they name no device)."""
        self.revisited = False
        """Some claim's devices were taken back after the next claim found no fit with them."""

    # ---------------------------------------------------------------- entry point
    def run(self) -> bool:
        """True when every claim got devices (then ``results`` holds them)."""
        for claim in self.claims:
            total = sum(min(len(self._all_set(claim, leaf)) if leaf.mode == ALL else leaf.count
                            for leaf in _leaves(req)) for req in claim.requests)
            if total > DEVICES_PER_CLAIM_MAX:
                raise too_many_devices(claim.label, total)
        return self._one(0, 0, -1, 0, 0)

    def invalid_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.invalid]

    # ---------------------------------------------------------------- bookkeeping
    def note(self, where: tuple[int, ...], reason: Reason | tuple[Any, ...]) -> None:
        """Keep ``reason`` if the search got at least this far (``where`` orders positions)."""
        if where > self.frontier:
            self.frontier, self.noted = where, {}
        if where == self.frontier:
            self.noted[reason] = self.noted.get(reason, 0) + 1

    @property
    def reasons(self) -> dict[Reason, int]:
        """The reasons at the frontier with their counts, in the order first seen."""
        out: dict[Reason, int] = {}
        for r, n in self.noted.items():
            if isinstance(r, Reason):
                out[r] = out.get(r, 0) + n
                continue
            ci, leaf = r[0], r[1]
            for dev in (r[2],) if len(r) == 3 else self.flat[r[2]:r[3]]:
                if self.could_select(leaf, dev, error=False):
                    why = self._reason(ci, leaf, Code.IN_USE, device=dev.name)
                    out[why] = out.get(why, 0) + n
        return out

    def tick(self) -> None:
        """Count one step; past the budget or the deadline, stop the search."""
        self.steps += 1
        if self.steps > self.max_steps:
            raise BudgetExceeded(self.max_steps, "step budget")
        if self.deadline is not None and not self.steps & 31 and self.clock() > self.deadline:
            raise BudgetExceeded(self.steps, "deadline")

    def ticks(self, n: int) -> None:
        """Count ``n`` steps at once, stopping where ``n`` calls of ``tick`` would."""
        if self.steps + n > self.max_steps:
            self.steps = self.max_steps + 1
            raise BudgetExceeded(self.max_steps, "step budget")
        crosses = (self.steps + n) // 32 != self.steps // 32
        self.steps += n
        if self.deadline is not None and crosses and self.clock() > self.deadline:
            raise BudgetExceeded(self.steps, "deadline")

    def _reason(self, ci: int, leaf: Leaf, code: Code, **fields: Any) -> Reason:
        return Reason(code, claim=self.claims[ci].label, request=leaf.name,
                      device_class=leaf.cls.name if leaf.cls is not None else "", **fields)

    def _of(self, ci: int, leaf: Leaf, r: Reason) -> Reason:
        """``r`` (from capacity, constraints, counters) attributed to claim ``ci`` and ``leaf``."""
        return r._replace(claim=self.claims[ci].label, request=leaf.name,
                          device_class=leaf.cls.name if leaf.cls is not None else "")

    # ---------------------------------------------------------------- the recursion
    def _one(self, ci: int, ri: int, si: int, slot: int, start: int) -> bool:
        """Fill slot ``slot`` of request ``ri`` (subrequest ``si``) of claim ``ci``, and the rest."""
        self.tick()
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
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
        for j, sub in enumerate(req.subrequests):
            need = len(self._all_set(self.claims[ci], sub)) if sub.mode == ALL else sub.count
            if len(self.results[ci]) + need > DEVICES_PER_CLAIM_MAX:
                self.note((ci, ri), self._reason(ci, sub, Code.OVER_LIMIT, got=DEVICES_PER_CLAIM_MAX))
                continue
            if self._one(ci, ri, j, 0, 0):
                return True
        return False

    def _all_slot(self, ci: int, ri: int, si: int, slot: int, leaf: Leaf) -> bool:
        """``All``: take the precomputed device list, one device per slot, in order."""
        where = (ci, ri, slot)
        devs = self._all_set(self.claims[ci], leaf)
        if not devs:
            self.note(where, self._reason(ci, leaf, Code.ALL_NONE))
            return False
        if slot >= len(devs):
            return self._one(ci, ri + 1, -1, 0, 0)
        undo = self._try(ci, leaf, devs[slot], where, all_mode=True)
        if undo is None:
            return False
        if self._one(ci, ri, si, slot + 1, 0):
            return True
        undo_all(undo)
        return False

    def _exact_slot(self, ci: int, ri: int, si: int, slot: int, start: int, leaf: Leaf) -> bool:
        """``ExactCount``: try the candidates after ``start`` for this slot, pruning where provable."""
        where = (ci, ri, slot)
        flat = self.flat
        need = leaf.count - slot
        pr = self.pruner
        pending = self.pruning and id(leaf) not in pr.info
        info = pr.info.get(id(leaf))
        # Data for this content built already, or a raw bound says "cut" (make sure it is exact).
        if pending and (pr.knows(leaf) or pr.raw_cut(ci, leaf, start, need)):
            info = pr.info_for(ci, leaf)
            pending = False
        window = Window(pr, ci, leaf, info, need) if info else None
        tick, try_ = self.tick, self._try
        runs = self.runs and not leaf.admin
        held, picked = self.allocated.dedicated, self.picked
        after = 0  # the end of a run of candidates in use, once passed
        for pos in range(start, len(flat)):
            if pos < after:
                continue
            if window is not None:
                verdict = window.verdict(pr, ci, leaf, where, slot, pos, need)
                if verdict == STOP:
                    break
                if verdict == SKIP:
                    continue
            if runs and (flat[pos].dkey in held or flat[pos].dkey in picked):
                after = self._pass_in_use(ci, leaf, where, slot, need, pos, window)
                if after < 0:  # pruning said stop within the run
                    break
                continue
            tick()
            undo = try_(ci, leaf, flat[pos], where, False)
            if undo is None:
                continue
            if self._one(ci, ri, si, slot + 1, pos + 1):
                return True
            undo_all(undo)
            if pending:
                # Backtracking: the search may explore combinations, so pruning pays off.
                info = pr.info_for(ci, leaf)
                pending = False
                window = Window(pr, ci, leaf, info, need) if info else None
        if not flat:
            self.note(where, self._reason(ci, leaf, Code.NO_DEVICES, node=self.node.name))
        elif self.frontier < where:
            self.note(where, self._reason(ci, leaf, Code.TOO_FEW, number=leaf.count, got=slot))
        return False

    def _pass_in_use(self, ci: int, leaf: Leaf, where: tuple[int, ...], slot: int, need: int, pos: int,
                     window: Window | None) -> int:
        """Pass the run of candidates from ``pos`` (pruning said try it) that are in use for a
        leaf without admin access (held by the allocated state or picked by this search), as
        ``_try`` passes each: a step and an "in use" note when ``leaf`` would select it. Pruning
        is asked about each position after the first as the loop would ask, except where its
        answer cannot have changed: after a held device, unusable to it, the counts are the
        same. The notes are one per stretch that pruning let through. The position after the
        run, or -1 when pruning said stop."""
        flat, end = self.flat, len(self.flat)
        held, picked = self.allocated.dedicated, self.picked
        pr = self.pruner
        first, steps = pos, 1
        same = flat[pos].dkey in held
        pos += 1
        while pos < end:
            key = flat[pos].dkey
            is_held = key in held
            if not (is_held or key in picked):
                break
            if window is not None and not (is_held and same):
                verdict = window.verdict(pr, ci, leaf, where, slot, pos, need)
                if verdict != OK:
                    self._note_in_use(ci, leaf, where, first, pos)
                    if verdict == STOP:
                        self.ticks(steps)
                        return -1
                    first = pos + 1  # SKIP: no step, no note for this one
                    same = False
                    pos += 1
                    continue
            same = is_held
            steps += 1
            pos += 1
        self._note_in_use(ci, leaf, where, first, pos)
        self.ticks(steps)
        return pos

    def _note_in_use(self, ci: int, leaf: Leaf, where: tuple[int, ...], first: int, end: int) -> None:
        """One lazy "in use" note for the candidates at ``first``..``end-1`` (``reasons`` builds
        them), if the search got this far and ``leaf`` would select one of them."""
        if first < end and where >= self.frontier:
            could_select = self.could_select
            if any(could_select(leaf, dev, False) for dev in self.flat[first:end]):
                self.note(where, (ci, leaf, first, end))

    # ---------------------------------------------------------------- All (§6.4)
    def _all_set(self, claim: Claim, leaf: Leaf) -> list[Device]:
        """The devices an ``All`` request takes (fatal when a pool is being updated or invalid)."""
        ak = (leaf.sel_id, leaf.cap_id)
        got = self.all_sets.get(ak)
        if got is not None:
            return got
        for p in self.pools:
            if p.incomplete or p.invalid:
                state = "being updated" if p.incomplete else "invalid"
                raise AllocError(fatal(f"asks for all devices, but resource pool {p.label()} is currently "
                                       f"{state}", claim.label, leaf.name))
        out = []
        for d in self.flat:
            if not self._eligible(leaf, d):
                continue
            if self.cc and leaf.capacity is not None:
                try:
                    if isinstance(consumed_capacity(d, leaf.capacity, self.gates), Reason):
                        continue
                except CapacityError as e:
                    raise AllocError(fatal(str(e), claim.label, leaf.name)) from None
            out.append(d)
        self.all_sets[ak] = out
        return out


def _leaves(req: Request) -> tuple[Leaf, ...]:
    return (req.leaf,) if req.leaf is not None else req.subrequests
