"""Claim constraints (docs/allocator.md §6.8): one class per kind, as upstream has one type each.

Pure. A kind says which spec field holds it, whether the stable allocator knows it, how it admits
one more device's value next to the values of the devices already in its scope, and whether its
first value *binds* the later ones (then pruning may count the candidates that share it).
``parse_constraint`` yields one of the kinds or a fatal ``Reason``: an unknown kind never reaches
the search. The running state of one claim's constraints during a search is ``ConstraintState``
(``constraintstate.py``).

Values. The attribute lookup takes the exact fully-qualified key, else the bare id when the
domain is the device's driver. A value is (type, set of values): a scalar is a one-element set.
With DRAListTypeAttributes list values use set semantics (match: the running intersection
stays non-empty; distinct: pairwise disjoint); without it a list is of no type the comparison
knows (``LIST``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from webhook.allocator.model import Device
from webhook.allocator.reasons import Reason, fatal

Value = tuple[str, frozenset[Any]]
"""An attribute value as constraints compare it: (type, set of values); a scalar is a one-element
set. Two more: ``LIST``, a list value while DRAListTypeAttributes is off, and ``EMPTY``, an empty
list (a derived attribute can be one)."""
LIST: Value = ("list", frozenset())
EMPTY: Value = ("empty", frozenset())
UNTYPED = frozenset({LIST[0], EMPTY[0]})
"""The types of ``LIST`` and ``EMPTY``: no comparison knows them."""

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


class Requested(Protocol):
    """What a constraint reads of a request slot: its name and its parent request's name (the
    same for an ``exactly`` request; ``request`` for subrequest ``request/sub``)."""

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str: ...


class AttributeConstraint:
    """What every kind shares: the attribute it compares and the requests it covers."""

    __slots__ = ("attribute", "requests")

    field: ClassVar[str]
    """The ``spec.devices.constraints[]`` field that holds this kind (also its name in reasons)."""
    stable: ClassVar[bool]
    """Whether the stable allocator knows the kind (else it is an "empty constraint" there)."""
    binds: ClassVar[bool]
    """Whether the first value in scope fixes the value of every later device (pruning then
    bounds the devices still obtainable by those that share it)."""

    def __init__(self, attribute: str, requests: frozenset[str]) -> None:
        self.attribute = attribute
        self.requests = requests
        """Request names in scope (a request, or ``request/subrequest``); empty: every request."""

    def applies(self, slot: Requested) -> bool:
        """Whether a device picked for ``slot`` is in the constraint's scope."""
        if not self.requests:
            return True
        return slot.parent in self.requests or slot.name in self.requests

    def admits(self, val: Value, seen: list[Value], lists: bool) -> bool:
        """Whether a device with value ``val`` may join the devices in scope, whose values are
        ``seen`` (in pick order); ``lists``: DRAListTypeAttributes semantics."""
        if val[0] in UNTYPED:
            # No type the comparison knows: the first device in scope may have it (nothing to
            # compare with), no later one; with list semantics an empty list never matches.
            return not seen and not (lists and val is EMPTY)
        return self._admits_typed(val, seen, lists)

    def _admits_typed(self, val: Value, seen: list[Value], lists: bool) -> bool:
        raise NotImplementedError


class MatchAttribute(AttributeConstraint):
    """Every device in scope has the same value (with list semantics: the values of all of them
    share an element)."""

    __slots__ = ()
    field = "matchAttribute"
    stable = True
    binds = True

    def _admits_typed(self, val: Value, seen: list[Value], lists: bool) -> bool:
        for other in seen:
            if other[0] != val[0] or not (other[1] & val[1]):
                return False
        if not seen:
            return True
        if lists:
            running = seen[0][1]
            for other in seen[1:]:
                running = running & other[1]
            return bool(running & val[1])
        return seen[0] == val


class DistinctAttribute(AttributeConstraint):
    """No two devices in scope share a value (with list semantics: their values are pairwise
    disjoint). Compared with every device already in scope."""

    __slots__ = ()
    field = "distinctAttribute"
    stable = False
    binds = False

    def _admits_typed(self, val: Value, seen: list[Value], lists: bool) -> bool:
        return not any(other[0] == val[0] and other[1] & val[1] for other in seen)


Constraint = MatchAttribute | DistinctAttribute
"""A parsed claim constraint: one of the kinds."""
KINDS: tuple[type[MatchAttribute] | type[DistinctAttribute], ...] = (MatchAttribute, DistinctAttribute)
"""Every kind, in the order upstream tests the fields of a constraint."""


def parse_constraint(raw: dict[str, Any], requests: frozenset[str], claim: str, index: int,
                     stable: bool) -> Constraint | Reason:
    """Constraint ``index`` of ``claim`` (``raw``, one entry of ``spec.devices.constraints``)
    covering ``requests``: the first kind whose field it sets, or the fatal reason when it sets
    none the allocator knows (``stable``: only the stable allocator's kinds count)."""
    for kind in KINDS:
        attribute = raw.get(kind.field)
        if isinstance(attribute, str) and attribute and (kind.stable or not stable):
            return kind(attribute, requests)
    return fatal(f"claim {claim}, constraint #{index}: empty constraint (unsupported constraint type?)")
