"""Device attributes of a ResourceSlice (RS-ATTR-*): one typed value each, list values behind
DRAListTypeAttributes, semantic-version strings, and the per-slice count of attribute values.

Pure; every function takes raw JSON and returns field errors, never raises.
"""

from __future__ import annotations

import re
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, invalid, too_long
from webhook.rules.names import byte_len
from webhook.rules.shape import as_bool, as_list, as_object, as_str, type_error

ATTRIBUTE_VALUES_MAX = 48
ATTRIBUTE_VALUE_MAX_LEN = 64
LIST_KINDS = ("bools", "ints", "strings", "versions")
SCALAR_KINDS = ("bool", "int", "string", "version")

_NUM = r"(0|[1-9][0-9]*)"
_PRE = r"(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER_RE = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?\Z")


_LIST_KIND_SET = frozenset(LIST_KINDS)


def count_attribute_values(attrs: Any) -> int:
    """Scalars count 1, a list counts its length (upstream ``numEntriesDeviceAttribute``)."""
    if not isinstance(attrs, dict):
        return 0
    n = 0
    for a in attrs.values():
        if isinstance(a, dict) and _LIST_KIND_SET.isdisjoint(a):
            n += 1
            continue
        lists = [a.get(k) for k in LIST_KINDS] if isinstance(a, dict) else []
        sizes = [len(v) for v in lists if isinstance(v, list)]
        n += sum(sizes) if any(sizes) else 1
    return n


def has_list_attribute(dev: dict[str, Any]) -> bool:
    attrs = dev.get("attributes")
    if not isinstance(attrs, dict):
        return False
    return any(isinstance(a, dict) and not _LIST_KIND_SET.isdisjoint(a)
               and any(a.get(k) is not None for k in LIST_KINDS) for a in attrs.values())


def attribute_is_plainly_valid(attr: Any) -> bool:
    """Fast path for the common attribute: exactly one valid scalar value (no paths built)."""
    if type(attr) is not dict or len(attr) != 1:
        return False
    (kind, v), = attr.items()
    if kind == "string":
        return type(v) is str and byte_len(v) <= ATTRIBUTE_VALUE_MAX_LEN
    if kind == "int":
        return type(v) is int
    if kind == "bool":
        return type(v) is bool
    if kind == "version":
        return type(v) is str and byte_len(v) <= ATTRIBUTE_VALUE_MAX_LEN and SEMVER_RE.match(v) is not None
    return False


def validate_attribute(attr: Any, path: FieldPath) -> list[FieldError]:
    if attribute_is_plainly_valid(attr):
        return []
    errs: list[FieldError] = []
    a = as_object(attr, path, errs)
    if a is None:
        return errs or [invalid(path, "", "exactly one value must be specified")]
    n = 0
    if a.get("bool") is not None:
        n += 1
        as_bool(a["bool"], path.child("bool"), errs)
    if a.get("int") is not None:
        n += 1
        v = a["int"]
        if isinstance(v, bool) or not isinstance(v, int):
            errs.append(type_error(path.child("int"), v, "integer"))
    if a.get("string") is not None:
        n += 1
        s = as_str(a["string"], path.child("string"), errs)
        if s is not None:
            errs.extend(_string_value(s, path.child("string")))
    if a.get("version") is not None:
        n += 1
        s = as_str(a["version"], path.child("version"), errs)
        if s is not None:
            errs.extend(_version_value(s, path.child("version")))
    for kind in LIST_KINDS:
        if a.get(kind) is None:
            continue
        n += 1
        lp = path.child(kind)
        items = as_list(a[kind], lp, errs)
        if items is None:
            continue
        if not items:
            errs.append(invalid(lp, [], "must not be empty if specified"))
        for j, item in enumerate(items):
            errs.extend(_list_item(kind, item, lp.index(j)))
    if n == 0:
        errs.append(invalid(path, "", "exactly one value must be specified"))
    elif n > 1:
        errs.append(invalid(path, a, "exactly one value must be specified"))
    return errs


def _list_item(kind: str, item: Any, path: FieldPath) -> list[FieldError]:
    if kind == "bools":
        return [] if isinstance(item, bool) else [type_error(path, item, "boolean")]
    if kind == "ints":
        ok = isinstance(item, int) and not isinstance(item, bool)
        return [] if ok else [type_error(path, item, "integer")]
    if not isinstance(item, str):
        return [type_error(path, item, "string")]
    return _string_value(item, path) if kind == "strings" else _version_value(item, path)


def _string_value(s: str, path: FieldPath) -> list[FieldError]:
    return [too_long(path, ATTRIBUTE_VALUE_MAX_LEN)] if byte_len(s) > ATTRIBUTE_VALUE_MAX_LEN else []


def _version_value(s: str, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    if not SEMVER_RE.match(s):
        errs.append(invalid(path, s, "must be a string compatible with semver.org spec 2.0.0"))
    errs.extend(_string_value(s, path))
    return errs


# --- taints --------------------------------------------------------------------------------
