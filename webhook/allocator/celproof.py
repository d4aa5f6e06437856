"""Whether a claim's CEL selectors can raise on any device of the state, each selector chain
evaluated once per distinct device content rather than once per device of every node.

Pure. ``settled.settles`` asks it after a one-shot call's first fit: when no selector can raise
anywhere, no later node can fail the attempt through one, and the search may stop. A search
evaluates a leaf's selectors in order (class ones first) and stops at the first that is false
(``candidate.misfit``); ``quiet`` evaluates that same chain, as the search would, on one device
per *shape*: devices of one shape answer every selector of the chain alike, because

- ``reads`` finds, from the expression's text, every way it can look at ``device``: its driver,
  ``allowMultipleAllocations``, its capacity map (any use) and attributes looked up by literal
  domain and id (``device.attributes["dom"].id`` or ``["id"]``). An expression that uses
  ``device`` or ``attributes`` any other way (a macro over the map, a computed key, an escaped
  literal) has no known reads: then nothing is claimed (the search goes on over every node);
- a shape is the slice's driver, the capacity map (by identity: a compacted state shares equal
  maps), the ``allowMultipleAllocations`` value when a selector names it, the raw value (by
  identity) of every attribute name that can spell a looked-up (domain, id), and, when a device
  spells one id both ways, its attribute names in order (the later spelling wins, ``cel.view``);
  whether the domain exists does not matter (a missing domain reads as an empty map);
- an unsupported attribute value anywhere makes every selector fail on its device, whatever it
  reads: when one exists in the state nothing is claimed.

Devices of every slice are taken, on every node, those the gates hide too: more than any search
reads, which can only make the answer "may raise". Keys are built with C-level maps over each
slice's device list: B6's 500 nodes of 66 devices (290,000 attribute values, each looked at
once for support) take about 50 ms, against about 140 ms for searching every node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, repeat
from typing import Any

from webhook.allocator.claims import BudgetExceeded, Selector
from webhook.allocator.devices import interned_str, view_of
from webhook.allocator.fit import evaluate, hides_multi
from webhook.allocator.model import Model
from webhook.raw import as_dict, as_list

SHAPES_MAX = 2048
"""Distinct device shapes beyond which ``quiet`` stops and claims nothing (a state whose devices
do not repeat would cost as much as the searches it spares)."""

_LIT = r"""(?:"([^"\\]*)"|'([^'\\]*)')"""
_ATTRIBUTE_READ = re.compile(
    rf"""\bdevice\s*\.\s*attributes\s*\[\s*{_LIT}\s*\]\s*"""
    rf"""(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()|\[\s*{_LIT}\s*\])""")
"""``device.attributes["dom"].id`` (not a method call) or ``device.attributes["dom"]["id"]``."""
_OTHER_USE = re.compile(r"\bdevice\b(?!\s*\.\s*(?:capacity|driver|allowMultipleAllocations)\b)")
"""``device`` used otherwise than through the fields whose whole content a shape holds."""


def reads(expr: str) -> frozenset[str] | None:
    """The raw attribute names ``expr`` may read (each looked-up id, bare and qualified with its
    domain: the spellings that can hold it), or None when it may look at devices otherwise than
    the module doc lists."""
    names: set[str] = set()
    rest: list[str] = []
    end = 0
    for m in _ATTRIBUTE_READ.finditer(expr):
        dom = m.group(1) if m.group(1) is not None else m.group(2)
        ident = next(g for g in m.group(3, 4, 5) if g is not None)
        names.update((ident, f"{dom}/{ident}"))
        rest.append(expr[end:m.start()])
        end = m.end()
    rest.append(expr[end:])
    left = " ".join(rest)  # (a space: no two pieces join into one identifier)
    if "attributes" in left or _OTHER_USE.search(left):
        return None
    return frozenset(names)


Shape = tuple[str, dict[str, Any]]
"""One device per shape: (its slice's driver, the raw device)."""


def read_names(chains: list[tuple[Selector, ...]]) -> frozenset[str] | None:
    """The raw attribute names the selectors of ``chains`` may read (``reads``), or None."""
    wanted: set[str] = set()
    for sel in chain.from_iterable(chains):
        got = reads(sel.expr)
        if got is None:
            return None
        wanted |= got
    return frozenset(wanted)


def quiet(chains: list[tuple[Selector, ...]], model: Model, shapes: list[Shape]) -> bool:
    """True when no chain (a leaf's class then request selectors) raises on any device of
    ``shapes`` (those of ``device_shapes`` for the chains' ``read_names``), evaluated as the
    search evaluates it; False when one may, or the deadline passes first."""
    try:
        return not any(_raises(chains, model, driver, dev) for driver, dev in shapes)
    except BudgetExceeded:  # out of time: claim nothing
        return False


def device_shapes(model: Model, names: frozenset[str], multi: bool = True) -> list[Shape] | None:
    """One device per shape of the state (see the module doc) for selectors that read ``names``
    (and ``allowMultipleAllocations`` when ``multi``), every capacity map of the state among them;
    None when there are more than ``SHAPES_MAX`` or an attribute value is unsupported."""
    from webhook.cel.view import all_supported
    by_driver: dict[str, dict[Any, dict[str, Any]]] = {}
    values: dict[int, Any] = {}
    count = 0
    # (the capacity map always: one that does not parse makes every selector fail on its device)
    fields = ("capacity", "allowMultipleAllocations") if multi else ("capacity",)
    for raw in model.raw_slices:
        spec = as_dict(as_dict(raw).get("spec"))
        devs: list[Any] = as_list(spec.get("devices"))
        if not devs:
            continue
        if set(map(type, devs)) != {dict}:
            devs = [d for d in devs if isinstance(d, dict)]
        driver = interned_str(spec.get("driver"))
        attrs: list[Any] = list(map(dict.get, devs, repeat("attributes")))
        if set(map(type, attrs)) != {dict}:
            attrs = [as_dict(a) for a in attrs]
        flat = list(chain.from_iterable(map(dict.values, attrs)))
        values.update(zip(map(id, flat), flat, strict=True))
        keys: Iterable[Any]
        if not names and not multi:  # (the capacity map alone: its identity is the key)
            keys = map(id, map(dict.get, devs, repeat("capacity")))
        else:
            here = sorted(set(chain.from_iterable(attrs)).intersection(names))  # (the others read None)
            # Both spellings of one id on a device: the later one written wins (``cel.view``).
            order = (map(tuple, attrs),) if any(f"{driver}/{n}" in here for n in here) else ()
            keys = zip(*order, *(map(id, map(dict.get, devs, repeat(f))) for f in fields),
                       *(map(id, map(dict.get, attrs, repeat(n))) for n in here), strict=True)
        mine = by_driver.setdefault(driver, {})
        count -= len(mine)
        mine.update(zip(keys, devs, strict=True))
        count += len(mine)
        if count > SHAPES_MAX:
            return None
    try:
        if not all_supported(list(values.values())):
            return None
    except Exception:  # a value the conversion chokes on (``["a"]`` as ints): claim nothing
        return None
    return [(driver, dev) for driver, mine in by_driver.items() for dev in mine.values()]


def _raises(chains: list[tuple[Selector, ...]], model: Model, driver: str, dev: dict[str, Any]) -> bool:
    """Whether some chain raises on ``dev`` (its selectors in order, up to the first false)."""
    attrs, caps = as_dict(dev.get("attributes")), as_dict(dev.get("capacity"))
    multi = dev.get("allowMultipleAllocations") is True
    views: dict[bool, Any] = {}
    for sels in chains:
        for sel in sels:
            hide = hides_multi(model, sel)
            view = views.get(hide)
            if view is None:
                try:
                    view = views[hide] = view_of(driver, attrs, caps, multi, hide)
                except Exception:  # (as above: the search would not get further on it)
                    return True
            got = evaluate(sel, view)
            if isinstance(got, str):
                return True
            if not got:
                break
    return False
