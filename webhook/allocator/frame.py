"""The state of one device search, named once, and the hooks its parts report through.

Pure. ``Frame`` is what one search on one node reads (node, claims, allocated state, pools,
the gates as ``Switches``) and what it changes, always undoably (search invariant 1: picks,
capacity shares, counters and groups, constraint values, results). ``search.Search`` runs the
recursion over it; ``candidate.Candidates`` checks and records one pick in it; ``prune.Pruner``
bounds what is still obtainable from it. The last two report back through ``Hooks`` (count a
step, note a reason, word one), which ``Progress`` implements: the steps a search counted
against its ``Limits``, and the reasons seen at the furthest point it reached.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.allocator.claims import BudgetExceeded, Claim, Leaf
from webhook.allocator.constraintstate import ConstraintState
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo, Num
from webhook.allocator.nodedata import NodeData, node_data
from webhook.allocator.pools import Pool, pools_for
from webhook.allocator.pooluse import PoolUse
from webhook.allocator.reasons import Code, Reason
from webhook.allocator.variant import EXPERIMENTAL
from webhook.gates import Gate

DeviceKey = tuple[str, str, str]
"""(driver, pool, device): ``Device.dkey``."""
Where = tuple[int, ...]
"""A position of the search, ordered as the search advances: (claim, request, slot)."""
Noted = Reason | tuple[Any, ...]
"""A noted reason, or the key of "in use" reasons built only when read (``search.Search.reasons``):
(claim, leaf, device) for one device, (claim, leaf, first, end) for the candidates at positions
first..end-1."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one search may spend."""

    max_steps: int = 100_000
    deadline: float | None = None
    """A ``clock`` value; past it the search stops (``BudgetExceeded``)."""
    clock: Callable[[], float] = time.monotonic


DEFAULT_LIMITS = Limits()


class Carry:
    """What the searches of one per-pod call on one node hand on, claim to claim."""

    __slots__ = ("data", "use", "known")

    def __init__(self, data: NodeData) -> None:
        self.data = data
        """The node's shared evaluations (``nodedata.node_data``)."""
        self.use: PoolUse | None = None
        """The previous claim's counters and groups with its picks folded in (``PoolUse.carried``)."""
        self.known: set[tuple[Any, ...]] = set()
        """Request contents whose pruning data a search of this call built (``Pruner.knows``)."""


class Switches:
    """The gates and node features one search obeys (fixed for its model and node)."""

    __slots__ = ("consumable", "partitionable", "groups", "taints", "binding", "node_ops")

    def __init__(self, model: Model, node: NodeInfo) -> None:
        g = model.gates
        self.consumable = g.enabled(Gate.DRA_CONSUMABLE_CAPACITY)
        self.partitionable = g.enabled(Gate.DRA_PARTITIONABLE_DEVICES)
        self.groups = g.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS)
        self.taints = g.enabled(Gate.DRA_DEVICE_TAINTS)
        self.binding = g.enabled(Gate.DRA_DEVICE_BINDING_CONDITIONS) and g.enabled(
            Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS)
        """Devices with binding conditions may be picked."""
        # Only the experimental allocator knows skipNodeOperations: it needs the gate and a node
        # that declares the feature.
        self.node_ops = model.variant != EXPERIMENTAL or (
            g.enabled(Gate.DRA_OPTIONAL_NODE_OPERATIONS) and "DRAOptionalNodeOperations" in node.features)
        """Devices that skip node operations may be picked."""


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


class Frame:
    """The state of one search: (node, claims, allocated state) on one model."""

    __slots__ = ("model", "node", "claims", "allocated", "pools", "data", "flat", "pool_of", "switches", "picked",
                 "claim_picked", "shares", "share_capacity", "use", "constraints", "results")

    def __init__(self, model: Model, node: NodeInfo, claims: list[Claim], allocated: AllocatedState,
                 carry: Carry | None = None) -> None:
        # What the search reads.
        self.model = model
        self.node = node
        self.claims = claims
        self.allocated = allocated
        """Devices in use before this search (the cluster's and the caller's allocated claims)."""
        self.pools: list[Pool] = pools_for(model, node)
        self.data: NodeData = carry.data if carry is not None else node_data(model, node, self.pools)
        """What the searches of this node share (``nodedata``)."""
        self.flat: tuple[Device, ...] = self.data.flat
        """The candidates, in search order."""
        self.pool_of: dict[tuple[str, str], Pool] = {(p.driver, p.name): p for p in self.pools}
        self.switches = Switches(model, node)
        # What it changes, undoably.
        self.picked: dict[DeviceKey, int] = {}
        """Devices picked without sharing: how many claims of this search hold each."""
        self.claim_picked: list[set[DeviceKey]] = [set() for _ in claims]
        """Per claim, the devices it picked (shared or not)."""
        self.shares: dict[DeviceKey, int] = {}
        """Per shareable device, how many picks share it."""
        self.share_capacity: dict[DeviceKey, dict[str, Num]] = {}
        """Per shareable device, the capacity this search's shares consume (by full name)."""
        self.use: PoolUse = (carry.use if carry is not None and carry.use is not None
                             else PoolUse(allocated, self.data.consumers))
        """Counters and groups; per-pod mode carries the previous claim's (``PoolUse.carried``)."""
        lists = model.gates.enabled(Gate.DRA_LIST_TYPE_ATTRIBUTES)
        self.constraints = [ConstraintState(c.constraints, lists) for c in claims]
        self.results: list[list[DeviceResult]] = [[] for _ in claims]

    def invalid_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.invalid]


class Hooks(Protocol):
    """What the checks of a candidate and the pruning call back into (``Progress`` here)."""

    frontier: Where
    """The furthest position the search reached: reasons noted before it are dropped."""

    def tick(self) -> None:
        """Count one step; past the budget or the deadline, stop the search (``BudgetExceeded``)."""

    def ticks(self, n: int) -> None:
        """Count ``n`` steps at once, stopping where ``n`` calls of ``tick`` would."""

    def note(self, where: Where, reason: Noted) -> None:
        """Keep ``reason`` if the search got at least as far as ``where``."""

    def reason(self, ci: int, leaf: Leaf, code: Code, **fields: Any) -> Reason:
        """A reason about claim ``ci``'s ``leaf``."""

    def attribute(self, ci: int, leaf: Leaf, r: Reason) -> Reason:
        """``r`` (from capacity, constraints, counters) attributed to claim ``ci`` and ``leaf``."""


class Progress:
    """How far one search got and what it spent: the ``Hooks`` of ``Candidates`` and ``Pruner``."""

    __slots__ = ("claims", "max_steps", "deadline", "clock", "steps", "frontier", "noted")

    def __init__(self, claims: list[Claim], limits: Limits) -> None:
        self.claims = claims
        self.max_steps, self.deadline, self.clock = limits.max_steps, limits.deadline, limits.clock
        self.steps = 0
        self.frontier: Where = ()
        self.noted: dict[Noted, int] = {}
        """Reasons at the frontier and how often each was seen. "In use" reasons are noted by key
        (``Noted``) and built only when read: most are dropped when the search goes further, and a
        PodGroup's later claims pass many devices in use."""

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise BudgetExceeded(self.max_steps, "step budget")
        if self.deadline is not None and not self.steps & 31 and self.clock() > self.deadline:
            raise BudgetExceeded(self.steps, "deadline")

    def ticks(self, n: int) -> None:
        if self.steps + n > self.max_steps:
            self.steps = self.max_steps + 1
            raise BudgetExceeded(self.max_steps, "step budget")
        crosses = (self.steps + n) // 32 != self.steps // 32
        self.steps += n
        if self.deadline is not None and crosses and self.clock() > self.deadline:
            raise BudgetExceeded(self.steps, "deadline")

    def note(self, where: Where, reason: Noted) -> None:
        if where > self.frontier:
            self.frontier, self.noted = where, {}
        if where == self.frontier:
            self.noted[reason] = self.noted.get(reason, 0) + 1

    def reason(self, ci: int, leaf: Leaf, code: Code, **fields: Any) -> Reason:
        return Reason(code, claim=self.claims[ci].label, request=leaf.name,
                      device_class=leaf.cls.name if leaf.cls is not None else "", **fields)

    def attribute(self, ci: int, leaf: Leaf, r: Reason) -> Reason:
        return r._replace(claim=self.claims[ci].label, request=leaf.name,
                          device_class=leaf.cls.name if leaf.cls is not None else "")
