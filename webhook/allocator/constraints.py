"""Claim constraints (allocator.md §6.8): matchAttribute and distinctAttribute, per claim.

Pure. Attribute lookup: the exact fully-qualified key, else the bare id when the domain is the
device's driver. Values compare by (type, value); with DRAListTypeAttributes list values use
set semantics (match: running intersection stays non-empty; distinct: pairwise disjoint).
distinctAttribute compares against every device already in scope (S2 semantics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.allocator.claims import Claim, Constraint, Leaf
from webhook.allocator.derived import EMPTY, LIST, Value, derived_value
from webhook.allocator.model import Device
from webhook.allocator.reasons import Code, Reason
from webhook.gates import FeatureGates, Gate

_SCALARS = ("int", "bool", "string", "version")
_LISTS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}




def _norm(kind: str, v: Any) -> Any:
    # Versions compare as written: upstream compares the strings (build metadata counts).
    if kind == "int" and isinstance(v, bool):
        return ("bool", v)
    return v


def attribute_value(dev: Device, name: str, lists: bool) -> Value | None:
    """The typed value of attribute ``name`` (fully qualified) on ``dev``, or None when absent."""
    raw = dev.attrs.get(name)
    if raw is None:
        dom, sep, ident = name.partition("/")
        if sep and dom == dev.slice.driver:
            raw = dev.attrs.get(ident)
        elif not sep:
            raw = dev.attrs.get(name)
    if not isinstance(raw, dict):
        return None
    for k in _SCALARS:
        if raw.get(k) is not None:
            try:
                return (k, frozenset([_norm(k, raw[k])]))
            except TypeError:
                return None
    for k, t in _LISTS.items():
        if isinstance(raw.get(k), list):
            if not lists:
                return LIST  # present, of a type the scalar comparison does not know
            try:
                return (t, frozenset(_norm(t, v) for v in raw[k]))
            except TypeError:
                return None
    return None


class ConstraintState:
    """Values seen so far for each constraint of one claim; every change is undoable."""

    def __init__(self, claim: Claim, gates: FeatureGates) -> None:
        self.constraints: tuple[Constraint, ...] = claim.constraints
        self.lists = gates.enabled(Gate.DRA_LIST_TYPE_ATTRIBUTES)
        self.derived_cache: dict[tuple[str, int], Value] = {}
        self.seen: list[list[Value]] = [[] for _ in claim.constraints]

    def add(self, leaf: Leaf, dev: Device, undo: list[Callable[[], None]]) -> Reason | None:
        """Admit ``dev`` for ``leaf`` under every constraint in scope, or say which one fails."""
        pushed: list[list[Value]] = []
        for c, seen in zip(self.constraints, self.seen, strict=True):
            if not c.applies(leaf):
                continue
            val = self._value(leaf, dev, c.attribute)
            why: Code | None = None
            if val is None:
                why = Code.CONSTRAINT_MISSING
            elif val[0] in ("list", "empty"):
                # No type the comparison knows: the first device in scope may have it (nothing
                # to compare with), no later one; with list semantics an empty list never matches.
                if seen or (self.lists and val is EMPTY):
                    why = Code.CONSTRAINT_UNSATISFIED
            elif c.kind == "matchAttribute":
                for other in seen:
                    if other[0] != val[0] or not (other[1] & val[1]):
                        why = Code.CONSTRAINT_UNSATISFIED
                        break
                if why is None and seen and self.lists:
                    running = seen[0][1]
                    for other in seen[1:]:
                        running = running & other[1]
                    if not running & val[1]:
                        why = Code.CONSTRAINT_UNSATISFIED
                if why is None and seen and not self.lists and seen[0] != val:
                    why = Code.CONSTRAINT_UNSATISFIED
            else:
                for other in seen:
                    if other[0] == val[0] and other[1] & val[1]:
                        why = Code.CONSTRAINT_UNSATISFIED
                        break
            if why is not None:
                for s in pushed:
                    s.pop()
                return Reason(why, constraint=c.kind, attribute=c.attribute, device=dev.name)
            assert val is not None  # a missing value always sets ``why``
            seen.append(val)
            pushed.append(seen)
        if pushed:
            def _pop() -> None:
                for s in pushed:
                    s.pop()
            undo.append(_pop)
        return None

    def _value(self, leaf: Leaf, dev: Device, attribute: str) -> Value | None:
        """The device's value for ``attribute``: the request's derived attribute if it defines one
        (computed now; an error is fatal, raised as AllocError), else the device's own."""
        expr = leaf.derived.get(attribute) if leaf.derived else None
        if expr is None:
            return attribute_value(dev, attribute, self.lists)
        return derived_value(expr, attribute, dev, self.lists, self.derived_cache)
