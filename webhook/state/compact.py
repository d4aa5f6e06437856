"""Compact storage of cluster objects: equal sub-structures shared, strings interned.

A cluster's ResourceSlices repeat themselves: every device of a node pool carries the same
attribute values, capacity maps and counter specs, and every node the same labels. Decoded
JSON gives each its own dicts (a 500-node state takes 7x its JSON size as dicts); ``Compactor``
returns an equal object whose equal sub-dicts and sub-lists are one shared instance and whose
strings are interned (1.3x). The top-level dict stays a new one per object (the store sets
``kind`` on it, and the allocator keys its caches on its identity).

The result is only safe because snapshot objects are never mutated (``ClusterSnapshot``).
Pure; not thread-safe (each store uses its own, under its lock).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from webhook.state.pods import trim_pod

_intern = sys.intern

COMPACT_KINDS = frozenset({"ResourceSlice", "Node", "Pod"})
"""The kinds stored compacted: the bulk of a cluster's state, read by the allocator and the
placement only (the replicas of one workload share their trimmed specs)."""
TRIMMED: Mapping[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = MappingProxyType({"Pod": trim_pod})
"""Kinds the state keeps only a part of (None: the object is not kept at all)."""


def trimmed(kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    """What the state keeps of ``obj`` (itself for most kinds; None: nothing)."""
    trim = TRIMMED.get(kind)
    return obj if trim is None else trim(obj)


class Compactor:
    """Shares equal sub-structures between the objects it is given (see the module doc).

    A structure is remembered from its second sighting on: the first only sets a bit in a
    fixed bitmap of key hashes (``_seen``), so the unique parts of a state (a device whose
    attributes hold its own UUID) cost the table no key. A hash collision only remembers a
    structure early. The last ``RECENT`` to ``2 * RECENT`` first sightings are kept too (``_recent``):
    a structure seen again soon after (the parent UUID of a GPU's partitions, one device after
    the other) shares the first instance, not a second one. Keys are flat tuples (``_key``). The
    table of shared values is bounded: past ``max_entries`` it starts afresh (sharing is an
    optimisation; objects compacted before keep what they share)."""

    __slots__ = ("_table", "_seen", "_sightings", "max_entries", "_recent", "_older")

    def __init__(self, max_entries: int = 1 << 18) -> None:
        self._table: dict[tuple[Any, ...], Any] = {}
        self._seen = bytearray(_SEEN_BYTES)
        self._sightings = 0
        self.max_entries = max_entries
        self._recent: dict[tuple[Any, ...], Any] = {}
        self._older: dict[tuple[Any, ...], Any] = {}

    def object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An equal copy of ``obj`` (a new top-level dict) sharing sub-structures with earlier ones."""
        if len(self._table) > self.max_entries:
            self._table.clear()
            self._seen = bytearray(_SEEN_BYTES)
        return {_intern(k) if type(k) is str else k: self._value(v)[0] for k, v in obj.items()}

    def _value(self, v: Any) -> tuple[Any, bool]:
        """(the shared value, whether it is new). A container holding a new value cannot equal
        an earlier one, so it is not looked up nor remembered; a structure nesting ``d`` levels
        of containers is shared from about its ``2d + 2``-th occurrence on."""
        t = type(v)
        if t is str:
            return _intern(v), False
        if t is dict:
            items = []
            fresh = False
            for k, x in v.items():
                x, new = self._value(x)
                fresh = fresh or new
                items.append((_intern(k) if type(k) is str else k, x))
            if fresh:
                return dict(items), True
            key: tuple[Any, ...] = (dict, *[tok for k, x in items for tok in (k, _token(x))])
        elif t is list:
            values = []
            fresh = False
            for x in v:
                x, new = self._value(x)
                fresh = fresh or new
                values.append(x)
            if fresh:
                return values, True
            key = (list, *[_token(x) for x in values])
        else:
            return v, False
        got = self._table.get(key)
        if got is not None:
            return got, False
        got = self._recent.get(key)
        if got is None:
            got = self._older.get(key)
        if got is not None:  # seen a moment ago: its first instance is the one shared
            self._table[key] = got
            return got, False
        made = dict(items) if t is dict else values
        h = hash(key) & _SEEN_MASK
        byte, bit = h >> 3, 1 << (h & 7)
        if self._seen[byte] & bit:
            self._table[key] = made
        else:
            self._seen[byte] |= bit
            self._recent[key] = made
            if len(self._recent) >= RECENT:
                self._older, self._recent = self._recent, {}
            self._sightings += 1
            if self._sightings > _SEEN_MAX:  # mostly set bits would remember everything
                self._seen, self._sightings = bytearray(_SEEN_BYTES), 0
        return made, True


RECENT = 256
"""First sightings ``Compactor`` keeps whole (twice this at most), to share a structure that
repeats within a few objects from its first instance."""
_SEEN_BITS = 1 << 20
"""Bits of ``Compactor._seen`` (128 KiB)."""
_SEEN_BYTES = _SEEN_BITS >> 3
_SEEN_MASK = _SEEN_BITS - 1
_SEEN_MAX = _SEEN_BITS >> 3
"""First sightings before the bitmap starts afresh (at most an eighth of its bits set, so a
unique structure is remembered by a collision about one time in ten; a repeated one whose
first sighting was forgotten is remembered from its next)."""


def _token(v: Any) -> Any:
    """What tells a (shared) value apart in a key: a container by its identity (a bare int:
    no other token is one), a string as itself, other scalars with their type (1, 1.0 and True
    are equal in Python, not in JSON)."""
    t = type(v)
    if t is str or v is None:
        return v
    return id(v) if t is dict or t is list else (t, v)


def compact_all(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objs`` with the objects of ``COMPACT_KINDS`` compacted together."""
    c = Compactor(max_entries=sys.maxsize)
    return [c.object(o) if o.get("kind") in COMPACT_KINDS else o for o in objs]
