"""The converted objects of the allocator model: devices, slices, nodes, device classes.

Pure: no I/O, no kubernetes imports. Raw attribute and capacity maps are *referenced* from the
snapshot, not copied; strings are interned, integral counter values are ints, and identical
capacity/counter specs (and their tuples) are shared. A slice's devices are converted on first
use (``Slice.devices``). Odd state (wrong types, unparsable quantities) never raises: it is read
as "absent" or zero, the way the scheduler would skip it. ``model.py`` builds these per snapshot.
"""

from __future__ import annotations

import sys
import threading
from fractions import Fraction
from typing import Any

from webhook.allocator.nodesel import NodeSelector, parse_node_selector
from webhook.allocator.taints import Taint
from webhook.quantity import try_parse
from webhook.raw import as_dict, as_list

_DEVICES_LOCK = threading.Lock()
_intern = sys.intern


def interned_str(v: Any) -> str:
    """An interned string, or "" for anything that is not a string (device fields repeat across
    thousands of slices: one copy each)."""
    return _intern(v) if isinstance(v, str) else ""




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
        pol = as_dict(pol)
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


_BY_ID: dict[tuple[Any, ...], tuple[Any, Any]] = {}
"""(what, id(raw part)) -> (that part, its conversion): the devices of a compacted state
(``state/compact.py``) share one capacity map and one counter-consumption list per node pool
shape, so each is converted once, not once per device (bounded; checked by identity)."""
_BY_ID_MAX = 65536
"""Entries of each identity cache (``_BY_ID``, ``_CAP_VIEWS``) before it starts afresh."""


def _by_id(table: dict[Any, tuple[Any, Any]], key: Any, part: Any) -> Any:
    """The conversion ``table`` holds for ``part`` under ``key`` (its ``id`` in it), or None:
    the part is kept beside it, so a new object at a freed address never takes another's."""
    hit = table.get(key)
    return hit[1] if hit is not None and hit[0] is part else None


def _remember(table: dict[Any, tuple[Any, Any]], key: Any, part: Any, value: Any) -> Any:
    if len(table) > _BY_ID_MAX:
        table.clear()
    table[key] = (part, value)
    return value


_CAP_NAMES: dict[tuple[Any, ...], frozenset[str]] = {}
"""A device's capacities (shared tuples) -> their qualified names (``Device.capnames``; bounded)."""


def _caps(driver: str, raw: dict[str, Any], interner: dict[Any, Any]) -> Any:
    """The capacities as (qualified name, name as written, spec), one shared tuple per content."""
    if not raw:
        return ()
    key = ("caps", driver, id(raw))
    hit: Any = _by_id(_BY_ID, key, raw)
    if hit is not None:
        return hit
    caps: list[tuple[str, str, CapSpec]] = []
    seen: set[str] = set()
    # A name qualified with the device's own driver wins over the bare spelling of the same id.
    for explicit in (True, False):
        for name, c in raw.items():
            if not isinstance(name, str) or not isinstance(c, dict):
                continue
            is_expl = name.startswith(driver + "/")
            if is_expl != explicit:
                continue
            full = name if "/" in name else f"{driver}/{name}"
            if full in seen:
                continue
            seen.add(full)
            ckey = ("cap", repr(sorted(c.items(), key=lambda kv: str(kv[0]))))
            spec = interner.get(ckey)
            if spec is None:
                spec = interner[ckey] = CapSpec(c)
            caps.append((_intern(full), _intern(name), spec))
    got = _shared(interner, tuple(caps))
    _remember(_BY_ID, key, raw, got)
    return got


def _consumes(raw: Any, interner: dict[Any, Any]) -> tuple[Any, bool]:
    """(counter consumption as (counter set, sorted (counter, amount)s, groups or None), whether
    any entry names compatibility groups)."""
    if not isinstance(raw, list) or not raw:
        return (), False
    key = ("cons", id(raw))
    hit: tuple[Any, bool] | None = _by_id(_BY_ID, key, raw)
    if hit is not None:
        return hit
    cons: list[tuple[str, tuple[tuple[str, int | Fraction], ...], frozenset[str] | None]] = []
    has_groups = False
    for cc in raw:
        if not isinstance(cc, dict):
            continue
        counters = tuple(sorted((interned_str(k), _num(qty(as_dict(v).get("value"))))
                                for k, v in as_dict(cc.get("counters")).items()))
        groups_raw = [g for g in as_list(cc.get("compatibilityGroups")) if isinstance(g, str)]
        groups = frozenset(_intern(g) for g in groups_raw) if groups_raw else None
        if groups:
            has_groups = True
        ckey = ("cons", interned_str(cc.get("counterSet")), counters, groups)
        entry = interner.get(ckey)
        if entry is None:
            entry = interner[ckey] = ckey[1:]
        cons.append(entry)
    got = (_shared(interner, tuple(cons)), has_groups)
    _remember(_BY_ID, key, raw, got)
    return got


COMPACT_DEVICES = True
"""A device that sets none of ``Device.RARE`` is a ``Device``, the others a ``RareDevice`` (tests
that set a rare field on any device turn this off)."""


class Device:
    """One device of a slice. ``uid`` is unique within the model (selector cache key).

    Most devices set none of the ``RARE`` fields: they read them from the class (their defaults),
    so each device holds 10 slots (112 bytes with its GC header), not 19 (192); a device that sets
    one is a ``RareDevice`` (``device``). ``capnames`` and ``has_groups`` are derived (shared maps)."""

    __slots__ = ("uid", "name", "slice", "attrs", "caps", "consumes", "_view", "raw_capacity", "dkey", "shape")

    allow_multi: bool = False
    binding: bool = False
    taints: tuple[Taint, ...] = ()
    node_name: str = ""
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    skip_node_ops: bool = False
    RARE = ("allow_multi", "binding", "taints", "node_name", "all_nodes", "node_selector", "skip_node_ops")
    """Fields set by few devices (binding conditions, taints, per-device node selection, ...)."""

    SEARCHED = ("name", "attrs", "caps", "raw_capacity", "consumes", "allow_multi", "binding", "taints",
                "skip_node_ops", "node_name", "all_nodes", "node_selector")
    """The device content the search reads: two nodes are one class only when their devices agree on
    each of these (the node-class key derives from this tuple, ``classes.py``). A field the search
    reads goes here or in ``UNKEYED``; ``tests/allocator/test_node_classes.py`` fails otherwise."""
    UNKEYED = ("uid", "dkey", "slice", "capnames", "has_groups", "_view", "shape")
    """What else the search reads of a device, none of it content two nodes must share: identity
    (``uid``, ``dkey``: cache keys, and the allocated state the key holds per device), the slice (its
    keyed fields are ``classes.SLICE_KEYED``), and what is derived from ``SEARCHED`` fields or cached."""

    def __init__(self, uid: int, sl: Slice, raw: dict[str, Any], interner: dict[Any, Any],
                 consumes: tuple[Any, ...] = ()) -> None:
        self.uid = uid
        self.name = interned_str(raw.get("name"))
        self.slice = sl
        self.dkey = (sl.driver, sl.pool, self.name)
        self.attrs: dict[str, Any] = as_dict(raw.get("attributes"))
        self.raw_capacity: dict[str, Any] = as_dict(raw.get("capacity"))
        self.caps = _caps(sl.driver, self.raw_capacity, interner)
        self.consumes = consumes
        self._view: Any = None
        self.shape: Any = None
        """What the search sees of it apart from attributes and node (``classes.py``), on first use."""

    @property
    def capnames(self) -> frozenset[str]:
        """The qualified names of its capacities."""
        got = _CAP_NAMES.get(self.caps)
        if got is None:
            if len(_CAP_NAMES) > _BY_ID_MAX:
                _CAP_NAMES.clear()
            got = _CAP_NAMES[self.caps] = frozenset(n for n, _, _ in self.caps)
        return got

    @property
    def has_groups(self) -> bool:
        """Whether a counter consumption names compatibility groups."""
        return any(c[2] for c in self.consumes)

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
            return view_of(self.slice.driver, self.attrs, self.raw_capacity, self.allow_multi, True)
        if self._view is None:
            self._view = _device_view(self.slice.driver, self.attrs, self.raw_capacity, self.allow_multi)
        return self._view

    def matches_node(self, node: NodeInfo) -> bool:
        """Per-device node selection (slices with perDeviceNodeSelection)."""
        return placed_on(self, node) is True


class RareDevice(Device):
    """A device that sets one of ``Device.RARE`` at least: those fields are its own."""

    __slots__ = Device.RARE

    def __init__(self, uid: int, sl: Slice, raw: dict[str, Any], interner: dict[Any, Any],
                 consumes: tuple[Any, ...], rare: tuple[Any, ...]) -> None:
        super().__init__(uid, sl, raw, interner, consumes)
        (self.allow_multi, self.binding, self.taints, self.node_name, self.all_nodes, self.node_selector,
         self.skip_node_ops) = rare


_DEFAULTS = tuple(getattr(Device, f) for f in Device.RARE)


def device(uid: int, sl: Slice, raw: dict[str, Any], interner: dict[Any, Any]) -> Device:
    """The converted device ``raw`` of slice ``sl``: a ``Device``, or a ``RareDevice`` when it sets
    a rare field. Absent fields (most devices set none of these) are answered without a call."""
    consumes, _ = _consumes(raw.get("consumesCounters"), interner)
    binding = raw.get("bindingConditions")
    # The slice's own taints (DeviceTaintRules join them per model: ``Model.taints``); no
    # timeAdded, which no allocation reads, so identical devices stay identical (``classes``).
    taints_raw = raw.get("taints")
    taints = [Taint(interned_str(t.get("key")), interned_str(t.get("value")), interned_str(t.get("effect")))
              for t in as_list(taints_raw) if isinstance(t, dict)] if taints_raw else None
    node_name = raw.get("nodeName")
    selector = raw.get("nodeSelector")
    rare = (raw.get("allowMultipleAllocations") is True, bool(binding) and isinstance(binding, list),
            _shared(interner, tuple(taints)) if taints else (),
            _intern(node_name) if isinstance(node_name, str) else "",
            raw.get("allNodes") is True, parse_node_selector(selector) if selector is not None else None,
            sl.skip_node_ops)
    if COMPACT_DEVICES and rare == _DEFAULTS:
        return Device(uid, sl, raw, interner, consumes)
    return RareDevice(uid, sl, raw, interner, consumes, rare)


def placed_on(what: Slice | Device, node: NodeInfo) -> bool | None:
    """Whether the node name, ``allNodes`` or node selector of a slice or device takes ``node``;
    None when it sets none of them."""
    if what.node_name:
        return what.node_name == node.name
    if what.all_nodes:
        return True
    if what.node_selector is not None:
        return what.node_selector.matches(node)
    return None


_CAP_VIEWS: dict[Any, tuple[Any, Any]] = {}
"""(driver, id(raw capacity map)) -> (that map, its CEL view): identical devices of a compacted
state (``state/compact.py``) share one capacity map, so they share its converted form."""


_NO_CAPS: Any = None
"""The view of an empty capacity map (set on first use)."""


def view_of(driver: str, attrs: dict[str, Any], capacity: dict[str, Any], allow_multi: bool,
            hide_multi: bool = False) -> Any:
    """The CEL view of a device given by its raw parts, as ``Device.view`` builds it (not cached)."""
    if hide_multi and allow_multi:
        from webhook.cel import device_view
        return device_view(driver, attrs, capacity, False)
    return _device_view(driver, attrs, capacity, allow_multi)


def _device_view(driver: str, attrs: dict[str, Any], capacity: dict[str, Any], allow_multi: bool) -> Any:
    """The CEL view of a device: attributes converted when read, the capacity part shared with
    devices of the same capacity map (``cel.view.lazy_device_view``)."""
    from webhook.cel.view import device_view, lazy_device_view
    global _NO_CAPS
    if _NO_CAPS is None:
        _NO_CAPS = device_view(driver, None, None, False)
    caps = _NO_CAPS
    if capacity:
        key = (driver, id(capacity))
        caps = _by_id(_CAP_VIEWS, key, capacity)
        if caps is None:
            caps = _remember(_CAP_VIEWS, key, capacity, device_view(driver, None, capacity, False))
    return lazy_device_view(driver, attrs, caps, allow_multi)


class Slice:
    """One converted slice. The header (placement, pool, counter sets) is read when the slice is
    converted; its devices only when first used (``devices``): a one-shot allocation converts
    the devices of the nodes it tries, not the whole cluster."""

    __slots__ = ("name", "driver", "pool", "generation", "count", "node_name", "all_nodes",
                 "node_selector", "per_device", "counter_sets", "counter_set_names", "_devices",
                 "has_counters", "mode_known", "skip_node_ops", "attr_values", "_raw", "_first_uid",
                 "_interner", "_has_groups", "_has_binding")

    def __init__(self, raw: dict[str, Any], first_uid: int, interner: dict[Any, Any]) -> None:
        meta = as_dict(raw.get("metadata"))
        spec = as_dict(raw.get("spec"))
        pool = as_dict(spec.get("pool"))
        self.name = interned_str(meta.get("name"))
        self.driver = interned_str(spec.get("driver"))
        self.pool = interned_str(pool.get("name"))
        gen, cnt = pool.get("generation"), pool.get("resourceSliceCount")
        self.generation = gen if isinstance(gen, int) and not isinstance(gen, bool) else 0
        self.count = cnt if isinstance(cnt, int) and not isinstance(cnt, bool) else 0
        self.node_name = interned_str(spec.get("nodeName"))
        self.all_nodes = spec.get("allNodes") is True
        self.node_selector: NodeSelector | None = parse_node_selector(spec.get("nodeSelector"))
        self.per_device: bool | None = (spec["perDeviceNodeSelection"] is True
                                        if "perDeviceNodeSelection" in spec
                                        and spec["perDeviceNodeSelection"] is not None else None)
        self.skip_node_ops = bool(as_list(spec.get("skipNodeOperations")))
        """Its devices skip node operations (only the experimental allocator checks it)."""
        self.counter_sets: dict[str, dict[str, int | Fraction]] = {}
        names: list[str] = []
        for cs in as_list(spec.get("sharedCounters")):
            if not isinstance(cs, dict):
                continue
            n = interned_str(cs.get("name"))
            names.append(n)
            counters = {interned_str(k): _num(qty(as_dict(v).get("value")))
                        for k, v in as_dict(cs.get("counters")).items()}
            # Read only (pools copy what they change): one map per distinct content.
            self.counter_sets[n] = interner.setdefault(("counters", *counters.items()), counters)
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
                    for i, d in enumerate(as_list(as_dict(raw.get("spec")).get("devices"))):
                        if isinstance(d, dict):
                            devs.append(device(self._first_uid + i, self, d, interner))
                    self._has_groups = any(c[2] for d in devs for c in d.consumes)
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
        name = interned_str(as_dict(raw.get("metadata")).get("name"))
        return cls(name, {}, frozenset(), raw) if name else None

    def _read(self) -> None:
        raw = self._raw
        if raw is not None:
            meta = as_dict(raw.get("metadata"))
            self._labels = {k: v for k, v in as_dict(meta.get("labels")).items()
                            if isinstance(k, str) and isinstance(v, str)}
            self._features = frozenset(f for f in as_list(as_dict(raw.get("status")).get("declaredFeatures"))
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
    __slots__ = ("name", "selectors", "raw", "compiled")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.name = interned_str(as_dict(raw.get("metadata")).get("name"))
        self.selectors: list[Any] = as_list(as_dict(raw.get("spec")).get("selectors"))
        self.compiled: Any = None
        """Its selectors as the search takes them, on first use (``claims.class_selectors``): the
        same for every request of the class, as they name no claim."""
