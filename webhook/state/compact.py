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
        return {_intern(k) if type(k) is str else k: self._value(v)[0] for k, v in obj.items()}

    def _value(self, v: Any) -> tuple[Any, bool]:
        """(the shared value, whether it is new). A container holding a new value cannot equal
        an earlier one, so it is not looked up nor remembered: the table holds no key for the
        unique parts of a state (a device with a UUID), at the price of sharing a structure
        nesting ``d`` levels of containers only from its ``d + 2``-th occurrence on."""
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
            key: tuple[Any, ...] = (dict, *[(k, *_token(x)) for k, x in items])
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
        got = self._table[key] = dict(items) if t is dict else values
        return got, True


def _token(v: Any) -> tuple[Any, Any]:
    """What tells a (shared) value apart: containers by identity, scalars by type and value
    (1, 1.0 and True are equal in Python, not in JSON)."""
    t = type(v)
    return (None, id(v)) if t is dict or t is list else (t, v)


def compact_all(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objs`` with the objects of ``COMPACT_KINDS`` compacted together."""
    c = Compactor(max_entries=sys.maxsize)
    return [c.object(o) if o.get("kind") in COMPACT_KINDS else o for o in objs]
