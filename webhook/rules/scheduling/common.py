"""Rules shared by PodGroup and Workload (``scheduling.k8s.io/v1beta1``): policy, claims, priority.

Restates the declarative validation tags of the upstream PodGroupSpec / PodGroupTemplate types
(reference/validation.md §4). Pure: no I/O, no kubernetes import, never raises on user input.
Every ``validate_*`` here takes an optional ``old`` value and skips a field whose value is
unchanged from ``old`` (upstream's declarative-validation ratcheting on UPDATE).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from webhook.fielderrors import (
    FieldError,
    FieldPath,
    duplicate,
    duplicates_by,
    forbidden,
    immutable,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.gates import Gate
from webhook.rules.context import RuleContext
from webhook.rules.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name
from webhook.rules.shape import is_set, mapping, shorten, type_error

GROUP = "scheduling.k8s.io"
SERVED_VERSION = "scheduling.k8s.io/v1beta1"

RESOURCE_CLAIMS_MAX = 4
TOPOLOGY_CONSTRAINTS_MAX = 1
HIGHEST_USER_PRIORITY = 1_000_000_000
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


_MISSING = object()
Validator = Callable[[Any, FieldPath], list[FieldError]]


# --- small shape helpers -------------------------------------------------------------------


def changed(new: Mapping[str, Any], old: Mapping[str, Any] | None, key: str) -> bool:
    """Whether ``key`` must be (re)validated: always on CREATE, on UPDATE only when it changed."""
    if old is None:
        return True
    return new.get(key) != old.get(key)


# --- scalar checks -------------------------------------------------------------------------


def check_object(value: Any, path: FieldPath) -> list[FieldError]:
    return [] if isinstance(value, dict) else [type_error(path, value, "object")]


def check_int32(value: Any, path: FieldPath) -> list[FieldError]:
    """A JSON integer that fits in int32 (bools and floats are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return [type_error(path, value, "integer")]
    if not INT32_MIN <= value <= INT32_MAX:
        return [invalid(path, value, "must be a 32-bit integer")]
    return []


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


def check_union(obj: Mapping[str, Any], path: FieldPath, members: tuple[str, ...]) -> list[FieldError]:
    """``+k8s:unionMember`` over ``members``: exactly one must be set (origin union)."""
    names = ", ".join(members)
    present = [m for m in members if is_set(obj.get(m))]
    if not present:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(present) > 1:
        return [invalid(path, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}")]
    return []


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


# --- PodGroupSchedulingPolicy ----------------------------------------------------------------


def validate_scheduling_policy(policy: Any, path: FieldPath, *, count_field: str = "minCount",
                               ) -> list[FieldError]:
    """PG-POL-1/2 and PG-GANG-1/2: a basic/gang union; gang count required and ≥ 1."""
    if policy is None:
        return [invalid(path, "", "must specify one of: basic, gang")]
    if not isinstance(policy, dict):
        return [type_error(path, policy, "object")]
    errs = check_union(policy, path, ("basic", "gang"))
    basic = policy.get("basic")
    if is_set(basic):
        errs += check_object(basic, path.child("basic"))
    gang = policy.get("gang")
    if is_set(gang):
        if not isinstance(gang, dict):
            errs.append(type_error(path.child("gang"), gang, "object"))
        else:
            errs += validate_positive_count(gang.get(count_field), path.child("gang", count_field))
    return errs


def validate_positive_count(value: Any, path: FieldPath) -> list[FieldError]:
    """``+k8s:required`` + ``+k8s:minimum=1`` on an int32: zero or missing is Required."""
    if value is None or value == 0 and not isinstance(value, bool):
        return [required(path)]
    errs = check_int32(value, path)
    if not errs and value < 1:
        errs.append(invalid(path, value, "must be greater than or equal to 1"))
    return errs


def validate_scheduling_policy_update(new: Any, old: Any, path: FieldPath) -> list[FieldError]:
    """PG-POL-U1/U2: ``basic`` immutable; ``gang`` can be neither set nor unset (minCount mutable)."""
    new_p, old_p = mapping(new), mapping(old)
    errs: list[FieldError] = []
    if is_set(new_p.get("basic")) != is_set(old_p.get("basic")):
        errs.append(immutable(path.child("basic"), new_p.get("basic")))
    new_gang, old_gang = is_set(new_p.get("gang")), is_set(old_p.get("gang"))
    if new_gang and not old_gang:
        errs.append(invalid(path.child("gang"), new_p.get("gang"), "field cannot be set once created"))
    elif old_gang and not new_gang:
        errs.append(invalid(path.child("gang"), None, "field cannot be cleared once set"))
    return errs


# --- schedulingConstraints, resourceClaims, disruptionMode, priority ------------------------


def validate_scheduling_constraints(value: Any, path: FieldPath) -> list[FieldError]:
    """PG-SC-2/3: at most one topology constraint, each with a label-key ``key``."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [type_error(path, value, "object")]
    tpath = path.child("topology")
    items, errs = check_list(value.get("topology"), tpath, TOPOLOGY_CONSTRAINTS_MAX)
    for i, item in enumerate(items):
        ipath = tpath.index(i)
        if not isinstance(item, dict):
            errs.append(type_error(ipath, item, "object"))
            continue
        errs += check_name(item.get("key"), ipath.child("key"), is_qualified_name, required_=True)
    return errs


def validate_resource_claims(value: Any, path: FieldPath) -> list[FieldError]:
    """PG-RC-1..5: ≤ 4 entries, unique DNS-label names, exactly one claim/template name."""
    items, errs = check_list(value, path, RESOURCE_CLAIMS_MAX)
    errs += map_list_duplicates(items, path)
    for i, item in enumerate(items):
        ipath = path.index(i)
        if not isinstance(item, dict):
            errs.append(type_error(ipath, item, "object"))
            continue
        errs += check_short_name(item.get("name"), ipath.child("name"), required_=True)
        errs += claim_union(item, ipath)
        for member in ("resourceClaimName", "resourceClaimTemplateName"):
            if item.get(member) is not None:
                errs += check_name(item[member], ipath.child(member), is_dns1123_subdomain,
                                   required_=False)
    return errs


def claim_union(item: Mapping[str, Any], path: FieldPath) -> list[FieldError]:
    """Exactly one of the two name pointers is non-null (an empty string still counts as set)."""
    members = ("resourceClaimName", "resourceClaimTemplateName")
    present = [m for m in members if item.get(m) is not None]
    if len(present) == 1:
        return []
    if not present:
        return [invalid(path, "", "must specify one of: " + ", ".join(members))]
    return [invalid(path, "{" + ", ".join(present) + "}",
                    "must specify exactly one of: " + ", ".join(members))]


def validate_disruption_mode(value: Any, path: FieldPath) -> list[FieldError]:
    """PG-DM-1: a single/all union when present."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [type_error(path, value, "object")]
    errs = check_union(value, path, ("single", "all"))
    for member in ("single", "all"):
        if is_set(value.get(member)):
            errs += check_object(value[member], path.child(member))
    return errs


def validate_priority(value: Any, path: FieldPath) -> list[FieldError]:
    """PG-PRI-2: an int32 not above 1e9 (negatives are allowed)."""
    if value is None:
        return []
    errs = check_int32(value, path)
    if not errs and value > HIGHEST_USER_PRIORITY:
        errs.append(invalid(path, value, f"must be less than or equal to {HIGHEST_USER_PRIORITY}"))
    return errs


def validate_preemption_policy(value: Any, path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """PG-PP-1/2: Forbidden while PodGroupPreemptionPolicy is off; else one of two values."""
    if value is None:
        return []
    if not ctx.gates.enabled(Gate.POD_GROUP_PREEMPTION_POLICY):
        return [forbidden(path, f"requires feature gate {Gate.POD_GROUP_PREEMPTION_POLICY}")]
    if value not in PREEMPTION_POLICIES:
        return [not_supported(path, value, PREEMPTION_POLICIES)]
    return []


# --- the fields a PodGroup spec and a PodGroupTemplate share --------------------------------


def validate_group_fields(spec: Mapping[str, Any], path: FieldPath, ctx: RuleContext,
                          old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """schedulingPolicy, schedulingConstraints, resourceClaims, disruptionMode, priority*.

    With ``old`` (UPDATE) a field equal to its old value is not re-validated (ratcheting).
    """
    errs: list[FieldError] = []
    if changed(spec, old, "schedulingPolicy"):
        errs += validate_scheduling_policy(spec.get("schedulingPolicy"), path.child("schedulingPolicy"))
    if changed(spec, old, "schedulingConstraints") and spec.get("schedulingConstraints") is not None:
        cpath = path.child("schedulingConstraints")
        if not ctx.gates.enabled(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
            errs.append(forbidden(cpath, f"requires feature gate {Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING}"))
        else:
            errs += validate_scheduling_constraints(spec["schedulingConstraints"], cpath)
    if changed(spec, old, "resourceClaims"):
        errs += validate_resource_claims(spec.get("resourceClaims"), path.child("resourceClaims"))
    if changed(spec, old, "disruptionMode"):
        errs += validate_disruption_mode(spec.get("disruptionMode"), path.child("disruptionMode"))
    if changed(spec, old, "priorityClassName"):
        errs += check_long_name(spec.get("priorityClassName"), path.child("priorityClassName"))
    if changed(spec, old, "priority"):
        errs += validate_priority(spec.get("priority"), path.child("priority"))
    if changed(spec, old, "preemptionPolicy"):
        errs += validate_preemption_policy(spec.get("preemptionPolicy"), path.child("preemptionPolicy"),
                                           ctx)
    return errs


# Fields that may never change once created (``+k8s:immutable``), in upstream field order.
IMMUTABLE_GROUP_FIELDS = ("resourceClaims", "disruptionMode", "priorityClassName", "priority",
                          "preemptionPolicy")


def validate_group_fields_update(new: Mapping[str, Any], old: Mapping[str, Any], path: FieldPath,
                                 ctx: RuleContext, *, constraints_always_immutable: bool
                                 ) -> list[FieldError]:
    """Immutability of the shared fields. PodGroup constraints are immutable only with the gate on
    (off, a change is Forbidden by :func:`validate_group_fields`); template constraints always."""
    errs = validate_scheduling_policy_update(new.get("schedulingPolicy"), old.get("schedulingPolicy"),
                                             path.child("schedulingPolicy"))
    if new.get("schedulingConstraints") != old.get("schedulingConstraints") and (
            constraints_always_immutable or ctx.gates.enabled(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)):
        errs.append(immutable(path.child("schedulingConstraints"), new.get("schedulingConstraints")))
    for key in IMMUTABLE_GROUP_FIELDS:
        if _norm(new.get(key, _MISSING), key) != _norm(old.get(key, _MISSING), key):
            errs.append(immutable(path.child(key), new.get(key)))
    return errs


def _norm(value: Any, key: str) -> Any:
    """Go zero values: absent/null/"" priorityClassName are the same; absent/null/[] lists too."""
    if value is _MISSING or value is None:
        return None
    if key == "priorityClassName" and value == "":
        return None
    if key == "resourceClaims" and value == []:
        return None
    return value


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
