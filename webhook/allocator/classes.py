"""Equivalence classes of identical nodes: a node pool's "fits" or "does not fit" is found once per class.

Pure. Two nodes are in one class when the search cannot tell them apart: their gathered pools,
in search order, hold the same devices (the fields ``Device.SEARCHED`` names: names, capacity,
counters, groups, taints, binding conditions, per-device node selection *as it resolves for that
node*; and their drivers; plus the taints of the DeviceTaintRules that select them) in the same
allocated state, they declare the same optional node operations, and their attributes are the same
except for *identifying* attributes
(``identifying``): attributes whose values never repeat on another node, such as GPU UUIDs.
Those are compared by their pattern of equality within the node (first-occurrence numbering),
which is all that constraints and pruning look at. Node, slice and pool names are not part of a
class: no failure reason of a complete, valid pool names them (nodes with an incomplete or
invalid pool get no class and are always searched).

A request may use classes only when no CEL expression it evaluates (class and request
selectors, derived attributes) can read an identifying attribute (``transferable``): otherwise
nodes of one class could answer a selector differently. The class key of a node is built once
per model (per snapshot and gate set); ``engine.allocate`` keeps, per call, the outcome of the
first node of each class (``heldclasses.Failures``): a failure is reused, renamed, for the others, with the
same step count; a fit tells that the others fit too, with no fatal error (``engine`` filters
every node, as the scheduler does, and only needs to know that). Devices earlier pods took
(``held``) change the view of the nodes whose pools hold them: those nodes get a class of that
view (``heldclasses.py``), the others keep their class.
"""

from __future__ import annotations

import operator
import re
import sys
from typing import Any

from webhook.allocator.claims import Claim
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo, Slice
from webhook.allocator.persist import Layered, runs_after
from webhook.allocator.pools import pools_for

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


def _inherit(model: Model) -> None:
    """Take the node classes of the model this one follows by one changed slice of one node
    (``Model._carry`` left ``class_data["from"]``): when the slice's attribute values are those it
    had, the identifying attributes are the same and every other node keeps its class key, so
    their class numbers stay (copied, with the numbering); the changed node is keyed again.
    Threads wait on the model's lock while one of them does it."""
    if "from" not in model.class_data:
        return
    with model.lock:
        got = model.class_data.get("from")
        if got is None:
            return
        prev, node, old, new = got
        ident = prev.get("identifying")
        same = old is not None and new is not None and _attribute_values(old) == _attribute_values(new)
        if ident is not None and same:
            model.class_data["identifying"] = ident
            if "numbers" in prev and "of" in prev:
                model.class_data["numbers"] = prev["numbers"].child()
                of = prev["of"].child()
                was = of.pop(node, None)
                model.class_data["of"] = of  # whole before it is seen: class_of reads it without the lock
                split = runs_after(prev["ends"], prev["names"], node) if "names" in prev and "ends" in prev else None
                if split is not None:  # the cached runs (``run_end``), those through ``node`` pending a check
                    j, model.class_data["ends"], held = split
                    if held and was is not None:
                        model.class_data["ends_if"] = (j, was, held)
            if "names" in prev:  # the same list: its name -> position index holds too (``runs``)
                model.class_data["names"] = prev["names"]
                if "index" in prev:
                    model.class_data["index"] = prev["index"]
        del model.class_data["from"]


def identifying(model: Model) -> frozenset[str]:
    """Qualified attribute names whose values each occur on one node only (cached per model;
    the per-slice part is cached on the slice, which later models share)."""
    _inherit(model)
    got: frozenset[str] | None = model.class_data.get("identifying")
    if got is not None:
        return got
    owner: dict[tuple[str, str, Any], str] = {}
    shared: set[str] = set()
    for sl in model.slices:
        not_identifying, owned = _attribute_values(sl)
        shared |= not_identifying
        for node, values in owned:
            flat = iter(values)
            for qv in zip(flat, flat, flat, strict=True):
                if owner.setdefault(qv, node) != node:
                    shared.add(qv[0])
    got = frozenset(qv[0] for qv in owner if qv[0] not in shared)
    model.class_data["identifying"] = got
    return got


def _attribute_values(sl: Slice) -> tuple[frozenset[str], tuple[tuple[str, tuple[Any, ...]], ...]]:
    """(attributes of the slice that cannot be identifying, per node: the name, kind and value of
    each that could be, flat: ``(name, kind, value, ...)``, each once, in device order), computed
    once per slice and kept with it (flat: every slice of the state holds one)."""
    got: Any = sl.attr_values
    if got is None:
        shared: set[str] = set()
        owned: dict[str, dict[tuple[str, str, Any], None]] = {}
        for d in sl.devices:
            node = sl.node_name or d.node_name
            names = _shape(d)[1]
            if not node:
                shared.update(q for _key, q in names)
                continue
            own = owned.get(node)
            if own is None:
                own = owned[node] = {}
            for (_key, q), raw in zip(names, d.attrs.values(), strict=True):
                if type(raw) is dict and len(raw) == 1:
                    ((kind, v),) = raw.items()
                    if (kind, type(v)) in _ABSTRACTABLE:
                        own[(q, kind, v)] = None
                        continue
                shared.add(q)
        fixed = frozenset(shared)
        got = sl.attr_values = (_SHARED.setdefault(fixed, fixed),
                                tuple((n, tuple(x for qv in v for x in qv)) for n, v in owned.items() if v))
    return got  # type: ignore[no-any-return]


SLICE_KEYED = ("driver", "per_device")
"""The fields of a device's slice the search reads by value (its pool and name it reads too, but
no reason of a complete, valid pool names them)."""
_PER_NODE = ("attrs", "node_name", "all_nodes", "node_selector")
"""``Device.SEARCHED`` fields the key takes per node (``_device_key``): the attribute values (an
identifying one by its pattern within the node), and the node selection as it resolves there."""
_BY_NAMES = "raw_capacity"
"""The ``Device.SEARCHED`` field the key takes by its keys: the capacity map's names (requests look
names up; the values are in ``caps``)."""
_BY_VALUE = operator.attrgetter(*(f for f in Device.SEARCHED if f not in _PER_NODE and f != _BY_NAMES))
"""The other ``Device.SEARCHED`` fields: the key holds their values (``_shape``)."""
_NAMED = operator.attrgetter(_BY_NAMES)
_SLICE = operator.attrgetter(*SLICE_KEYED)


def _shape(dev: Device) -> tuple[tuple[Any, ...], tuple[tuple[Any, str], ...]]:
    """What the search sees of a device apart from allocation, node and attribute values: the
    ``Device.SEARCHED`` fields the key takes by value or by names, the ``SLICE_KEYED`` fields of its
    slice, and per attribute its (key, qualified name); the values are read from ``dev.attrs``
    (same order) when a key is built. Devices are immutable and shared between models: computed
    once, and one instance is shared by all devices alike (the same device of every node of a pool)."""
    got: Any = dev.shape
    if got is None:
        sl = dev.slice
        base = (*_BY_VALUE(dev), tuple(_NAMED(dev)), *_SLICE(sl))
        got = (base, _names(tuple(dev.attrs), sl.driver))
        if len(_SHARED) > 65536:
            _SHARED.clear()
        got = dev.shape = _SHARED.setdefault(got, got)
    return got  # type: ignore[no-any-return]


def _device_key(model: Model, dev: Device, node: NodeInfo, ident: frozenset[str],
                numbers: dict[tuple[str, str, Any], int], alloc: AllocatedState) -> tuple[Any, ...]:
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
    agg = alloc.aggregated.get(k)
    # DeviceTaintRules are per model, not per device (``_shape``): a rule that taints one node's
    # devices and not another's puts the two nodes in different classes.
    return (base, tuple(attrs), bool(dev.slice.per_device) and dev.matches_node(node),
            k in alloc.dedicated, k in alloc.shared, tuple(sorted(agg.items())) if agg else (),
            model.rule_taints(dev))


def _node_key(model: Model, node: NodeInfo, alloc: AllocatedState) -> tuple[Any, ...] | None:
    pools = pools_for(model, node)
    if any(p.incomplete or p.invalid for p in pools):
        return None
    ident = identifying(model)
    numbers: dict[tuple[str, str, Any], int] = {}
    out: list[Any] = ["DRAOptionalNodeOperations" in node.features]
    for p in pools:
        out.append((p.driver, p.has_binding, tuple((cs, tuple(v.items())) for cs, v in p.counter_sets.items()),
                    tuple(_device_key(model, d, node, ident, numbers, alloc) for d in p.candidates),
                    tuple(_device_key(model, d, node, ident, numbers, alloc) for sl in p.not_targeting
                          for d in sl.devices)))
    return tuple(out)


def class_number(model: Model, key: tuple[Any, ...] | None) -> int | None:
    """The class number of a node key (one number per key for the model's lifetime)."""
    if key is None:
        return None
    numbers: Layered[tuple[Any, ...], int] = model.class_data.setdefault("numbers", Layered())
    with model.lock:  # serving threads share the model: one number per key, never two keys per number
        return numbers.setdefault(key, len(numbers))


def class_of(model: Model, name: str) -> int | None:
    """The class number of node ``name`` in ``model`` (None: no class, always searched)."""
    known: Layered[str, int | None] | None = model.class_data.get("of")
    if known is not None:  # the hot path (``engine`` asks per node)
        got = known.get(name, known)
        if got is not known:
            return got  # type: ignore[no-any-return]
    _inherit(model)
    classes: Layered[str, int | None] = model.class_data.setdefault("of", Layered())
    if name in classes:
        return classes[name]
    got = classes[name] = class_number(model, _node_key(model, model.node(name), model.allocated))
    return got


def node_names(model: Model) -> list[str]:
    """The nodes in name order (cached per model)."""
    _inherit(model)
    got: list[str] | None = model.class_data.get("names")
    if got is None:
        got = model.class_data["names"] = list(model.nodes)
    return got


def run_end(model: Model, i: int) -> int:
    """Where the run of consecutive nodes of one class that starts at ``node_names(model)[i]``
    ends (exclusive); classes are computed only as far as the run goes (cached per model)."""
    _inherit(model)
    ends: dict[int, int] = model.class_data.setdefault("ends", {})
    got = ends.get(i)
    if got is None and "ends_if" in model.class_data:
        got = _held_run(model, i)
    if got is None:
        names = node_names(model)
        cls = class_of(model, names[i])
        got = i + 1
        while cls is not None and got < len(names) and class_of(model, names[got]) == cls:
            got += 1
        ends[i] = got
    return got


def _held_run(model: Model, i: int) -> int | None:
    """The end of the run from ``i`` that ``_inherit`` carried over pending a check: that its
    changed node kept its class (then every run pending on it holds, else none does)."""
    got = model.class_data.get("ends_if")
    if got is None or i not in got[2]:
        return None
    j, was, held = got
    if class_of(model, node_names(model)[j]) == was:
        model.class_data["ends"].update(held)
        model.class_data.pop("ends_if", None)
        return held[i]  # type: ignore[no-any-return]
    model.class_data.pop("ends_if", None)
    return None


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


def nodes_of_pools(model: Model) -> dict[tuple[str, str], list[str]]:
    """(driver, pool) -> the nodes whose gathered pools include it (cached per model)."""
    _inherit(model)
    got: dict[tuple[str, str], list[str]] | None = model.class_data.get("pool_nodes")
    if got is None:
        got = {}
        for name in node_names(model):
            for p in pools_for(model, model.node(name)):
                got.setdefault((p.driver, p.name), []).append(name)
        model.class_data["pool_nodes"] = got
    return got
