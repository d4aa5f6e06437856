"""Compact allocator model of one ClusterSnapshot: slices, devices, classes, nodes, allocated state.

Built once per (snapshot, gates) and cached (``model_for``); per-request work never rebuilds it.
Converted slices are gate-independent and immutable, so they are reused across models: a cache
keyed by the identity of the raw slice dict plus its resourceVersion (the live store publishes
a new snapshot per watch event but keeps the dicts of unchanged objects) makes the model of the
next snapshot cost only the changed slices. The cache holds the slices of the latest build only
(entries of slices no longer present are dropped); new dicts (files) simply miss it.
Pure: no I/O, no kubernetes imports. Raw attribute and capacity maps are *referenced* from the
snapshot, not copied; strings are interned, integral counter values are ints, and identical
capacity/counter specs (and their tuples) are shared, so the model stays a small multiple of the
state's JSON size. Odd state (wrong types, unparsable quantities) never raises: it is read as
"absent" or zero, the way the scheduler would skip it.
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from fractions import Fraction
from typing import Any

from webhook.allocator.nodesel import NodeSelector, parse_node_selector
from webhook.allocator.variant import STABLE, variant
from webhook.gates import FeatureGates, Gate
from webhook.quantity import try_parse
from webhook.state.base import ClusterSnapshot

_intern = sys.intern


def _s(v: Any) -> str:
    """An interned string, or "" for anything that is not a string."""
    return _intern(v) if isinstance(v, str) else ""


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def qty(v: Any) -> Fraction | None:
    q = try_parse(v) if v is not None else None
    return q.value if q is not None else None


Num = int | Fraction
"""An exact amount: an int when integral (fast to add and compare: every quantity of the hot
path, bytes, cores, counts, is), else the Fraction. Both compare and add exactly with each other."""


def num(v: Fraction | None) -> Num | None:
    """``v`` as a ``Num`` (None stays None)."""
    if v is None:
        return None
    return v.numerator if v.denominator == 1 else v


def qnum(v: Any) -> Num | None:
    """A quantity's exact value as a ``Num``, or None when absent or unparsable."""
    return num(qty(v))


def _num(v: Fraction | None) -> Num:
    """A counter amount (0 when absent)."""
    got = num(v)
    return 0 if got is None else got


def _shared(interner: dict[Any, Any], value: Any) -> Any:
    """One shared instance of an immutable (hashable) value."""
    return interner.setdefault(("v", value), value)


class CapSpec:
    """One declared capacity: value plus its request policy (shared between identical devices)."""

    __slots__ = ("value", "default", "vmin", "vmax", "step", "valid_values", "has_policy", "raw_value",
                 "raw_min", "raw_max", "raw_step", "raw_default")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw_value = raw.get("value")
        self.value: Num = qnum(raw.get("value")) or 0
        pol = raw.get("requestPolicy")
        self.has_policy = isinstance(pol, dict)
        pol = _d(pol)
        self.raw_default = pol.get("default")
        self.default = qnum(self.raw_default)
        vr = pol.get("validRange")
        if isinstance(vr, dict):
            self.raw_min, self.raw_max, self.raw_step = vr.get("min"), vr.get("max"), vr.get("step")
            self.vmin, self.vmax, self.step = qnum(self.raw_min), qnum(self.raw_max), qnum(self.raw_step)
        else:
            self.raw_min = self.raw_max = self.raw_step = None
            self.vmin = self.vmax = self.step = None
        self.valid_values: tuple[Num, ...] | None = None
        if isinstance(pol.get("validValues"), list) and pol["validValues"]:
            vals = [qnum(v) for v in pol["validValues"]]
            self.valid_values = tuple(v for v in vals if v is not None)


class Device:
    """One device of a slice. ``uid`` is unique within the model (selector cache key)."""

    __slots__ = ("uid", "name", "slice", "attrs", "caps", "capnames", "consumes", "allow_multi",
                 "binding", "taints", "node_name", "all_nodes", "node_selector", "skip_node_ops",
                 "has_groups", "_view", "raw_capacity", "dkey", "shape")

    def __init__(self, uid: int, sl: Slice, raw: dict[str, Any], interner: dict[Any, Any]) -> None:
        self.uid = uid
        self.name = _s(raw.get("name"))
        self.slice = sl
        self.dkey = (sl.driver, sl.pool, self.name)
        self.attrs: dict[str, Any] = _d(raw.get("attributes"))
        self.raw_capacity: dict[str, Any] = _d(raw.get("capacity"))
        caps: list[tuple[str, str, CapSpec]] = []
        driver = sl.driver
        seen: set[str] = set()
        # A name qualified with the device's own driver wins over the bare spelling of the same id.
        for explicit in (True, False):
            for name, c in self.raw_capacity.items():
                if not isinstance(name, str) or not isinstance(c, dict):
                    continue
                is_expl = name.startswith(driver + "/")
                if is_expl != explicit:
                    continue
                full = name if "/" in name else f"{driver}/{name}"
                if full in seen:
                    continue
                seen.add(full)
                key = ("cap", repr(sorted(c.items(), key=lambda kv: str(kv[0]))))
                spec = interner.get(key)
                if spec is None:
                    spec = interner[key] = CapSpec(c)
                caps.append((_intern(full), _intern(name), spec))
        self.caps = _shared(interner, tuple(caps))
        self.capnames = _shared(interner, frozenset(n for n, _, _ in caps))
        cons: list[tuple[str, tuple[tuple[str, int | Fraction], ...], frozenset[str] | None]] = []
        self.has_groups = False
        for cc in _l(raw.get("consumesCounters")):
            if not isinstance(cc, dict):
                continue
            counters = tuple(sorted((_s(k), _num(qty(_d(v).get("value"))))
                                    for k, v in _d(cc.get("counters")).items()))
            groups_raw = [g for g in _l(cc.get("compatibilityGroups")) if isinstance(g, str)]
            groups = frozenset(_intern(g) for g in groups_raw) if groups_raw else None
            if groups:
                self.has_groups = True
            ckey = ("cons", _s(cc.get("counterSet")), counters, groups)
            entry = interner.get(ckey)
            if entry is None:
                entry = interner[ckey] = ckey[1:]
            cons.append(entry)
        self.consumes = _shared(interner, tuple(cons))
        self.allow_multi = raw.get("allowMultipleAllocations") is True
        self.binding = bool(_l(raw.get("bindingConditions")))
        taints = []
        for t in _l(raw.get("taints")):
            if isinstance(t, dict):
                taints.append((_s(t.get("key")), _s(t.get("value")), _s(t.get("effect"))))
        self.taints = _shared(interner, tuple(taints)) if taints else ()
        self.node_name = _s(raw.get("nodeName"))
        self.all_nodes = raw.get("allNodes") is True
        self.node_selector = parse_node_selector(raw.get("nodeSelector"))
        self.skip_node_ops = sl.skip_node_ops
        self._view: Any = None
        self.shape: Any = None
        """What the search sees of it apart from attributes and node (``classes.py``), on first use."""

    @property
    def driver(self) -> str:
        return self.slice.driver

    @property
    def pool(self) -> str:
        return self.slice.pool

    def key(self) -> tuple[str, str, str]:
        return self.dkey

    def label(self) -> str:
        return f"{self.slice.driver}/{self.slice.pool}/{self.name}"

    def view(self, hide_multi: bool = False) -> Any:
        """The CEL device view, built on first use. ``hide_multi``: as the stable allocator shows
        the device to CEL, without ``allowMultipleAllocations`` (not cached: rare)."""
        if hide_multi and self.allow_multi:
            from webhook.cel import device_view
            return device_view(self.slice.driver, self.attrs, self.raw_capacity, False)
        if self._view is None:
            self._view = _device_view(self.slice.driver, self.attrs, self.raw_capacity, self.allow_multi)
        return self._view

    def matches_node(self, node: NodeInfo) -> bool:
        """Per-device node selection (slices with perDeviceNodeSelection)."""
        if self.node_name:
            return self.node_name == node.name
        if self.all_nodes:
            return True
        if self.node_selector is not None:
            return self.node_selector.matches(node)
        return False


_CAP_VIEWS: dict[tuple[str, int], tuple[dict[str, Any], Any]] = {}
"""(driver, id(raw capacity map)) -> (that map, its CEL view): identical devices of a compacted
state (``state/compact.py``) share one capacity map, so they share its converted form."""


_NO_CAPS: Any = None
"""The view of an empty capacity map (set on first use)."""


def _device_view(driver: str, attrs: dict[str, Any], capacity: dict[str, Any], allow_multi: bool) -> Any:
    """The CEL view of a device: attributes converted when read, the capacity part shared with
    devices of the same capacity map (``cel.view.lazy_device_view``)."""
    from webhook.cel.view import device_view, lazy_device_view
    global _NO_CAPS
    if _NO_CAPS is None:
        _NO_CAPS = device_view(driver, None, None, False)
    hit = _CAP_VIEWS.get((driver, id(capacity))) if capacity else (capacity, _NO_CAPS)
    if hit is None or hit[0] is not capacity:
        if len(_CAP_VIEWS) > 65536:
            _CAP_VIEWS.clear()
        hit = _CAP_VIEWS[(driver, id(capacity))] = (capacity, device_view(driver, None, capacity, False))
    return lazy_device_view(driver, attrs, hit[1], allow_multi)


class Slice:
    """One converted slice. The header (placement, pool, counter sets) is read when the slice is
    converted; its devices only when first used (``devices``): a one-shot allocation converts
    the devices of the nodes it tries, not the whole cluster."""

    __slots__ = ("name", "driver", "pool", "generation", "count", "node_name", "all_nodes",
                 "node_selector", "per_device", "counter_sets", "counter_set_names", "_devices",
                 "has_counters", "mode_known", "skip_node_ops", "attr_values", "_raw", "_first_uid",
                 "_interner", "_has_groups", "_has_binding")

    def __init__(self, raw: dict[str, Any], first_uid: int, interner: dict[Any, Any]) -> None:
        meta = _d(raw.get("metadata"))
        spec = _d(raw.get("spec"))
        pool = _d(spec.get("pool"))
        self.name = _s(meta.get("name"))
        self.driver = _s(spec.get("driver"))
        self.pool = _s(pool.get("name"))
        gen, cnt = pool.get("generation"), pool.get("resourceSliceCount")
        self.generation = gen if isinstance(gen, int) and not isinstance(gen, bool) else 0
        self.count = cnt if isinstance(cnt, int) and not isinstance(cnt, bool) else 0
        self.node_name = _s(spec.get("nodeName"))
        self.all_nodes = spec.get("allNodes") is True
        self.node_selector: NodeSelector | None = parse_node_selector(spec.get("nodeSelector"))
        self.per_device: bool | None = (spec["perDeviceNodeSelection"] is True
                                        if "perDeviceNodeSelection" in spec
                                        and spec["perDeviceNodeSelection"] is not None else None)
        self.skip_node_ops = bool(_l(spec.get("skipNodeOperations")))
        """Its devices skip node operations (only the experimental allocator checks it)."""
        self.counter_sets: dict[str, dict[str, int | Fraction]] = {}
        names: list[str] = []
        for cs in _l(spec.get("sharedCounters")):
            if not isinstance(cs, dict):
                continue
            n = _s(cs.get("name"))
            names.append(n)
            self.counter_sets[n] = {_s(k): _num(qty(_d(v).get("value")))
                                    for k, v in _d(cs.get("counters")).items()}
        self.counter_set_names = _shared(interner, tuple(names))
        self.has_counters = bool(names)
        self._raw: dict[str, Any] | None = raw
        self._first_uid = first_uid
        self._interner: dict[Any, Any] | None = interner
        self._devices: tuple[Device, ...] | None = None
        self._has_groups = self._has_binding = False
        self.attr_values: Any = None
        """Its attributes' values per node, for the node classes (``classes.py``), on first use."""

    @property
    def devices(self) -> tuple[Device, ...]:
        """The devices, converted on first use (once: serving threads share slices)."""
        got = self._devices
        if got is None:
            with _DEVICES_LOCK:
                got = self._devices
                if got is None:
                    raw, interner = self._raw, self._interner
                    assert raw is not None and interner is not None
                    devs = []
                    for i, d in enumerate(_l(_d(raw.get("spec")).get("devices"))):
                        if isinstance(d, dict):
                            devs.append(Device(self._first_uid + i, self, d, interner))
                    self._has_groups = any(d.has_groups for d in devs)
                    self._has_binding = any(d.binding for d in devs)
                    got = self._devices = tuple(devs)
                    self._raw = self._interner = None
        return got

    @property
    def has_groups(self) -> bool:
        return bool(self.devices) and self._has_groups

    @property
    def has_binding(self) -> bool:
        return bool(self.devices) and self._has_binding

    def pool_key(self) -> tuple[str, str]:
        return (self.driver, self.pool)


class NodeInfo:
    """A node: name, labels and ``status.declaredFeatures`` (read from the Node object on first use)."""

    __slots__ = ("name", "_labels", "_features", "_raw")

    def __init__(self, name: str, labels: dict[str, str], features: frozenset[str] = frozenset(),
                 raw: dict[str, Any] | None = None) -> None:
        self.name = name
        self._labels = labels
        self._features = features
        self._raw = raw

    @classmethod
    def of(cls, raw: dict[str, Any]) -> NodeInfo | None:
        """The node of a Node object (None when it has no name)."""
        name = _s(_d(raw.get("metadata")).get("name"))
        return cls(name, {}, frozenset(), raw) if name else None

    def _read(self) -> None:
        raw = self._raw
        if raw is not None:
            meta = _d(raw.get("metadata"))
            self._labels = {k: v for k, v in _d(meta.get("labels")).items()
                            if isinstance(k, str) and isinstance(v, str)}
            self._features = frozenset(f for f in _l(_d(raw.get("status")).get("declaredFeatures"))
                                       if isinstance(f, str))
            self._raw = None

    @property
    def labels(self) -> dict[str, str]:
        if self._raw is not None:
            self._read()
        return self._labels

    @property
    def features(self) -> frozenset[str]:
        """``status.declaredFeatures``."""
        if self._raw is not None:
            self._read()
        return self._features


class DeviceClassInfo:
    __slots__ = ("name", "selectors", "raw")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.name = _s(_d(raw.get("metadata")).get("name"))
        self.selectors: list[Any] = _l(_d(raw.get("spec")).get("selectors"))


class AllocatedState:
    """§3: devices in use (dedicated), shared devices, aggregated consumed capacity."""

    __slots__ = ("dedicated", "shared", "aggregated")

    def __init__(self) -> None:
        self.dedicated: set[tuple[str, str, str]] = set()
        self.shared: set[tuple[str, str, str]] = set()
        self.aggregated: dict[tuple[str, str, str], dict[str, Num]] = {}

    def copy(self) -> AllocatedState:
        c = AllocatedState()
        c.dedicated = set(self.dedicated)
        c.shared = set(self.shared)
        c.aggregated = {k: dict(v) for k, v in self.aggregated.items()}
        return c

    def is_allocated(self, key: tuple[str, str, str]) -> bool:
        return key in self.dedicated or key in self.shared or key in self.aggregated

    def add_results(self, results: list[Any], gates: FeatureGates, claim_driver_caps: Any = None) -> None:
        """Fold allocation results (raw dicts of ``status.allocation.devices.results``) in."""
        cc = gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY)
        for r in results:
            if not isinstance(r, dict) or r.get("adminAccess") is True:
                continue
            key = (_s(r.get("driver")), _s(r.get("pool")), _s(r.get("device")))
            if cc and r.get("shareID"):
                self.shared.add(key)
                consumed = r.get("consumedCapacity")
                if isinstance(consumed, dict):
                    agg = self.aggregated.setdefault(key, {})
                    for name, v in consumed.items():
                        val = qnum(v)
                        if isinstance(name, str) and val is not None:
                            agg[name] = agg.get(name, 0) + val  # keyed as written (§7.3)
            else:
                self.dedicated.add(key)


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
_DEVICES_LOCK = threading.Lock()
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
        for _ in range(len(_l(_d(raw.get("spec")).get("devices")))):
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
        gone = _SLICES.keys() - set(map(id, raws))
        if gone:
            _forget([_SLICES.pop(k)[2] for k in gone])
        gone = _NODES.keys() - set(map(id, nodes))
        for k in gone:
            del _NODES[k]


def _node_of(raw: dict[str, Any]) -> NodeInfo | None:
    """The NodeInfo of a Node object (cached like slices), None when it has no name."""
    rv = _rv(raw)
    hit = _NODES.get(id(raw))
    if hit is not None and hit[0] is raw and hit[1] == rv:
        return hit[2]
    info = NodeInfo.of(raw)
    if info is not None:
        with _SLICES_LOCK:
            _NODES[id(raw)] = (raw, rv, info)
    return info


class _Index:
    """The raw slices of one snapshot by ``spec.nodeName`` ("" for the others), in snapshot order.
    Reading one key per slice, it costs far less than converting them."""

    __slots__ = ("raws", "by_node", "unnamed", "device_nodes")

    def __init__(self, raws: tuple[Any, ...]) -> None:
        self.raws = raws
        by_node: dict[str, list[dict[str, Any]]] = {}
        unnamed: list[dict[str, Any]] = []
        for raw in raws:
            if not isinstance(raw, dict):
                continue
            spec = raw.get("spec")
            name = spec.get("nodeName") if isinstance(spec, dict) else None
            if name and isinstance(name, str):
                got = by_node.get(name)
                if got is None:
                    by_node[name] = [raw]
                else:
                    got.append(raw)
            else:
                unnamed.append(raw)
        self.by_node = by_node
        self.unnamed = unnamed
        # Nodes named only by devices (per-device node selection) of slices without a node.
        self.device_nodes = {_s(d.get("nodeName")) for raw in unnamed
                             for d in _l(_d(raw.get("spec")).get("devices")) if isinstance(d, dict)}
        self.device_nodes.discard("")


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
        self._pd = gates.enabled(Gate.DRA_PARTITIONABLE_DEVICES)
        self._cg = gates.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS)
        raws, node_raws = snapshot.of("ResourceSlice"), snapshot.of("Node")
        _prune(raws, node_raws)
        self._index: _Index = prev._index if prev is not None and prev._index.raws is raws else _Index(raws)
        self._node_raws = node_raws
        if (prev is not None and prev._node_raws is node_raws
                and prev._index.by_node.keys() == self._index.by_node.keys()
                and prev._index.device_nodes == self._index.device_nodes):
            self.nodes: dict[str, NodeInfo] = prev.nodes
        else:
            self.nodes = _nodes(node_raws, self._index)
        self._class_raws = snapshot.of("DeviceClass")
        if prev is not None and prev._class_raws is self._class_raws:
            self.classes: dict[str, DeviceClassInfo] = prev.classes
        else:
            self.classes = {}
            for raw in self._class_raws:
                if isinstance(raw, dict):
                    dc = DeviceClassInfo(raw)
                    self.classes[dc.name] = dc
        self._claim_raws = snapshot.of("ResourceClaim")
        self.allocated: AllocatedState
        self.allocated_claims: dict[tuple[str, str], dict[str, Any]]
        if prev is not None and prev._claim_raws is self._claim_raws:
            self.allocated, self.allocated_claims = prev.allocated, prev.allocated_claims
        else:
            self.allocated = AllocatedState()
            self.allocated_claims = {}
            for raw in self._claim_raws:
                if not isinstance(raw, dict):
                    continue
                alloc = _d(_d(raw.get("status")).get("allocation"))
                results = _l(_d(alloc.get("devices")).get("results"))
                if alloc:
                    meta = _d(raw.get("metadata"))
                    self.allocated_claims[(_s(meta.get("namespace")) or "default", _s(meta.get("name")))] = raw
                    self.allocated.add_results(results, gates)
        self._all: tuple[Slice, ...] | None = None
        self._kept: tuple[Slice, ...] | None = None
        self._by_node: dict[str, list[Slice]] = {}
        self._unnamed: list[Slice] | None = None
        self._by_pool: dict[tuple[str, str], list[Slice]] | None = None
        self._own: dict[int, Slice] = {}
        """The slices this model converted or took from the cache: one Slice per raw dict."""
        self.pools_cache: dict[str, Any] = {}
        """Gathered pools per node name (``pools.pools_for``)."""
        self.class_data: dict[str, Any] = {}
        """Node equivalence classes (``classes.py``), built on first use."""
        self.sel_cache: dict[Any, dict[int, Any]] = _SEL
        self.lock = threading.Lock()

    def node(self, name: str) -> NodeInfo:
        return self.nodes.get(name) or NodeInfo(name, {})

    def _slice(self, raw: dict[str, Any]) -> Slice:
        got = self._own.get(id(raw))
        if got is None:
            got = self._own.setdefault(id(raw), _slice_of(raw, self._index.raws is _LATEST[0]))
        return got

    def _visible(self, sl: Slice) -> bool:
        """§2.1 steps 2-3: gate-driven slice filters hide slices from a node's view; a pool's
        generation and completeness are still judged over all of its slices (``pool_slices``)."""
        if not self._pd and (sl.per_device is not None or sl.has_counters):
            return False
        return self._cg or not sl.has_groups

    @property
    def all_slices(self) -> tuple[Slice, ...]:
        """Every slice of the snapshot, converted (also those the gates hide)."""
        got = self._all
        if got is None:
            got = self._all = tuple(self._slice(raw) for raw in self._index.raws if isinstance(raw, dict))
        return got

    @property
    def slices(self) -> tuple[Slice, ...]:
        """Every slice the gates let the allocator see, converted."""
        got = self._kept
        if got is None:
            got = self._kept = tuple(sl for sl in self.all_slices if self._visible(sl))
        return got

    def node_slices(self, name: str) -> list[Slice]:
        """The visible slices with ``spec.nodeName`` = ``name``, in snapshot order."""
        got = self._by_node.get(name)
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
            got = {}
            for sl in self.all_slices:
                got.setdefault(sl.pool_key(), []).append(sl)
            self._by_pool = got
        return got.get(key, [])


def _nodes(node_raws: tuple[Any, ...], index: _Index) -> dict[str, NodeInfo]:
    """Nodes by name (sorted): the Node objects, plus nodes only known from slices and devices."""
    nodes: dict[str, NodeInfo] = {}
    for raw in node_raws:
        if isinstance(raw, dict):
            info = _node_of(raw)
            if info is not None:
                nodes[info.name] = info
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
