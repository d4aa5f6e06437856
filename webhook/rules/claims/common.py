"""Small checks the claim, template and class rules share: names, references, opaque config, CEL.

Pure; every function takes raw JSON values and returns field errors, never raises.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from webhook.cel import MAX_EXPRESSION_LENGTH, CelCompileError, Selector, compile_result
from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicates_by,
    forbidden,
    internal,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.gates import FeatureGates, Gate
from webhook.rules.kind import OpaqueParameters
from webhook.rules.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from webhook.rules.shape import as_list, as_object, type_error
from webhook.rules.slices import common as slice_common

REQUESTS_MAX = 32
SELECTORS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
FIRST_AVAILABLE_MAX = 8
OPAQUE_PARAMETERS_MAX = 10 * 1024
DRIVER_NAME_MAX = 63
REQUEST_REF_MSG = ("must be the name of a request in the claim or the name of a request and a "
                   "subrequest separated by '/'")


def within(items: list[Any], limit: int, path: FieldPath, errs: list[FieldError]) -> bool:
    """Upstream list-size short circuit: one TooMany and nothing inside the list."""
    if len(items) > limit:
        errs.append(too_many(path, len(items), limit))
        return False
    return True


def name_of(item: Any) -> Any:
    """The key of a list of named entries: the name ("" when absent, as Go reads it); None for
    an entry that is not an object (a type error reported elsewhere)."""
    if not isinstance(item, dict):
        return None
    name = item.get("name")
    return name if isinstance(name, str) else "" if name is None else None


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
    """The names a constraint/config/result may reference: ``req`` or ``req/sub``.

    As upstream's map: a later request of the same name replaces an earlier one, and a request
    without sub-requests accepts no ``req/sub`` reference."""

    def __init__(self, requests: Any) -> None:
        self.subs: dict[str, set[str]] = {}
        for r in requests if isinstance(requests, list) else []:
            if not isinstance(r, dict) or not isinstance(r.get("name") or "", str):
                continue
            fa = r.get("firstAvailable")
            self.subs[r.get("name") or ""] = {name_of(s) for s in fa if isinstance(s, dict)} \
                if isinstance(fa, list) else set()

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
    errs.extend(duplicates_by(refs, path, lambda r: r if isinstance(r, str) else None))
    return errs


def check_cel(expr: Any, path: FieldPath, gates: FeatureGates, *, derived: bool = False
              ) -> tuple[list[FieldError], int]:
    """RC-EX-6 / RC-DA: length, compile, cost of one expression; (errors, its estimated cost).

    An empty expression is compiled like any other (a syntax error, Invalid)."""
    if expr is None:
        expr = ""
    if not isinstance(expr, str):
        return [type_error(path, expr, "string")], 0
    if len(expr.encode("utf-8", "surrogatepass")) > MAX_EXPRESSION_LENGTH:
        return [too_long(path, MAX_EXPRESSION_LENGTH)], 0
    result = _compiled(expr, gates, derived)
    if isinstance(result, CelCompileError):
        if result.too_complex:
            return [forbidden(path, "too complex, exceeds cost limit")], result.cost
        if result.internal:
            return [internal(path, str(result))], 0
        return [invalid(path, expr, str(result))], 0
    return [], result.cost


def _compiled(expr: str, gates: FeatureGates, derived: bool) -> Selector | CelCompileError:
    return compile_result(expr, derived=derived, list_types=gates.enabled(Gate.DRA_LIST_TYPE_ATTRIBUTES),
                          consumable_capacity=gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY))


def _compiles(sel: Any, gates: FeatureGates) -> bool:
    return compiles(sel, gates.enabled(Gate.DRA_LIST_TYPE_ATTRIBUTES), gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY))


def compiles(sel: Any, list_types: bool, consumable_capacity: bool) -> bool:
    """A selector ``{"cel": {"expression": ...}}`` whose expression is certainly short enough
    (≤ 4 bytes a character) and compiles with these gates (as ``_compiled``): nothing to report,
    no path to build."""
    cel = sel.get("cel") if isinstance(sel, dict) else None
    expr = cel.get("expression") if isinstance(cel, dict) else None
    return isinstance(expr, str) and 4 * len(expr) <= MAX_EXPRESSION_LENGTH \
        and _expression_compiles(expr, list_types, consumable_capacity)


@lru_cache(maxsize=4096)
def _expression_compiles(expr: str, list_types: bool, consumable_capacity: bool) -> bool:
    """The verdict alone, remembered apart from the compiled program (a pure function of its
    arguments; the CEL cache behind ``compile_result`` takes a lock and keeps LRU order)."""
    return not isinstance(compile_result(expr, list_types=list_types, consumable_capacity=consumable_capacity),
                          CelCompileError)


def validate_selectors(value: Any, path: FieldPath, gates: FeatureGates, *, stored: bool = False
                       ) -> list[FieldError]:
    """RC-EX-5/6: ≤ 32 selectors, each with a ``cel`` whose expression compiles. ``stored``
    selectors (a DeviceClass UPDATE that leaves them as they were) are not compiled again."""
    errs: list[FieldError] = []
    selectors = as_list(value, path, errs) or []
    if not within(selectors, SELECTORS_MAX, path, errs):
        return errs
    for i, sel in enumerate(selectors):
        if (stored and isinstance(sel, dict) and isinstance(sel.get("cel"), dict)) or _compiles(sel, gates):
            continue
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
        if not stored:
            errs.extend(check_cel(cel.get("expression"), p.child("cel", "expression"), gates)[0])
    return errs


def driver_name(value: Any, path: FieldPath) -> list[FieldError]:
    """A driver name (``ValidateCSIDriverName``): required, at most 63 bytes, and lower-cased a DNS
    subdomain (both of the last two are reported)."""
    if value is None or value == "":
        return [required(path)]
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    errs = [too_long(path, DRIVER_NAME_MAX)] if len(value) > DRIVER_NAME_MAX else []
    return errs + [invalid(path, value, m) for m in is_dns1123_subdomain(value.lower())]


def raw_json_length(value: Any) -> int:
    """Bytes of ``value`` encoded as the apiserver encodes raw JSON it passes on (Go's encoder:
    compact, UTF-8, with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as six-byte sequences)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    extra = 5 * sum(text.count(c) for c in "<>&") + 3 * sum(text.count(c) for c in "\u2028\u2029")
    return len(text.encode("utf-8", "surrogatepass")) + extra


def validate_raw_object(value: Any, path: FieldPath, limit: int, stored: bool = False) -> list[FieldError]:
    """``validateRawExtension``: required (null is absent), at most ``limit`` bytes unless stored
    before, a JSON object."""
    if value is None:
        return [required(path)]
    if not stored and raw_json_length(value) > limit:
        return [too_long(path, limit)]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def validate_opaque_config(entry: dict[str, Any], path: FieldPath, stored: bool = False) -> list[FieldError]:
    """RC-CFG-1: the ``opaque`` member of a claim or class config entry (at ``path``)."""
    errs: list[FieldError] = []
    p = path.child("opaque")
    opaque = as_object(entry.get("opaque"), p, errs)
    if opaque is None:
        if entry.get("opaque") is None:
            errs.append(required(p))
        return errs
    errs.extend(driver_name(opaque.get("driver"), p.child("driver")))
    errs.extend(validate_raw_object(opaque.get("parameters"), p.child("parameters"), OPAQUE_PARAMETERS_MAX,
                                    stored))
    return errs


def opaque_parameters(configs: Any, path: FieldPath) -> list[OpaqueParameters]:
    """The opaque ``parameters`` of the config entries at ``path`` (a list; odd shapes skipped)."""
    out: list[OpaqueParameters] = []
    for i, entry in enumerate(configs if isinstance(configs, list) else []):
        opaque = entry.get("opaque") if isinstance(entry, dict) else None
        if isinstance(opaque, dict) and isinstance(opaque.get("driver"), str) and opaque.get("parameters") is not None:
            out.append(OpaqueParameters(path.index(i).child("opaque", "parameters"), opaque["driver"],
                                        opaque["parameters"]))
    return out


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
        errs.extend(validate_label_msgs(val or "", path.child("value"), is_label_value))
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
    """Every toleration (1.37 sets no limit on their number)."""
    errs: list[FieldError] = []
    for i, t in enumerate(as_list(value, path, errs) or []):
        errs.extend(validate_toleration(t, path.index(i)))
    return errs
