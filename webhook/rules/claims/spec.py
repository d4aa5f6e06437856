"""ResourceClaimSpec rules (RC-REQ, RC-EX, RC-FA, RC-CON, RC-CFG), shared by claims and templates.

Owns ``validate_claim_spec(spec, path, ctx)``; the claim passes ``spec``, the template
``spec.spec``. Paths, error types and messages follow reference/validation.md §2. Pure.
"""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import FieldError, FieldPath, invalid, not_supported, required
from webhook.gates import Gate
from webhook.quantity import QuantityError, parse_quantity
from webhook.rules.claims.common import (
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    FIRST_AVAILABLE_MAX,
    REQUESTS_MAX,
    RequestNames,
    duplicates,
    validate_device_class_name,
    validate_fully_qualified_name,
    validate_opaque_config,
    validate_request_name,
    validate_request_refs,
    validate_selectors,
    validate_tolerations,
    within,
)
from webhook.rules.context import RuleContext
from webhook.rules.shape import as_list, as_object, type_error

ALLOCATION_MODES = ("All", "ExactCount")


def validate_claim_spec(spec: Any, path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """Every rule on a ResourceClaimSpec at ``path`` (``spec`` or ``spec.spec``)."""
    errs: list[FieldError] = []
    spec_d = as_object(spec, path, errs)
    if spec_d is None:
        return errs
    devices = as_object(spec_d.get("devices"), path.child("devices"), errs)
    if devices is None:
        return errs
    return errs + validate_device_claim(devices, path.child("devices"), ctx)


def validate_device_claim(devices: dict[str, Any], path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """``spec.devices``: requests, constraints, config."""
    errs: list[FieldError] = []
    names = RequestNames(devices.get("requests"))
    rp = path.child("requests")
    requests = as_list(devices.get("requests"), rp, errs) or []
    if within(requests, REQUESTS_MAX, rp, errs):
        for i, req in enumerate(requests):
            errs.extend(validate_device_request(req, rp.index(i), ctx))
        errs.extend(duplicates((r.get("name") if isinstance(r, dict) else None for r in requests), rp))
    cp = path.child("constraints")
    constraints = as_list(devices.get("constraints"), cp, errs) or []
    if within(constraints, CONSTRAINTS_MAX, cp, errs):
        for i, con in enumerate(constraints):
            errs.extend(validate_constraint(con, cp.index(i), names, ctx))
    fp = path.child("config")
    configs = as_list(devices.get("config"), fp, errs) or []
    if within(configs, CONFIG_MAX, fp, errs):
        for i, cfg in enumerate(configs):
            errs.extend(validate_claim_config(cfg, fp.index(i), names))
    return errs


def validate_device_request(value: Any, path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """RC-REQ-3..5 and the request body (``exactly`` or ``firstAvailable``)."""
    errs: list[FieldError] = []
    req = _request_object(value, path, errs)
    if req is None:
        return errs
    kinds = 0
    fa_path = path.child("firstAvailable")
    first = as_list(req.get("firstAvailable"), fa_path, errs) or []
    if first:
        kinds += 1
        if within(first, FIRST_AVAILABLE_MAX, fa_path, errs):
            for i, sub in enumerate(first):
                errs.extend(validate_sub_request(sub, fa_path.index(i), ctx))
            errs.extend(duplicates((s.get("name") if isinstance(s, dict) else None for s in first), fa_path))
    exactly = req.get("exactly")
    if exactly is not None:
        kinds += 1
        ex = as_object(exactly, path.child("exactly"), errs)
        if ex is not None:
            errs.extend(validate_exact_request(ex, path.child("exactly"), ctx))
    if kinds == 0:
        errs.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif kinds > 1:
        errs.append(invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                        "multiple fields are set"))
    return errs


def validate_exact_request(ex: dict[str, Any], path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """RC-EX-1..8 for ``exactly``."""
    errs = _request_body(ex, path)
    adm = ex.get("adminAccess")
    if adm is not None and not isinstance(adm, bool):
        errs.append(type_error(path.child("adminAccess"), adm, "boolean"))
    return errs


def validate_sub_request(value: Any, path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """RC-FA-2: one ``firstAvailable`` entry: the ``exactly`` rules plus its own name."""
    errs: list[FieldError] = []
    sub = _request_object(value, path, errs)
    if sub is not None:
        errs.extend(_request_body(sub, path))
    return errs


def _request_object(value: Any, path: FieldPath, errs: list[FieldError]) -> dict[str, Any] | None:
    """A request or subrequest entry (null is a type error too) with its name checked."""
    obj = as_object(value, path, errs)
    if obj is None:
        if value is None:
            errs.append(type_error(path, None, "object"))
        return None
    errs.extend(validate_request_name(obj.get("name"), path.child("name")))
    return obj


def _request_body(body: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """What ``exactly`` and a subrequest share: class, selectors, mode, tolerations, capacity."""
    errs = validate_device_class_name(body.get("deviceClassName"), path.child("deviceClassName"))
    errs.extend(validate_selectors(body.get("selectors"), path.child("selectors")))
    errs.extend(validate_allocation_mode(body, path))
    errs.extend(validate_tolerations(body.get("tolerations"), path.child("tolerations")))
    errs.extend(validate_capacity_requests(body.get("capacity"), path.child("capacity")))
    return errs


def validate_allocation_mode(req: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """RC-EX-2..4. A missing mode/count is read as the apiserver default (ExactCount, 1)."""
    mode = req.get("allocationMode")
    if mode in (None, ""):
        mode = "ExactCount"
    count = req.get("count")
    cp = path.child("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        return [type_error(cp, count, "integer")]
    if mode == "All":
        if count not in (None, 0):
            return [invalid(cp, count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == "ExactCount":
        n = 1 if count in (None, 0) else count
        return [invalid(cp, count, "must be greater than zero")] if n <= 0 else []
    return [not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES)]


def validate_capacity_requests(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-EX-8: upstream does not validate capacity requests; the quantities must still decode."""
    errs: list[FieldError] = []
    cap = as_object(value, path, errs)
    if cap is None:
        return errs
    rp = path.child("requests")
    reqs = as_object(cap.get("requests"), rp, errs)
    for k, v in (reqs or {}).items():
        try:
            parse_quantity(v)
        except QuantityError as e:
            errs.append(invalid(rp.key(k), v, str(e)))
    return errs


def validate_constraint(value: Any, path: FieldPath, names: RequestNames,
                        ctx: RuleContext) -> list[FieldError]:
    """RC-CON-2..6: one entry of ``constraints``."""
    errs: list[FieldError] = []
    con = as_object(value, path, errs)
    if con is None:
        return errs
    errs.extend(validate_request_refs(con.get("requests"), path.child("requests"), names))
    match, distinct = con.get("matchAttribute"), con.get("distinctAttribute")
    if match is not None:
        errs.extend(validate_fully_qualified_name(match, path.child("matchAttribute")))
    elif distinct is not None:
        errs.extend(validate_fully_qualified_name(distinct, path.child("distinctAttribute")))
    elif ctx.gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY):
        errs.append(required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required'))
    else:
        errs.append(required(path.child("matchAttribute")))
    return errs


def validate_claim_config(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    """RC-CFG-1: one entry of ``config``."""
    errs: list[FieldError] = []
    cfg = as_object(value, path, errs)
    if cfg is None:
        return errs
    errs.extend(validate_request_refs(cfg.get("requests"), path.child("requests"), names))
    errs.extend(validate_opaque_config(cfg, path))
    return errs
