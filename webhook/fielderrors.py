"""Field paths and field errors, rendered the way the Kubernetes apiserver renders them.

Pure and stdlib-only. A rule returns ``list[FieldError]``; the admission layer turns the list
into an ``Invalid`` status with one cause per error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as member
from enum import StrEnum
from typing import Any


class ErrorType(StrEnum):
    """Kubernetes ``field.ErrorType``; the value is the CauseType string of a status cause."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    DUPLICATE = "FieldValueDuplicate"
    TOO_MANY = "FieldValueTooMany"
    TOO_LONG = "FieldValueTooLong"
    NOT_FOUND = "FieldValueNotFound"
    TYPE_INVALID = "FieldValueTypeInvalid"
    INTERNAL = "InternalError"

    @property
    def label(self) -> str:
        """The human label the apiserver puts in front of the value ("Invalid value")."""
        return _LABELS[self]


_LABELS = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.INTERNAL: "Internal error",
}

# Error types whose rendering never shows the offending value (as upstream's ErrorBody).
_NO_VALUE = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}

OMIT = object()
"""Pass as a value to leave it out of the message (upstream's ``field.OmitValueType``)."""


class FieldPath:
    """An immutable path such as ``spec.devices[0].capacity[bandwidth]``.

    Parts are field names (``str``), list indexes (``int``) or map keys (``Key``). A plain
    slotted class rather than a frozen dataclass: rules build thousands of paths per large
    object and the dataclass constructor is several times slower.
    """

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[str | int | Key, ...] = ()) -> None:
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldPath) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __repr__(self) -> str:
        return f"FieldPath({str(self)!r})"

    @classmethod
    def root(cls, *names: str) -> FieldPath:
        return cls(names)

    def child(self, *names: str) -> FieldPath:
        return FieldPath(self.parts + names)

    def index(self, i: int) -> FieldPath:
        return FieldPath(self.parts + (i,))

    def key(self, k: str) -> FieldPath:
        return FieldPath(self.parts + (Key(k),))

    def __str__(self) -> str:
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, int):
                out.append(f"[{p}]")
            elif isinstance(p, Key):
                out.append(f"[{p.name}]")
            else:
                out.append(("." if out else "") + p)
        return "".join(out)

    def pointer(self) -> str:
        """RFC 6901 JSON pointer to the same place (``/spec/devices/0/capacity/bandwidth``)."""
        return "".join("/" + escape_pointer(p.name if isinstance(p, Key) else str(p)) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Key:
    """A map key inside a FieldPath (rendered in brackets, unquoted)."""

    name: str


def escape_pointer(token: str) -> str:
    """Escape one JSON-pointer reference token (``~`` → ``~0``, ``/`` → ``~1``)."""
    return token.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field error: where, what kind, the bad value and a detail text.

    Two facts ride along without taking part in equality or rendering: whether the error comes
    from upstream's declarative checks (the API's ``+k8s:`` tags) rather than its handwritten
    ones, and the declarative errors a merge left out because this one has their field and type.
    A v1 answer never shows them; an older version's does (``webhook.versions``), because
    upstream reports declarative errors at that version's paths.
    """

    type: ErrorType
    field: str
    value: Any = OMIT
    detail: str = ""
    declarative: bool = member(default=False, compare=False, repr=False)
    shadows: tuple[FieldError, ...] = member(default=(), compare=False, repr=False)

    def body(self) -> str:
        """The message without the field, as a status cause carries it (upstream ``ErrorBody``)."""
        s = self.type.label
        if self.type not in _NO_VALUE and self.value is not OMIT:
            s += ": " + render_value(self.value)
        if self.detail:
            s += ": " + self.detail
        return s

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        """The ``status.details.causes[]`` entry for this error."""
        return {"reason": self.type.value, "message": self.body(), "field": self.field}


def render_value(value: Any) -> str:
    """Render a bad value like Go's ``%q``/``%v`` printing in field errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if hasattr(value, "__k8s_str__"):
        return str(value.__k8s_str__())
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):  # pragma: no cover - defensive
        return repr(value)


# --- constructors, named after upstream's field.Required(...) etc. -------------------------


def required(path: FieldPath | str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, str(path), OMIT, detail)


def invalid(path: FieldPath | str, value: Any, detail: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, str(path), value, detail)


def forbidden(path: FieldPath | str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, str(path), OMIT, detail)


def internal(path: FieldPath | str, detail: str) -> FieldError:
    """Upstream's ``field.InternalError``: the check itself failed (e.g. a CEL program that
    compiles but cannot be instantiated)."""
    return FieldError(ErrorType.INTERNAL, str(path), OMIT, detail)


def duplicate(path: FieldPath | str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, str(path), value)


def not_found(path: FieldPath | str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, str(path), value)


def type_invalid(path: FieldPath | str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, str(path), value, detail)


def not_supported(path: FieldPath | str, value: Any, supported: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, str(path), value, detail)


def too_many(path: FieldPath | str, actual: int, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {limit} items")


def too_long(path: FieldPath | str, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, str(path), OMIT, f"must have at most {limit} bytes")


def immutable(path: FieldPath | str, value: Any) -> FieldError:
    return invalid(path, value, "field is immutable")


# --- list helpers ------------------------------------------------------------------------


def each(items: Iterable[Any], path: FieldPath,
         fn: Callable[[Any, FieldPath], list[FieldError]]) -> list[FieldError]:
    """Run ``fn(item, path[i])`` over a list and concatenate the errors."""
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs.extend(fn(item, path.index(i)))
    return errs


def duplicates_by(items: Sequence[Any], path: FieldPath, key: Callable[[Any], Hashable],
                  sub: str | None = None, shown: Callable[[Any], Any] | None = None) -> list[FieldError]:
    """Duplicate errors on every *later* element whose key was seen before (upstream order).

    ``sub`` names a sub-field to point at (``name``); by default the element itself.
    Unhashable or ``None`` keys are skipped (other rules report them).
    """
    seen: set[Hashable] = set()
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        try:
            k = key(item)
            hash(k)
        except (TypeError, AttributeError):
            continue
        if k is None:
            continue
        if k in seen:
            p = path.index(i)
            errs.append(duplicate(p.child(sub) if sub else p, shown(item) if shown else k))
        seen.add(k)
    return errs


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """Join errors as upstream's ``ErrorList.ToAggregate().Error()`` does."""
    texts: list[str] = []
    for e in errors:
        t = str(e)
        if t not in texts:
            texts.append(t)
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"
