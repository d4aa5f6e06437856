"""Small checks the claim, template and class rules share: names, references, opaque config, CEL.

Pure; every function takes raw JSON values and returns field errors, never raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from webhook.cel import MAX_EXPRESSION_LENGTH, compile_result
from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.rules.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    validate_csi_driver_name,
)
from webhook.rules.shape import as_list, as_object, type_error
from webhook.rules.slices import common as slice_common

REQUESTS_MAX = 32
SELECTORS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
FIRST_AVAILABLE_MAX = 8
TOLERATIONS_MAX = 16
OPAQUE_PARAMETERS_MAX = 10 * 1024
REQUEST_REF_MSG = ("must be the name of a request in the claim or the name of a request and a "
                   "subrequest separated by '/'")


def within(items: list[Any], limit: int, path: FieldPath, errs: list[FieldError]) -> bool:
    """Upstream list-size short circuit: one TooMany and nothing inside the list."""
    if len(items) > limit:
        errs.append(too_many(path, len(items), limit))
        return False
    return True


def duplicates(keys: Iterable[Any], path: FieldPath) -> list[FieldError]:
    """Duplicate on every later element whose (hashable, non-None) key was seen before."""
    seen: set[Any] = set()
    errs: list[FieldError] = []
    for i, k in enumerate(keys):
        if k is None or not isinstance(k, (str, int, tuple)):
            continue
        if k in seen:
            errs.append(duplicate(path.index(i), k))
        seen.add(k)
    return errs


def is_str(value: Any) -> bool:
    return isinstance(value, str)


def validate_label_msgs(value: Any, path: FieldPath, check: Any) -> list[FieldError]:
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return [invalid(path, value, m) for m in check(value)]


def validate_request_name(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-REQ-3: a request or sub-request name is a DNS label (empty is Invalid, not Required)."""
    return validate_label_msgs(value, path, is_dns1123_label)


def validate_device_class_name(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-EX-1: required; a DNS subdomain."""
    if value is None or value == "":
        return [required(path)]
    return validate_label_msgs(value, path, is_dns1123_subdomain)


def validate_device_name(value: Any, path: FieldPath) -> list[FieldError]:
    if value is None or value == "":
        return [required(path)]
    return validate_label_msgs(value, path, is_dns1123_label)


def validate_pool_name(value: Any, path: FieldPath) -> list[FieldError]:
    """RS-POOL rules: required, ≤ 253, every '/'-separated part a DNS subdomain."""
    if value is None or value == "":
        return [required(path)]
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    if len(value) > slice_common.POOL_NAME_MAX:
        return [too_long(path, slice_common.POOL_NAME_MAX)]
    errs: list[FieldError] = []
    for part in value.split("/"):
        errs.extend(invalid(path, value, m) for m in is_dns1123_subdomain(part))
    return errs


class RequestNames:
    """The names a constraint/config/result may reference: ``req`` or ``req/sub``."""

    def __init__(self, requests: Any) -> None:
        self.subs: dict[str, set[str]] = {}
        for r in requests if isinstance(requests, list) else []:
            if not isinstance(r, dict) or not isinstance(r.get("name"), str):
                continue
            fa = r.get("firstAvailable")
            names = {s.get("name") for s in fa if isinstance(s, dict) and isinstance(s.get("name"), str)} \
                if isinstance(fa, list) else set()
            self.subs.setdefault(r["name"], set()).update(names)  # type: ignore[arg-type]

    def has(self, ref: str) -> bool:
        parts = ref.split("/")
        if len(parts) == 1:
            return parts[0] in self.subs
        if len(parts) == 2:
            return parts[1] in self.subs.get(parts[0], set())
        return False


def validate_request_ref(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    """RC-CON-2: ``req`` or ``req/sub`` naming an existing request."""
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    parts = value.split("/")
    if len(parts) > 2:
        return [invalid(path, value, REQUEST_REF_MSG)]
    errs: list[FieldError] = []
    for part in parts:
        errs.extend(invalid(path, part, m) for m in is_dns1123_label(part))
    if not names.has(value):
        errs.append(invalid(path, value, REQUEST_REF_MSG))
    return errs


def validate_request_refs(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    errs: list[FieldError] = []
    refs = as_list(value, path, errs) or []
    if not within(refs, REQUESTS_MAX, path, errs):
        return errs
    for i, ref in enumerate(refs):
        errs.extend(validate_request_ref(ref, path.index(i), names))
    errs.extend(duplicates(refs, path))
    return errs


def validate_fully_qualified_name(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-CON-3: a qualified name (RS-QN rules) that really has a domain."""
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return slice_common.validate_fully_qualified_name(value, path)


def validate_cel_expression(expr: Any, path: FieldPath) -> list[FieldError]:
    """RC-EX-6: length, compile, cost of one ``cel.expression``."""
    if expr is None or expr == "":
        return [required(path, "expression must not be empty")]
    if not isinstance(expr, str):
        return [type_error(path, expr, "string")]
    if len(expr.encode("utf-8", "surrogatepass")) > MAX_EXPRESSION_LENGTH:
        return [too_long(path, MAX_EXPRESSION_LENGTH)]
    result = compile_result(expr)
    if isinstance(result, Exception):
        if getattr(result, "too_complex", False):
            return [forbidden(path, "too complex, exceeds cost limit")]
        return [invalid(path, expr, str(result))]
    return []


def validate_selectors(value: Any, path: FieldPath, skip: frozenset[str] = frozenset()) -> list[FieldError]:
    """RC-EX-5/6: ≤ 32 selectors, each with a compiling ``cel.expression``.

    ``skip`` holds expressions already stored in the old object (not re-checked, as upstream).
    """
    errs: list[FieldError] = []
    selectors = as_list(value, path, errs) or []
    if not within(selectors, SELECTORS_MAX, path, errs):
        return errs
    for i, sel in enumerate(selectors):
        p = path.index(i)
        sel_d = as_object(sel, p, errs)
        if sel_d is None:
            if sel is None:
                errs.append(required(p.child("cel")))
            continue
        cel = as_object(sel_d.get("cel"), p.child("cel"), errs)
        if cel is None:
            if sel_d.get("cel") is None:
                errs.append(required(p.child("cel")))
            continue
        expr = cel.get("expression")
        if isinstance(expr, str) and expr in skip:
            continue
        errs.extend(validate_cel_expression(expr, p.child("cel", "expression")))
    return errs


def validate_opaque_config(entry: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """RC-CFG-1: the ``opaque`` member of a claim or class config entry (at ``path``)."""
    errs: list[FieldError] = []
    p = path.child("opaque")
    opaque = as_object(entry.get("opaque"), p, errs)
    if opaque is None:
        if entry.get("opaque") is None:
            errs.append(required(path, "exactly one of `opaque` is required"))
        return errs
    errs.extend(validate_csi_driver_name(opaque.get("driver"), p.child("driver")))
    params = opaque.get("parameters")
    pp = p.child("parameters")
    if params is None:
        errs.append(required(pp))
    elif not isinstance(params, dict):
        errs.append(invalid(pp, "<value omitted>", "parameters must be a valid JSON object"))
    elif len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")) \
            > OPAQUE_PARAMETERS_MAX:
        errs.append(too_long(pp, OPAQUE_PARAMETERS_MAX))
    return errs


TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("NoExecute", "NoSchedule", "None")


def validate_toleration(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-EX-7: one DeviceToleration."""
    errs: list[FieldError] = []
    tol = as_object(value, path, errs)
    if tol is None:
        return errs
    key = tol.get("key")
    if key not in (None, ""):
        errs.extend(validate_label_msgs(key, path.child("key"), is_qualified_name))
    op, val = tol.get("operator"), tol.get("value")
    if op == "Exists":
        if val not in (None, ""):
            errs.append(invalid(path.child("value"), val, "must be empty for operator `Exists`"))
    elif op == "Equal":
        if val not in (None, ""):
            errs.extend(validate_label_msgs(val, path.child("value"), is_label_value))
    elif op in (None, ""):
        errs.append(required(path.child("operator")))
    else:
        errs.append(not_supported(path.child("operator"), op, TOLERATION_OPERATORS))
    effect = tol.get("effect")
    if effect not in (None, "") and effect not in TOLERATION_EFFECTS:
        errs.append(not_supported(path.child("effect"), effect, TOLERATION_EFFECTS))
    secs = tol.get("tolerationSeconds")
    if secs is not None and (isinstance(secs, bool) or not isinstance(secs, int)):
        errs.append(type_error(path.child("tolerationSeconds"), secs, "integer"))
    return errs


def validate_tolerations(value: Any, path: FieldPath) -> list[FieldError]:
    errs: list[FieldError] = []
    tols = as_list(value, path, errs) or []
    if not within(tols, TOLERATIONS_MAX, path, errs):
        return errs
    for i, t in enumerate(tols):
        errs.extend(validate_toleration(t, path.index(i)))
    return errs


def validate_map_keys(value: Any, path: FieldPath, check: Any) -> list[FieldError]:
    """Labels/annotations style maps: each key by ``check``; values are strings."""
    errs: list[FieldError] = []
    m = as_object(value, path, errs)
    for k, v in (m or {}).items():
        errs.extend(invalid(path, k, msg) for msg in check(k))
        if not isinstance(v, str):
            errs.append(type_error(path.key(k), v, "string"))
    return errs

