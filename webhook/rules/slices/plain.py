"""Devices that certainly pass every per-device rule, told apart cheaply (a sound shortcut).

A slice repeats itself: 64 or 128 devices with the same attribute names, the same capacity map
and the same counter names, and almost every slice a driver publishes is valid. The
per-device rules (``devices.validate_device`` by hand, ``declarative.device`` from the tags)
build field paths and error lists for every field they visit; :meth:`PlainDevices.ok` answers
the one question the common case needs, "would both of them report nothing?", without building
any. It is conservative: any device it is not sure of (a field it does not model, a value it
would have to look at closely) is left to the full rules, which then report exactly what they
always did. So it can only ever skip work whose answer is "no errors".

What it accepts: a device object with only ``name``, ``attributes``, ``capacity``,
``consumesCounters`` and ``allowMultipleAllocations``, and no per-device node selection in the
slice; a DNS-label name; attributes each with exactly one valid scalar value under a valid
qualified name (so each counts one value); at most 32 attributes and capacities together;
consumptions as ``declarative`` calls plain (≤ 2, distinct DNS-label counter sets, DNS-label
counter names, ≤ 2 distinct DNS-label compatibility groups) with ≤ 32 counters of parseable
values; and a capacity map the full capacity rules find nothing in.

Capacity maps are the one part worth remembering: their request policies need quantity
arithmetic, and all devices of a kind share one map. The verdict of each distinct map is kept
for the one slice being validated (``PlainDevices`` lives for one call), keyed by the map's
JSON encoding plus the two flags the rules read (``allowMultipleAllocations``, the
DRAFractionalCapacityRange gate), and a hit also compares the map with the one judged (``==``):
the encoding alone would equate a tuple with a list or NaN with null, which JSON cannot hold but
a Python caller could. Only JSON values and what YAML's safe loader gives (dates, sets, bytes:
refused by the encoder, so never remembered) reach the rules.
"""

from __future__ import annotations

from typing import Any

import orjson

from webhook.fielderrors import FieldPath
from webhook.quantity import try_parse
from webhook.rules.names import byte_len
from webhook.rules.slices.attributes import ATTRIBUTE_VALUE_MAX_LEN, attribute_is_plainly_valid
from webhook.rules.slices.capacity import validate_capacity_map
from webhook.rules.slices.common import KEY_TRUNCATE, is_label, qualified_name_ok
from webhook.rules.slices.declarative import plain_consumptions
from webhook.rules.slices.devices import ATTRS_AND_CAPACITY_MAX, COUNTERS_PER_CONSUMPTION_MAX

#: The device fields the shortcut models; a device with any other key (set or null) is left
#: to the full rules.
PLAIN_KEYS = frozenset({"name", "attributes", "capacity", "consumesCounters", "allowMultipleAllocations"})
_ENCODE = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_NOWHERE = FieldPath()


class PlainDevices:
    """The shortcut for the devices of one slice (``per_device``: the slice sets
    ``perDeviceNodeSelection``; ``fractional``: DRAFractionalCapacityRange is on)."""

    __slots__ = ("per_device", "fractional", "_capacity", "_names", "_versions")

    def __init__(self, per_device: bool, fractional: bool) -> None:
        self.per_device = per_device
        self.fractional = fractional
        self._capacity: dict[tuple[bytes, bool], tuple[Any, bool]] = {}
        self._names: set[str] = set()
        """Attribute names found to be valid qualified names."""
        self._versions: set[str] = set()
        """``version`` values found to be valid (semantic versions of at most 64 bytes)."""

    def ok(self, dev: Any) -> bool:
        """True only when neither the handwritten nor the declarative device rules would report
        anything for ``dev`` (at any path, new or changed on UPDATE alike)."""
        if type(dev) is not dict or self.per_device or not PLAIN_KEYS.issuperset(dev):
            return False
        if not is_label(dev.get("name")):
            return False
        attrs, capacity = dev.get("attributes"), dev.get("capacity")
        n = 0
        if attrs is not None:
            if type(attrs) is not dict or not self._attributes_ok(attrs):
                return False
            n = len(attrs)
        allow = dev.get("allowMultipleAllocations")
        if allow is not None and type(allow) is not bool:
            return False
        if capacity is not None:
            if type(capacity) is not dict:
                return False
            n += len(capacity)
            if capacity and not self._capacity_ok(capacity, allow is True):
                return False
        if n > ATTRS_AND_CAPACITY_MAX:
            return False
        cc = dev.get("consumesCounters")
        return cc is None or (type(cc) is list and (not cc or _consumptions_ok(cc)))

    def _attributes_ok(self, attrs: dict[Any, Any]) -> bool:
        """Every attribute has exactly one valid scalar member and a valid qualified name
        (``attribute_is_plainly_valid`` and ``validate_qualified_name``, inlined: this runs for
        every attribute of every device; names and versions already found good are remembered)."""
        names, versions = self._names, self._versions
        for key, attr in attrs.items():
            if key not in names:
                if not (type(key) is str and len(key) <= 2 * KEY_TRUNCATE and qualified_name_ok(key)):
                    return False
                names.add(key)
            if type(attr) is not dict or len(attr) != 1:
                return False
            ((kind, v),) = attr.items()
            if kind == "string":
                if type(v) is not str or len(v) > ATTRIBUTE_VALUE_MAX_LEN or not (
                        v.isascii() or byte_len(v) <= ATTRIBUTE_VALUE_MAX_LEN):
                    return False
            elif kind == "int":
                if type(v) is not int:
                    return False
            elif kind == "bool":
                if type(v) is not bool:
                    return False
            elif kind == "version":
                if type(v) is not str:
                    return False
                if v not in versions:
                    if not attribute_is_plainly_valid(attr):
                        return False
                    versions.add(v)
            else:
                return False
        return True

    def _capacity_ok(self, capacity: dict[str, Any], allow_multiple: bool) -> bool:
        try:
            key = (orjson.dumps(capacity, option=_ENCODE), allow_multiple)
        except TypeError:  # not plain JSON data: judge it every time
            return not validate_capacity_map(capacity, _NOWHERE, allow_multiple, self.fractional)
        seen = self._capacity.get(key)
        if seen is not None and seen[0] == capacity:
            return seen[1]
        verdict = not validate_capacity_map(capacity, _NOWHERE, allow_multiple, self.fractional)
        self._capacity[key] = (capacity, verdict)
        return verdict


def _consumptions_ok(entries: list[Any]) -> bool:
    """A non-empty ``consumesCounters`` neither rule set reports anything in."""
    if not plain_consumptions(entries):
        return False
    for e in entries:
        counters = e["counters"]
        if len(counters) > COUNTERS_PER_CONSUMPTION_MAX:
            return False
        for c in counters.values():
            if type(c) is not dict or try_parse(c.get("value")) is None:
                return False
    return True
