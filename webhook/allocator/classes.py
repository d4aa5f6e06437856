"""Equivalence classes of identical nodes: a node pool's "does not fit" is found once per class.

Pure. Two nodes are in one class when the search cannot tell them apart: their gathered pools,
in search order, hold the same devices (names, drivers, capacity, counters, groups, taints of
the slice and of the DeviceTaintRules that select them, binding conditions, per-device node
selection *as it resolves for that node*) in the same allocated state, they declare the same
optional node operations, and their attributes are the same except for *identifying* attributes
(``identifying``): attributes whose values never repeat on another node, such as GPU UUIDs.
Those are compared by their pattern of equality within the node (first-occurrence numbering),
which is all that constraints and pruning look at. Node, slice and pool names are not part of a
class: no failure reason of a complete, valid pool names them (nodes with an incomplete or
invalid pool get no class and are always searched).

A request may use classes only when no CEL expression it evaluates (class and request
selectors, derived attributes) can read an identifying attribute (``transferable``): otherwise
nodes of one class could answer a selector differently. The class key of a node is built once
per model (per snapshot and gate set); ``engine.allocate`` keeps, per call, the failure of the
first node of each class (``Failures``) and reuses it, renamed, for the others, with the same
step count. Nothing here runs before a node failed: a claim that fits on the first node tried
pays nothing for classes.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from webhook.allocator.claims import Claim
from webhook.allocator.model import Device, Model, NodeInfo, Slice
from webhook.allocator.pools import pools_for
from webhook.allocator.reasons import Reason

_ATTR_USE = re.compile(r"""attributes\s*\[\s*(?:"[^"\\]*"|'[^'\\]*')\s*\]\s*"""
                       r"""(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\])""")
_DEVICE_USE = re.compile(r"\bdevice\b(?!\s*\.\s*(?:attributes|capacity|driver|allowMultipleAllocations)\b)")


_SCALAR_TYPES = (str, int, bool, float)

_ABSTRACTABLE = {("string", str), ("int", int)}
"""(kind, exact Python type) of attribute values that may be identifying: their CEL conversion
never fails (``bool`` is not ``int`` here: the type is compared exactly)."""


def _names(keys: tuple[Any, ...], driver: str) -> tuple[tuple[Any, str], ...]:
    """(key, qualified name) per attribute key: shared by every device with the same keys."""
    got = _NAMES.get((driver, keys))
    if got is None:
        got = tuple((k, sys.intern(k if "/" in k else f"{driver}/{k}") if isinstance(k, str) else "")
                    for k in keys)
        if len(_NAMES) > 4096:
            _NAMES.clear()
        _NAMES[(driver, keys)] = got
    return got


_NAMES: dict[tuple[str, tuple[Any, ...]], tuple[tuple[Any, str], ...]] = {}
_SHARED: dict[Any, Any] = {}
"""One instance of each device shape (bounded): devices of identical nodes share theirs."""


def identifying(model: Model) -> frozenset[str]:
    """Qualified attribute names whose values each occur on one node only (cached per model;
    the per-slice part is cached on the slice, which later models share)."""
    got: frozenset[str] | None = model.class_data.get("identifying")
    if got is not None:
        return got
    owner: dict[tuple[str, str, Any], str] = {}
    shared: set[str] = set()
    for sl in model.slices:
        not_identifying, owned = _attribute_values(sl)
        shared |= not_identifying
        for node, values in owned:
            for qv in values:
                if owner.setdefault(qv, node) != node:
                    shared.add(qv[0])
    got = frozenset(qv[0] for qv in owner if qv[0] not in shared)
    model.class_data["identifying"] = got
    return got


def _attribute_values(sl: Slice) -> tuple[frozenset[str], tuple[tuple[str, frozenset[tuple[str, str, Any]]], ...]]:
    """(attributes of the slice that cannot be identifying, per node: the (name, kind, value)
    of those that could be), computed once per slice."""
    got: Any = sl.attr_values
    if got is None:
        shared: set[str] = set()
        owned: dict[str, set[tuple[str, str, Any]]] = {}
        for d in sl.devices:
            node = sl.node_name or d.node_name
            names = _shape(d)[1]
            if not node:
                shared.update(q for _key, q in names)
                continue
            own = owned.get(node)
            if own is None:
                own = owned[node] = set()
            for (_key, q), raw in zip(names, d.attrs.values(), strict=True):
                if type(raw) is dict and len(raw) == 1:
                    ((kind, v),) = raw.items()
                    if (kind, type(v)) in _ABSTRACTABLE:
                        own.add((q, kind, v))
                        continue
                shared.add(q)
        got = sl.attr_values = (frozenset(shared), tuple((n, frozenset(v)) for n, v in owned.items() if v))
    return got  # type: ignore[no-any-return]


def _shape(dev: Device) -> tuple[tuple[Any, ...], tuple[tuple[Any, str], ...]]:
    """What the search sees of a device apart from allocation, node and attribute values:
    everything but the attributes, and per attribute its (key, qualified name); the values are
    read from ``dev.attrs`` (same order) when a key is built. Devices are immutable and shared
    between models: computed once, and one instance is shared by all devices alike (the same
    device of every node of a pool)."""
    got: Any = dev.shape
    if got is None:
        base = (dev.name, dev.slice.driver, dev.caps, tuple(dev.raw_capacity), dev.consumes, dev.allow_multi,
                dev.binding, dev.taints, dev.skip_node_ops, dev.slice.per_device)
        got = (base, _names(tuple(dev.attrs), dev.slice.driver))
        if len(_SHARED) > 65536:
            _SHARED.clear()
        got = dev.shape = _SHARED.setdefault(got, got)
    return got  # type: ignore[no-any-return]


def _device_key(model: Model, dev: Device, node: NodeInfo, ident: frozenset[str],
                numbers: dict[tuple[str, str, Any], int]) -> tuple[Any, ...]:
    base, names = _shape(dev)
    attrs: list[tuple[Any, ...]] = []
    for (key, q), raw in zip(names, dev.attrs.values(), strict=True):
        # An identifying attribute by its first-occurrence number (its values are all of the
        # kinds ``_ABSTRACTABLE`` lists: any other value makes it shared), any other by its value
        # and the value's exact type (True == 1 == 1.0 in Python, not in CEL).
        if type(raw) is dict and len(raw) == 1:
            ((kind, v),) = raw.items()
            if q in ident:
                attrs.append((key, kind, numbers.setdefault((q, kind, v), len(numbers))))
            elif type(v) in _SCALAR_TYPES:
                attrs.append((key, kind, type(v), v))
            else:
                attrs.append((key, repr(raw)))
        else:
            attrs.append((key, repr(raw)))
    k = dev.dkey
    alloc = model.allocated
    agg = alloc.aggregated.get(k)
    # DeviceTaintRules are per model, not per device (``_shape``): a rule that taints one node's
    # devices and not another's puts the two nodes in different classes.
    return (base, tuple(attrs), bool(dev.slice.per_device) and dev.matches_node(node),
            k in alloc.dedicated, k in alloc.shared, tuple(sorted(agg.items())) if agg else (),
            model.rule_taints(dev))


def _node_key(model: Model, node: NodeInfo) -> tuple[Any, ...] | None:
    pools = pools_for(model, node)
    if any(p.incomplete or p.invalid for p in pools):
        return None
    ident = identifying(model)
    numbers: dict[tuple[str, str, Any], int] = {}
    out: list[Any] = ["DRAOptionalNodeOperations" in node.features]
    for p in pools:
        out.append((p.driver, p.has_binding, tuple((cs, tuple(v.items())) for cs, v in p.counter_sets.items()),
                    tuple(_device_key(model, d, node, ident, numbers) for d in p.candidates),
                    tuple(_device_key(model, d, node, ident, numbers) for sl in p.not_targeting
                          for d in sl.devices)))
    return tuple(out)


def class_of(model: Model, name: str) -> int | None:
    """The class number of node ``name`` in ``model`` (None: no class, always searched)."""
    classes: dict[str, int | None] = model.class_data.setdefault("of", {})
    if name in classes:
        return classes[name]
    numbers: dict[tuple[Any, ...], int] = model.class_data.setdefault("numbers", {})
    key = _node_key(model, model.node(name))
    if key is None:
        got = None
    else:
        with model.lock:  # serving threads share the model: one number per key, never two keys per number
            got = numbers.setdefault(key, len(numbers))
    classes[name] = got
    return got


def node_names(model: Model) -> list[str]:
    """The nodes in name order (cached per model)."""
    got: list[str] | None = model.class_data.get("names")
    if got is None:
        got = model.class_data["names"] = list(model.nodes)
    return got


def run_end(model: Model, i: int) -> int:
    """Where the run of consecutive nodes of one class that starts at ``node_names(model)[i]``
    ends (exclusive); classes are computed only as far as the run goes (cached per model)."""
    ends: dict[int, int] = model.class_data.setdefault("ends", {})
    got = ends.get(i)
    if got is None:
        names = node_names(model)
        cls = class_of(model, names[i])
        got = i + 1
        while cls is not None and got < len(names) and class_of(model, names[got]) == cls:
            got += 1
        ends[i] = got
    return got


def _safe(expr: str, idents: frozenset[str]) -> bool:
    """Whether CEL ``expr`` provably reads no attribute named in ``idents`` (by its id)."""
    if _DEVICE_USE.search(expr):
        return False  # ``device`` used otherwise than through its four fields
    uses = list(_ATTR_USE.finditer(expr))
    if len(uses) != expr.count("attributes"):
        return False  # the attribute map used as a whole, or indexed by a computed key
    return not any((m.group(1) or m.group(2) or m.group(3) or "") in idents for m in uses)


def transferable(model: Model, claims: list[Claim]) -> bool:
    """Whether one node's verdict holds for its whole class for these claims (see module doc)."""
    ids = frozenset(q.rpartition("/")[2] for q in identifying(model))
    for c in claims:
        for r in c.requests:
            for leaf in (r.leaf,) if r.leaf is not None else r.subrequests:
                exprs = [s.expr for s in leaf.class_selectors + leaf.selectors] + list(leaf.derived.values())
                if not all(_safe(e, ids) for e in exprs):
                    return False
    return True


class Failures:
    """The failed searches of one ``allocate`` call, per node class (see the module doc)."""

    __slots__ = ("model", "claims", "by_class", "usable")

    def __init__(self, model: Model, claims: list[Claim]) -> None:
        self.model = model
        self.claims = claims
        self.by_class: dict[int, tuple[list[Reason], int]] = {}
        self.usable: bool | None = None
        """``transferable``, decided at the first failure."""

    def lookup(self, name: str) -> tuple[list[Reason], int] | None:
        """(reasons, steps) of the failed search of node ``name``'s class in this call, if any."""
        if not self.by_class:
            return None
        cls = class_of(self.model, name)
        return None if cls is None else self.by_class.get(cls)

    def record(self, name: str, why: list[Reason], steps: int) -> None:
        """Node ``name`` failed with ``why`` after ``steps`` steps."""
        if self.usable is None:
            self.usable = transferable(self.model, self.claims)
        if not self.usable or any(r.pool or r.detail for r in why):
            return
        cls = class_of(self.model, name)
        if cls is not None:
            self.by_class[cls] = (why, steps)
