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
from typing import Any

_intern = sys.intern

COMPACT_KINDS = frozenset({"ResourceSlice", "Node"})
"""The kinds stored compacted: the bulk of a cluster's state, and read by the allocator only."""


class Compactor:
    """Shares equal sub-structures between the objects it is given (see the module doc).

    The table of shared values is bounded: past ``max_entries`` it starts afresh (sharing is an
    optimisation; objects compacted before keep what they share)."""

    __slots__ = ("_table", "max_entries")

    def __init__(self, max_entries: int = 1 << 18) -> None:
        self._table: dict[tuple[Any, ...], Any] = {}
        self.max_entries = max_entries

    def object(self, obj: dict[str, Any]) -> dict[str, Any]:
        """An equal copy of ``obj`` (a new top-level dict) sharing sub-structures with earlier ones."""
        if len(self._table) > self.max_entries:
            self._table.clear()
        return {_intern(k) if type(k) is str else k: self._value(v) for k, v in obj.items()}

    def _value(self, v: Any) -> Any:
        t = type(v)
        if t is str:
            return _intern(v)
        if t is dict:
            items = [(_intern(k) if type(k) is str else k, self._value(x)) for k, x in v.items()]
            key: tuple[Any, ...] = (dict, *[(k, *_token(x)) for k, x in items])
            got = self._table.get(key)
            if got is None:
                got = self._table[key] = dict(items)
            return got
        if t is list:
            values = [self._value(x) for x in v]
            key = (list, *[_token(x) for x in values])
            got = self._table.get(key)
            if got is None:
                got = self._table[key] = values
            return got
        return v


def _token(v: Any) -> tuple[Any, Any]:
    """What tells a (shared) value apart: containers by identity, scalars by type and value
    (1, 1.0 and True are equal in Python, not in JSON)."""
    t = type(v)
    return (None, id(v)) if t is dict or t is list else (t, v)


def compact_all(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objs`` with the objects of ``COMPACT_KINDS`` compacted together."""
    c = Compactor(max_entries=sys.maxsize)
    return [c.object(o) if o.get("kind") in COMPACT_KINDS else o for o in objs]
