"""The constraints of one claim during a search: the values of the devices in each one's scope.

Pure. ``add`` looks a device's value up (the request's derived attribute if it defines one, else
the device's own: ``constraints.attribute_value``), asks each kind whether it admits it, and
pushes the values on the caller's undo list (search invariant 1); a rejection changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from webhook.allocator.claims import Leaf
from webhook.allocator.constraints import Constraint, Value, attribute_value
from webhook.allocator.derived import derived_value
from webhook.allocator.model import Device
from webhook.allocator.reasons import Code, Reason


class ConstraintState:
    """Values seen so far for each constraint of one claim; every change is undoable."""

    __slots__ = ("constraints", "lists", "derived_cache", "seen")

    def __init__(self, constraints: tuple[Constraint, ...], lists: bool) -> None:
        self.constraints = constraints
        self.lists = lists
        """DRAListTypeAttributes: list values compare as sets."""
        self.derived_cache: dict[tuple[str, int], Value] = {}
        self.seen: list[list[Value]] = [[] for _ in constraints]
        """Per constraint, the values of the devices picked in its scope, in pick order."""

    def add(self, leaf: Leaf, dev: Device, undo: list[Callable[[], None]]) -> Reason | None:
        """Admit ``dev`` for ``leaf`` under every constraint in scope, or say which one fails."""
        pushed: list[list[Value]] = []
        for c, seen in zip(self.constraints, self.seen, strict=True):
            if not c.applies(leaf):
                continue
            val = self.value(leaf, dev, c.attribute)
            why = (Code.CONSTRAINT_MISSING if val is None
                   else None if c.admits(val, seen, self.lists) else Code.CONSTRAINT_UNSATISFIED)
            if why is not None:
                for s in pushed:
                    s.pop()
                return Reason(why, constraint=c.field, attribute=c.attribute, device=dev.name)
            assert val is not None  # a missing value always sets ``why``
            seen.append(val)
            pushed.append(seen)
        if pushed:
            def _pop() -> None:
                for s in pushed:
                    s.pop()
            undo.append(_pop)
        return None

    def value(self, leaf: Leaf, dev: Device, attribute: str) -> Value | None:
        """The device's value for ``attribute``: the request's derived attribute if it defines one
        (computed now; an error is fatal, raised as AllocError), else the device's own."""
        expr = leaf.derived.get(attribute) if leaf.derived else None
        if expr is None:
            return attribute_value(dev, attribute, self.lists)
        return derived_value(expr, attribute, dev, self.lists, self.derived_cache)

    def bound(self, leaf: Leaf) -> list[tuple[str, Value]]:
        """(attribute, value) of each binding constraint over ``leaf`` that has a value already
        (a device's own attribute, scalar semantics only): every later device must share it."""
        if self.lists:
            return []
        return [(c.attribute, seen[0]) for c, seen in zip(self.constraints, self.seen, strict=True)
                if c.binds and seen and c.applies(leaf) and c.attribute not in leaf.derived]

    def binding_next(self, leaf: Leaf) -> str | None:
        """The attribute of the first binding constraint over ``leaf`` that the next pick binds
        (no value yet; a device's own attribute, scalar semantics only), if any."""
        if self.lists:
            return None
        for c, seen in zip(self.constraints, self.seen, strict=True):
            if c.binds and not seen and c.applies(leaf) and c.attribute not in leaf.derived:
                return c.attribute
        return None
