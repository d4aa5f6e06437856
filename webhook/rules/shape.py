"""The one vocabulary for the JSON shape of an object: type guards, "is set", gate-strip wording.

Every rule reads decoded JSON as the apiserver's Go decoder would: ``null`` is the zero value
(absent pointer, empty string, nil list), and a value of the wrong JSON type becomes one field
error, always ``FieldValueTypeInvalid`` with the same wording (``must be an object``, ``must
be an array``, ...) and the value summarised (``<object>``, ``<array>``), never an exception.
Pure and stdlib-only apart from our own field errors.
"""

from __future__ import annotations

from typing import Any, Literal

from webhook.fielderrors import FieldError, FieldPath, type_invalid

JsonType = Literal["object", "array", "string", "boolean", "integer"]

_MUST_BE: dict[str, str] = {
    "object": "must be an object",
    "array": "must be an array",
    "string": "must be a string",
    "boolean": "must be a boolean",
    "integer": "must be an integer",
}


def shown(value: Any) -> Any:
    """The value to print in a type error: containers are summarised, never dumped."""
    if isinstance(value, dict):
        return "<object>"
    if isinstance(value, list):
        return "<array>"
    return value


def type_error(path: FieldPath | str, value: Any, want: JsonType) -> FieldError:
    """The one error for a value of the wrong JSON type."""
    return type_invalid(path, shown(value), _MUST_BE[want])


def as_object(value: Any, path: FieldPath, errs: list[FieldError]) -> dict[str, Any] | None:
    """A JSON object, or None when null/absent; a wrong type adds an error and gives None."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    errs.append(type_error(path, value, "object"))
    return None


def as_list(value: Any, path: FieldPath, errs: list[FieldError]) -> list[Any] | None:
    """A JSON array, or None when null/absent; a wrong type adds an error and gives None."""
    if value is None:
        return None
    if isinstance(value, list):
        return value
    errs.append(type_error(path, value, "array"))
    return None


def as_str(value: Any, path: FieldPath, errs: list[FieldError]) -> str | None:
    """A string, or None when null/absent (Go reads both as ""); wrong type → error + None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    errs.append(type_error(path, value, "string"))
    return None


def as_bool(value: Any, path: FieldPath, errs: list[FieldError]) -> bool | None:
    """A boolean, or None when null/absent; wrong type → error + None."""
    if value is None or isinstance(value, bool):
        return value
    errs.append(type_error(path, value, "boolean"))
    return None


def as_int(value: Any, path: FieldPath, errs: list[FieldError]) -> int | None:
    """An integer (JSON numbers with an integral value count), None when null/absent."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    errs.append(type_error(path, value, "integer"))
    return None


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else ``{}`` (for reads whose type errors are reported elsewhere)."""
    return value if isinstance(value, dict) else {}


def is_set(value: Any, *, map_field: bool = False) -> bool:
    """Go's "is this optional member set" after decoding: ``null`` and ``[]`` are unset (nil
    pointer, empty slice); ``{}`` is set (a non-nil struct pointer) unless ``map_field`` (a Go
    map, where ``len(m) == 0`` counts as unset)."""
    if value is None or (isinstance(value, list) and not value):
        return False
    return not (map_field and isinstance(value, dict) and not value)


def shorten(text: str, limit: int = 40) -> str:
    """A long name inside a warning, cut in the middle of nothing: the first ``limit - 3``
    characters and ``...`` (warnings name objects; 253-character names must not crowd them)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def strip_warning(gate: str, removed: str) -> str:
    """The one wording of a gate-strip warning: ``<gate> is off: removed <what>``."""
    return f"{gate} is off: removed {removed}"


def by_name(items: Any) -> dict[str, dict[str, Any]]:
    """The objects of a JSON list by their string ``name`` (anything else in the list is left
    out: a stored object may hold any JSON, and a list or object is no dict key)."""
    if not isinstance(items, list):
        return {}
    return {o["name"]: o for o in items if isinstance(o, dict) and isinstance(o.get("name"), str)}


def by_name_get(index: dict[str, dict[str, Any]], item: dict[str, Any]) -> dict[str, Any] | None:
    """The entry of ``index`` (from ``by_name``) with the same string ``name`` as ``item``."""
    name = item.get("name")
    return index.get(name) if isinstance(name, str) else None
