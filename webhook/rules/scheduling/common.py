"""What the scheduling kinds share beyond their spec fields (``fields``): name checks used by the
Pod and PodGroup status rules, metav1 Conditions, and the warnings. Pure: no I/O, no kubernetes
import, never raises on user input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    duplicates_by,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.gates import Gate
from webhook.rules.context import RuleContext
from webhook.rules.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name
from webhook.rules.shape import shorten, type_error

GROUP = "scheduling.k8s.io"
SERVED_VERSION = "scheduling.k8s.io/v1beta1"

RESOURCE_CLAIMS_MAX = 4
TOPOLOGY_CONSTRAINTS_MAX = 1
HIGHEST_USER_PRIORITY = 1_000_000_000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")




# --- small shape helpers -------------------------------------------------------------------


# --- scalar checks -------------------------------------------------------------------------


def check_name(value: Any, path: FieldPath, check: Callable[[str], list[str]], *,
               required_: bool) -> list[FieldError]:
    """``+k8s:format`` on a string; empty is Required when ``required_`` else just checked."""
    if value is None or (value == "" and required_):
        return [required(path)] if required_ else []
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return [invalid(path, value, m) for m in check(value)]


def check_long_name(value: Any, path: FieldPath, *, required_: bool = False) -> list[FieldError]:
    return check_name(value, path, is_dns1123_subdomain, required_=required_)


def check_short_name(value: Any, path: FieldPath, *, required_: bool = False) -> list[FieldError]:
    return check_name(value, path, is_dns1123_label, required_=required_)


def check_list(value: Any, path: FieldPath, limit: int) -> tuple[list[Any], list[FieldError]]:
    """A list no longer than ``limit``; on error the items are not validated (short-circuit)."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [type_error(path, value, "array")]
    if len(value) > limit:
        return [], [too_many(path, len(value), limit)]
    return value, []


def map_list_duplicates(items: list[Any], path: FieldPath, key: str = "name") -> list[FieldError]:
    """listType=map: Duplicate on every later element whose key was seen (path is the element)."""
    return duplicates_by(items, path, key=lambda it: it.get(key) if isinstance(it, dict) else None)


# --- status.conditions (metav1.Condition) ---------------------------------------------------

CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON_MAX, _MESSAGE_MAX = 1024, 32768
_REASON_RE = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?\Z")


def validate_conditions(value: Any, path: FieldPath) -> list[FieldError]:
    """PG-ST-1: every condition valid as metav1.Condition; a repeated ``type`` is Duplicate."""
    if value is None:
        return []
    if not isinstance(value, list):
        return [type_error(path, value, "array")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(value):
        cpath = path.index(i)
        if not isinstance(cond, dict):
            errs.append(type_error(cpath, cond, "object"))
            continue
        ctype = cond.get("type")
        errs += check_name(ctype if ctype is not None else "", cpath.child("type"), is_qualified_name,
                           required_=False)
        if isinstance(ctype, str):
            if ctype in seen:
                errs.append(duplicate(cpath.child("type"), ctype))
            seen.add(ctype)
        if cond.get("status") not in CONDITION_STATUSES:
            errs.append(not_supported(cpath.child("status"), cond.get("status"), CONDITION_STATUSES))
        gen = cond.get("observedGeneration")
        if gen is not None:
            gerrs = [] if isinstance(gen, int) and not isinstance(gen, bool) else [
                type_error(cpath.child("observedGeneration"), gen, "integer")]
            if not gerrs and gen < 0:
                gerrs.append(invalid(cpath.child("observedGeneration"), gen,
                                     "must be greater than or equal to zero"))
            errs += gerrs
        if not cond.get("lastTransitionTime"):
            errs.append(required(cpath.child("lastTransitionTime"), "must be set"))
        reason = cond.get("reason")
        if not reason:
            errs.append(required(cpath.child("reason"), "must be set"))
        elif not isinstance(reason, str):
            errs.append(type_error(cpath.child("reason"), reason, "string"))
        else:
            if not _REASON_RE.match(reason):
                errs.append(invalid(cpath.child("reason"), reason, (
                    "a condition reason must start with alphabetic character, optionally followed by "
                    "a string of alphanumeric characters or '_,:', and must end with an alphanumeric "
                    "character or '_'")))
            if len(reason) > _REASON_MAX:
                errs.append(too_long(cpath.child("reason"), _REASON_MAX))
        message = cond.get("message")
        if isinstance(message, str) and len(message) > _MESSAGE_MAX:
            errs.append(too_long(cpath.child("message"), _MESSAGE_MAX))
    return errs


# --- warnings shared by the kinds ----------------------------------------------------------


def gate_off_warning(ctx: RuleContext, what: str, verb: str = "does not serve") -> list[str]:
    """The one warning that says a default 1.37 apiserver would not serve (or would drop) ``what``."""
    if ctx.gates.enabled(Gate.GENERIC_WORKLOAD):
        return []
    return [f"{Gate.GENERIC_WORKLOAD} feature gate is off (1.37 default): the apiserver {verb} {what}"]


def unknown_field_warnings(spec: Any, known: frozenset[str], prefix: str = "spec") -> list[str]:
    """``unknown field "spec.x"`` for every top-level key the served version does not define."""
    if not isinstance(spec, dict):
        return []
    return [f'unknown field "{prefix}.{shorten(str(k), 60)}"' for k in spec if k not in known]
