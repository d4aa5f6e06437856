"""The apiserver's semantic equality for the claims kinds (RC-UPD-1 and the ratcheting of
declarative validation): two JSON values are equal when the Go objects they decode to are
``apiequality.Semantic.DeepEqual``. Pure.

Decoding loses what JSON says twice: ``null`` and an absent member are the same, and so are
``""``, ``0``, ``false``, ``[]`` and ``{}`` for a member that is a plain Go value (a string, a
number, a slice, a map or a struct held by value: ``spec``, ``devices``, ``metadata``). A member
held through a pointer (``exactly``, ``capacity``, ``cel``, ``opaque``, ``adminAccess``,
``matchAttribute``, ...) is only absent when it is ``null`` or missing: ``{}`` and ``""`` there are
set. Quantities compare by value; opaque ``parameters`` and device ``data`` are raw JSON kept as
written (only their absence is normalised).
"""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import FieldError, FieldPath, immutable
from webhook.quantity import try_parse

#: Members that are Go pointers in resource.k8s.io/v1 (set even when their value is a zero value).
POINTERS = frozenset({
    "exactly", "adminAccess", "capacity", "cel", "matchAttribute", "distinctAttribute", "opaque",
    "shareID", "allocation", "nodeSelector", "networkData", "extendedResourceName", "tolerationSeconds",
    "allocationTimestamp",
})
#: Members holding raw JSON (``runtime.RawExtension``).
RAW = frozenset({"parameters", "data"})
#: Maps of quantities (``map[QualifiedName]resource.Quantity``).
QUANTITY_MAPS = frozenset({"requests", "consumedCapacity"})
#: Maps of strings: every entry counts, whatever its value.
STRING_MAPS = frozenset({"labels", "annotations"})
_ZERO: tuple[Any, ...] = ("", 0, False, [], {})


def normal(value: Any) -> Any:
    """``value`` with every member Go would not tell apart from its absence removed."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            n = _member(k, v)
            if n is None or (k not in POINTERS and _is_zero(n)):
                continue
            out[k] = n
        return out
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def _member(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key in RAW:
        return ("raw", value)
    if key in QUANTITY_MAPS and isinstance(value, dict):
        return {k: _quantity(v) for k, v in value.items()}
    if key in STRING_MAPS and isinstance(value, dict):
        return dict(value)
    return normal(value)


def _is_zero(value: Any) -> bool:
    return any(value == z and type(value) is type(z) for z in _ZERO)


def _quantity(value: Any) -> Any:
    q = try_parse(value)
    return ("quantity", q.value) if q is not None else normal(value)


def equal(a: Any, b: Any) -> bool:
    """Go's semantic equality of two decoded values (null is the zero value of a struct)."""
    return bool(_top(a) == _top(b))


def _top(value: Any) -> Any:
    n = normal(value)
    return {} if n is None else n


def validate_spec_immutable(new: Any, old: Any, path: FieldPath) -> list[FieldError]:
    """One Invalid "field is immutable" at ``path`` when the spec changed semantically."""
    if not equal(new, old):
        return [immutable(path, new)]
    return []
