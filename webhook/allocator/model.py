"""Allocator model of one ClusterSnapshot: slices, devices, classes, nodes, allocated state.

Built at most once per (snapshot, gates) and cached (``model_for``); per-request work never
rebuilds it. Building is cheap and lazy: slices are indexed by node from their raw dicts and
converted (``devices.py``) when first needed, so a one-shot allocation converts only the nodes
it tries. Converted slices are gate-independent and immutable, so they are reused across
models: a cache keyed by the identity of the raw slice dict plus its resourceVersion (the live
store publishes a new snapshot per watch event but keeps the dicts of unchanged objects) makes
the next snapshot cost only its changed slices; nodes, device classes and the allocated state
are taken from the previous model when their kind did not change. When the snapshot follows the
previous model's by one slice of one node (``ClusterSnapshot.change``, a watch event), the rest is
taken over too (``Model._carry``): the index, the converted slice tuples (spliced), the other
nodes' pools and search data, and their node classes (``classes._inherit``), so an event costs
its slice plus a few C-speed copies, not a pass over the cluster. The cache holds the slices of
the latest snapshot only (``_prune``); new dicts (files) simply miss it. Pure: no I/O.
"""


from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from webhook.allocator.allocated import AllocatedState
from webhook.allocator.devices import (
    CapSpec,
    Device,
    DeviceClassInfo,
    NodeInfo,
    Num,
    Slice,
    _intern,
    interned_str,
    num,
    qnum,
    qty,
)
from webhook.allocator.index import Index
from webhook.allocator.persist import Chunked, Layered, splice
from webhook.allocator.taints import NO_RULES, Taint, TaintRules
from webhook.allocator.variant import STABLE, variant
from webhook.gates import FeatureGates, Gate
from webhook.raw import allocation_results, as_dict, as_list, claim_allocation
from webhook.state.base import Change, ClusterSnapshot

__all__ = ["AllocatedState", "CapSpec", "Device", "DeviceClassInfo", "Model", "NodeInfo", "Num", "Slice",
           "SliceGates", "hiding_gate", "model_for", "num", "qnum", "qty"]


_UIDS = itertools.count()
"""Device uids, unique across every slice ever converted (slices are shared between models)."""
_SLICES: dict[int, tuple[dict[str, Any], Any, Slice]] = {}
"""id(raw slice dict) -> (that dict, its resourceVersion, the converted Slice). Entries of
slices the latest snapshot no longer holds are dropped when a model is built (``_prune``)."""
_NODES: dict[int, tuple[dict[str, Any], Any, NodeInfo]] = {}
"""id(raw Node dict) -> (that dict, its resourceVersion, its NodeInfo), kept like ``_SLICES``."""
_INTERNER: dict[Any, Any] = {}
_SEL: dict[Any, dict[int, Any]] = {}
"""CEL selector results, expression -> device uid -> bool | error text. Gate-independent, so
shared by every model (a watch event does not re-evaluate unchanged devices); entries of
dropped slices are removed, and at most ``_SEL_MAX`` expressions are kept."""
_SEL_MAX = 256
_LATEST: list[tuple[Any, ...]] = [()]
"""The slices of the latest snapshot a model was built for: only its conversions are kept."""
_SLICES_LOCK = threading.Lock()
_INTERNER_MAX = 200_000


def _rv(raw: dict[str, Any]) -> Any:
    meta = raw.get("metadata")
    return meta.get("resourceVersion") if isinstance(meta, dict) else None


def _slice_of(raw: dict[str, Any], keep: bool) -> Slice:
    """The converted slice of ``raw`` (reused while the same dict keeps its resourceVersion);
    ``keep``: remember a new conversion (only the latest snapshot's slices are kept)."""
    rv = _rv(raw)
    hit = _SLICES.get(id(raw))
    if hit is not None and hit[0] is raw and hit[1] == rv:
        return hit[2]
    with _SLICES_LOCK:
        hit = _SLICES.get(id(raw))
        if hit is not None and hit[0] is raw and hit[1] == rv:
            return hit[2]
        if hit is not None:
            _forget([hit[2]])
        if len(_INTERNER) > _INTERNER_MAX:   # sharing is an optimisation: start afresh when large
            _INTERNER.clear()
        first = next(_UIDS)
        for _ in range(len(as_list(as_dict(raw.get("spec")).get("devices")))):
            next(_UIDS)
        sl = Slice(raw, first, _INTERNER)
        if keep:
            _SLICES[id(raw)] = (raw, rv, sl)
        return sl


def _forget(gone: list[Slice]) -> None:
    """Drop the selector results of the devices of ``gone`` (caller holds ``_SLICES_LOCK``)."""
    if gone and _SEL:
        uids = [d.uid for sl in gone if sl._devices is not None for d in sl._devices]
        for results in list(_SEL.values()):
            for u in uids:
                results.pop(u, None)
    while len(_SEL) > _SEL_MAX:
        del _SEL[next(iter(_SEL))]


def _prune(raws: tuple[Any, ...], nodes: tuple[Any, ...]) -> None:
    """Keep only the converted slices and nodes of the latest snapshot (set operations on ids)."""
    with _SLICES_LOCK:
        _LATEST[0] = raws
        gone = _SLICES.keys() - set(map(id, raws)) if _SLICES else ()
        if gone:
            _forget([_SLICES.pop(k)[2] for k in gone])
        for k in _NODES.keys() - set(map(id, nodes)) if _NODES else ():
            del _NODES[k]


def _forget_one(raws: tuple[Any, ...], old: dict[str, Any] | None) -> None:
    """``_prune`` after one slice changed: only ``old``'s conversion is dropped."""
    with _SLICES_LOCK:
        _LATEST[0] = raws
        hit = _SLICES.get(id(old)) if old is not None else None
        if hit is not None and hit[0] is old:
            del _SLICES[id(old)]
            _forget([hit[2]])


def _local_change(snapshot: ClusterSnapshot, prev: Model | None) -> tuple[str, Change] | None:
    """(node, change) when ``snapshot`` follows ``prev``'s snapshot by one ResourceSlice of one
    node (``spec.nodeName`` set on both sides), whose pools only that node's view holds."""
    ch = snapshot.change
    if prev is None or ch is None or ch.kind != "ResourceSlice" or prev._index.raws is not ch.base:
        return None
    names = {as_dict(raw.get("spec")).get("nodeName") for raw in (ch.old, ch.new) if raw is not None}
    if len(names) != 1:
        return None
    (node,) = names
    return (node, ch) if isinstance(node, str) and node else None


class Model:
    """Everything the search needs from one snapshot under one gate set.

    Built cheaply: slices are indexed by node from their raw dicts and converted when first
    needed (the pools of a node, or every slice for a whole-cluster question), through a cache
    shared by every model, so a watch event converts only the changed slice. Parts of the
    snapshot that did not change (the kind's tuple is the same) are taken from the model of the
    previous snapshot under the same gates (``prev``).
    """

    def __init__(self, snapshot: ClusterSnapshot, gates: FeatureGates, prev: Model | None = None) -> None:
        self.gates = gates
        self.variant = variant(gates)
        """Which upstream allocator the gates select (``variant.py``)."""
        self.hide_multi = self.variant == STABLE
        """The stable allocator shows CEL no ``allowMultipleAllocations``."""
        self.snapshot_version = snapshot.version
        self._slice_gates = SliceGates.of(gates)
        raws, node_raws = snapshot.of("ResourceSlice"), snapshot.of("Node")
        local = _local_change(snapshot, prev)
        if local is not None and prev is not None:  # one slice of one node changed: O(that slice)
            _forget_one(raws, local[1].old)
            self._index: Index = prev._index.changed(raws, local[0], local[1].old, local[1].new)
        else:
            _prune(raws, node_raws)
            self._index = prev._index if prev is not None and prev._index.raws is raws else Index(raws)
        self._node_raws = node_raws
        if prev is not None and prev._node_raws is node_raws and _same_nodes(prev._index, self._index, local):
            self.nodes: dict[str, NodeInfo] = prev.nodes
        else:
            self.nodes = _nodes(node_raws, self._index)
        self._class_raws = snapshot.of("DeviceClass")
        self.classes: dict[str, DeviceClassInfo] = (
            prev.classes if prev is not None and prev._class_raws is self._class_raws else
            {dc.name: dc for dc in (DeviceClassInfo(raw) for raw in self._class_raws if isinstance(raw, dict))})
        self.taint_rules = _taint_rules(snapshot.of("DeviceTaintRule"), gates, prev)
        self._claim_raws = snapshot.of("ResourceClaim")
        self.allocated: AllocatedState
        self.allocated_claims: dict[tuple[str, str], dict[str, Any]]
        if prev is not None and prev._claim_raws is self._claim_raws:
            self.allocated, self.allocated_claims = prev.allocated, prev.allocated_claims
        else:
            self.allocated, self.allocated_claims = _allocated(self._claim_raws, gates)
        self._all: Chunked[Slice] | None = None
        self._kept: Chunked[Slice] | None = None
        """The visible slices (``_all`` itself when the gates hide none)."""
        self._by_node: Layered[str, list[Slice]] = Layered()
        self._unnamed: list[Slice] | None = None
        self._by_pool: Layered[tuple[str, str], list[Slice]] | None = None
        self._own: dict[int, Slice] = {}
        """The slices this model converted or took from the cache: one Slice per raw dict."""
        self.pools_cache: Layered[str, Any] = Layered()
        """Gathered pools per node name (``pools.pools_for``)."""
        self.node_data: dict[str, Any] = {}
        """Per node name: what searches there share across requests (``nodedata.node_data``)."""
        self.class_data: dict[str, Any] = {}
        """Node equivalence classes (``classes.py``), built on first use."""
        self.sel_cache: dict[Any, dict[int, Any]] = _SEL
        self.lock = threading.Lock()
        if local is not None and prev is not None:
            self._carry(prev, *local)

    def _carry(self, prev: Model, node: str, ch: Change) -> None:
        """After one slice of ``node`` changed: take from ``prev`` what does not depend on it (the
        other nodes' slices, pools and search data, the converted slice tuples, spliced), and leave
        ``prev``'s node classes for ``classes.py`` to take over (``class_data["from"]``)."""
        if (self.nodes is not prev.nodes or self.classes is not prev.classes or self.allocated is not prev.allocated
                or self.taint_rules is not prev.taint_rules or self.variant == STABLE
                or not (self._index.node_local(node, (ch.old, ch.new)) and prev._index.node_local(node, (ch.old,)))):
            # (the stable allocator puts every node's counter slices in every node's view; a pool
            # with slices on other nodes is judged complete over all of them)
            return
        old = prev._own.get(id(ch.old)) if ch.old is not None else None
        new = self._slice(ch.new) if ch.new is not None else None
        if ch.old is None or old is not None:
            self._all = splice(prev._all, ch.position, old, new, len(ch.base))
        if prev._kept is not None and prev._kept is prev._all and (new is None or self._visible(new)):
            self._kept = self._all  # the gates hide no slice, before or after
        elif (prev._kept is not None and old is not None and new is not None
                and self._visible(old) == self._visible(new) and (old in prev._kept) == self._visible(old)):
            self._kept = splice(prev._kept, prev._kept.index(old) if self._visible(old) else -1, old, new, -1)
        self._unnamed = prev._unnamed
        if prev._by_pool is not None and (ch.old is None or old is not None):
            by_pool = prev._by_pool.child()
            for sl in (old, new):
                if sl is not None:
                    by_pool[sl.pool_key()] = [s for s in by_pool.get(sl.pool_key(), ()) if s is not old]
            if new is not None:
                by_pool[new.pool_key()].append(new)
            self._by_pool = by_pool
        self._by_node, self.pools_cache = prev._by_node.child(), prev.pools_cache.child()
        self._by_node.pop(node, None)
        self.pools_cache.pop(node, None)
        self.node_data = {k: v for k, v in prev.node_data.items() if k != node}  # at most NODE_DATA_NODES
        if "from" not in prev.class_data:  # (a model no request asked about hands nothing on)
            self.class_data["from"] = (prev.class_data, node, old, new)

    def taints(self, dev: Device) -> tuple[Taint, ...]:
        """The device's taints as the scheduler sees them: its slice's, then those of the
        DeviceTaintRules that select it (``taints.py``)."""
        if not self.taint_rules:
            return dev.taints
        return dev.taints + self.taint_rules.of(*dev.dkey)

    def rule_taints(self, dev: Device) -> tuple[Taint, ...]:
        """Only the taints DeviceTaintRules add to the device."""
        return self.taint_rules.of(*dev.dkey) if self.taint_rules else ()

    def node(self, name: str) -> NodeInfo:
        return self.nodes.get(name) or NodeInfo(name, {})

    @property
    def raw_slices(self) -> tuple[Any, ...]:
        """The snapshot's ResourceSlices as stored (unconverted; those the gates hide too)."""
        return self._index.raws

    def _slice(self, raw: dict[str, Any]) -> Slice:
        got = self._own.get(id(raw))
        if got is None:
            got = self._own.setdefault(id(raw), _slice_of(raw, self._index.raws is _LATEST[0]))
        return got

    def _visible(self, sl: Slice) -> bool:
        """§2.1 steps 2-3: gate-driven slice filters hide slices from a node's view; a pool's
        generation and completeness are still judged over all of its slices (``pool_slices``)."""
        # ``hiding_gate`` inlined (this runs for every slice of every model; the pool lint, which
        # calls hiding_gate, is checked against this by tests/differential/test_generated_pools.py).
        g = self._slice_gates
        if not g.partitionable and (sl.per_device is not None or sl.has_counters):
            return False
        return g.compatibility_groups or not sl.has_groups

    @property
    def all_slices(self) -> Chunked[Slice]:
        """Every slice of the snapshot, converted (also those the gates hide), in snapshot order."""
        got = self._all
        if got is None:
            got = self._all = Chunked(self._slice(raw) for raw in self._index.raws if isinstance(raw, dict))
        return got

    @property
    def slices(self) -> Chunked[Slice]:
        """Every slice the gates let the allocator see, converted, in snapshot order."""
        got = self._kept
        if got is None:
            every = self.all_slices
            kept = [sl for sl in every if self._visible(sl)]
            got = self._kept = every if len(kept) == len(every) else Chunked(kept)
        return got

    def node_slices(self, name: str) -> list[Slice]:
        """The visible slices with ``spec.nodeName`` = ``name``, in snapshot order."""
        got: list[Slice] | None = self._by_node.get(name)
        if got is None:
            got = [sl for sl in map(self._slice, self._index.by_node.get(name, ())) if self._visible(sl)]
            if len(self._by_node) < 4096:
                self._by_node[name] = got
        return got

    def unnamed_slices(self) -> list[Slice]:
        """The visible slices without a node name, in snapshot order."""
        got = self._unnamed
        if got is None:
            got = self._unnamed = [sl for sl in map(self._slice, self._index.unnamed) if self._visible(sl)]
        return got

    def pool_slices(self, key: tuple[str, str]) -> list[Slice]:
        """Every slice of pool ``key`` (driver, pool), the gates' hidden ones too."""
        got = self._by_pool
        if got is None:
            by_pool: dict[tuple[str, str], list[Slice]] = {}
            for sl in self.all_slices:
                by_pool.setdefault(sl.pool_key(), []).append(sl)
            got = self._by_pool = Layered(by_pool)
        return got.get(key, [])  # type: ignore[no-any-return]


def _same_nodes(prev: Index, index: Index, local: tuple[str, Change] | None) -> bool:
    """Whether the two indexes name the same nodes (by slices, by devices); after one node's
    change (``local``), only that node's presence is compared."""
    if local is not None:
        return (local[0] in prev.by_node) == (local[0] in index.by_node) and prev.device_nodes is index.device_nodes
    return prev.by_node.same_keys(index.by_node) and prev.device_nodes == index.device_nodes


class SliceGates(NamedTuple):
    """The two gates whose being off hides slices from the allocator, read once per model."""

    partitionable: bool
    compatibility_groups: bool

    @classmethod
    def of(cls, gates: FeatureGates) -> SliceGates:
        return cls(gates.enabled(Gate.DRA_PARTITIONABLE_DEVICES), gates.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS))


def hiding_gate(*, per_device: bool, counters: bool, groups: bool | Callable[[], bool],
                gates: SliceGates) -> Gate | None:
    """The gate whose being off hides a slice from the allocator (§2.1 steps 2-3), or None.

    While ``DRAPartitionableDevices`` is off the scheduler ignores slices that set
    ``perDeviceNodeSelection`` (true or false) or have counter sets; while
    ``DRADeviceCompatibilityGroups`` is off, slices with a device that names compatibility groups.
    ``groups`` may be a function: it is called only when the answer depends on it.
    """
    if (per_device or counters) and not gates.partitionable:
        return Gate.DRA_PARTITIONABLE_DEVICES
    if gates.compatibility_groups:
        return None
    uses = groups() if callable(groups) else groups
    return Gate.DRA_DEVICE_COMPATIBILITY_GROUPS if uses else None


def _allocated(raws: tuple[Any, ...],
               gates: FeatureGates) -> tuple[AllocatedState, dict[tuple[str, str], dict[str, Any]]]:
    """The allocated state of the claims with ``status.allocation``, and those claims by key."""
    state = AllocatedState()
    claims: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in raws:
        if not isinstance(raw, dict):
            continue
        if claim_allocation(raw):
            meta = as_dict(raw.get("metadata"))
            claims[(interned_str(meta.get("namespace")) or "default", interned_str(meta.get("name")))] = raw
            state.add_results(allocation_results(raw), gates)
    return state, claims


def _taint_rules(raws: tuple[Any, ...], gates: FeatureGates, prev: Model | None) -> TaintRules:
    """The DeviceTaintRules that apply under these gates (``Model.taint_rules``): the previous
    model's while the kind is unchanged; none while a gate is off (the scheduler's slice tracker
    then applies no rules)."""
    if not (gates.enabled(Gate.DRA_DEVICE_TAINTS) and gates.enabled(Gate.DRA_DEVICE_TAINT_RULES)) or not raws:
        return NO_RULES
    if prev is not None and prev.taint_rules.raws is raws:
        return prev.taint_rules
    return TaintRules(raws)


def _nodes(node_raws: tuple[Any, ...], index: Index) -> dict[str, NodeInfo]:
    """Nodes by name (sorted): the Node objects, plus nodes only known from slices and devices.
    A Node object keeps its NodeInfo while the same dict keeps its resourceVersion (``_NODES``)."""
    nodes: dict[str, NodeInfo] = {}
    fresh: list[tuple[int, tuple[dict[str, Any], Any, NodeInfo]]] = []
    cached = _NODES.get
    for raw in node_raws:
        if not isinstance(raw, dict):
            continue
        meta = raw.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        hit = cached(id(raw))
        if hit is not None and hit[0] is raw and hit[1] == rv:
            info = hit[2]
        else:
            got = NodeInfo.of(raw)
            if got is None:
                continue
            info = got
            fresh.append((id(raw), (raw, rv, info)))
        nodes[info.name] = info
    if fresh:
        with _SLICES_LOCK:
            _NODES.update(fresh)
    for name in (*index.by_node, *index.device_nodes):  # a node only known from its slices still gets a chance
        if name not in nodes:
            nodes[name] = NodeInfo(_intern(name), {})
    return dict(sorted(nodes.items()))


_CACHE: dict[tuple[int, int, str], tuple[weakref.ref[ClusterSnapshot], Model]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 4
_LAST: dict[str, Model] = {}
"""The latest model per gate set: the next snapshot's model takes its unchanged parts."""


def model_for(snapshot: ClusterSnapshot, gates: FeatureGates) -> Model:
    """The model of ``snapshot`` under ``gates``, built at most once while the snapshot lives."""
    key = (id(snapshot), snapshot.version, gates.spec())
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is snapshot:
            return hit[1]
    with _CACHE_LOCK:
        prev = _LAST.get(gates.spec())
    model = Model(snapshot, gates, prev)
    with _CACHE_LOCK:
        _LAST[gates.spec()] = model
        for k in [k for k, (ref, _) in _CACHE.items() if ref() is None]:
            del _CACHE[k]
        while len(_CACHE) >= _CACHE_MAX:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = (weakref.ref(snapshot), model)
    return model
