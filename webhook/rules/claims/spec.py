"""ResourceClaimSpec rules (RC-REQ, RC-EX, RC-FA, RC-CON, RC-CFG, RC-DA), shared by claims and templates.

Owns ``validate_claim_spec(spec, path, ctx, old=NO_OLD)``; the claim passes ``spec``, the template
``spec.spec``. It is the union of the two passes the apiserver runs: the handwritten rules of
``pkg/apis/resource/validation`` (restated below) and the declarative tags (``declarative.py``).
Paths, error types and messages are upstream's. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.cel import DERIVED_TOTAL_MAX_COST
from webhook.fielderrors import FieldError, FieldPath, duplicates_by, forbidden, invalid, not_supported, required
from webhook.gates import Gate
from webhook.quantity import QuantityError, parse_quantity
from webhook.rules.claims import declarative
from webhook.rules.claims.common import (
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    FIRST_AVAILABLE_MAX,
    REQUESTS_MAX,
    RequestNames,
    check_cel,
    name_of,
    validate_device_class_name,
    validate_opaque_config,
    validate_request_name,
    validate_request_refs,
    validate_selectors,
    validate_tolerations,
    within,
)
from webhook.rules.claims.names import fully_qualified_name_by_hand
from webhook.rules.claims.plain import is_plain_claim_spec
from webhook.rules.context import RuleContext
from webhook.rules.declarative import NO_OLD, merge
from webhook.rules.shape import as_list, as_object, type_error

ALLOCATION_MODES = ("All", "ExactCount")


@dataclass
class _Claim:
    """What the rules of one request need from the rest of the claim."""

    ctx: RuleContext
    constraint_attrs: dict[str, set[str]]
    """request or ``request/sub`` ("" = every request) -> attribute names its constraints use."""
    derived_cost: int = 0
    """The estimated cost of every derived-attribute expression so far."""

    def uses(self, attr: str, request: str) -> bool:
        parent = request.split("/", 1)[0]
        return any(attr in self.constraint_attrs.get(k, set()) for k in ("", request, parent))


def validate_claim_spec(spec: Any, path: FieldPath, ctx: RuleContext, old: Any = NO_OLD) -> list[FieldError]:
    """Every rule on a ResourceClaimSpec at ``path`` (``spec`` or ``spec.spec``): none to run for
    a spec ``plain`` vouches for on CREATE."""
    if old is NO_OLD and is_plain_claim_spec(spec, ctx.gates):
        return []
    return all_rules(spec, path, ctx, old)


def all_rules(spec: Any, path: FieldPath, ctx: RuleContext, old: Any = NO_OLD) -> list[FieldError]:
    """Both passes over a ResourceClaimSpec, merged (the full rules, without the shortcut)."""
    errs: list[FieldError] = []
    spec_d = as_object(spec, path, errs)
    if spec_d is not None:
        devices = as_object(spec_d.get("devices"), path.child("devices"), errs)
        if devices is not None:
            errs.extend(validate_device_claim(devices, path.child("devices"), ctx))
    return merge(errs, declarative.claim_spec(spec, old, path))


def _constraint_attrs(constraints: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in constraints if isinstance(constraints, list) else []:
        c = c if isinstance(c, dict) else {}
        attr = c.get("matchAttribute") if c.get("matchAttribute") is not None else c.get("distinctAttribute")
        if not isinstance(attr, str):
            continue
        reqs = c.get("requests") if isinstance(c.get("requests"), list) else []
        for r in reqs or [""]:
            out.setdefault(r if isinstance(r, str) else "", set()).add(attr)
    return out


def validate_device_claim(devices: dict[str, Any], path: FieldPath, ctx: RuleContext) -> list[FieldError]:
    """``spec.devices``: requests, constraints, config, and the claim's derived-attribute budget."""
    errs: list[FieldError] = []
    names = RequestNames(devices.get("requests"))
    claim = _Claim(ctx, _constraint_attrs(devices.get("constraints")))
    rp = path.child("requests")
    requests = as_list(devices.get("requests"), rp, errs) or []
    if within(requests, REQUESTS_MAX, rp, errs):
        for i, req in enumerate(requests):
            errs.extend(validate_device_request(req, rp.index(i), claim))
        errs.extend(duplicates_by(requests, rp, name_of))
    cp = path.child("constraints")
    constraints = as_list(devices.get("constraints"), cp, errs) or []
    if within(constraints, CONSTRAINTS_MAX, cp, errs):
        for i, con in enumerate(constraints):
            errs.extend(validate_constraint(con, cp.index(i), names, ctx))
    if devices.get("config") is not None:
        fp = path.child("config")
        configs = as_list(devices["config"], fp, errs) or []
        if within(configs, CONFIG_MAX, fp, errs):
            for i, cfg in enumerate(configs):
                errs.extend(validate_claim_config(cfg, fp.index(i), names))
    if claim.derived_cost > DERIVED_TOTAL_MAX_COST:
        errs.append(forbidden(path, "too complex, total cost of derived attribute CEL expressions in the "
                                    "claim exceeds cost limit"))
    return errs


def validate_device_request(value: Any, path: FieldPath, claim: _Claim) -> list[FieldError]:
    """RC-REQ-3..5: the name, then exactly one of ``exactly`` or ``firstAvailable`` (whose
    content is only checked when it is the only one set)."""
    errs: list[FieldError] = []
    req = as_object(value, path, errs)
    if req is None:
        if value is None:
            errs.append(type_error(path, None, "object"))
        return errs
    raw_name = req.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    errs.extend(validate_request_name(raw_name or "", path.child("name")))
    first: list[Any] = []
    fa_path = path  # replaced below when the list is set: only then is it used
    if req.get("firstAvailable") is not None:
        fa_path = path.child("firstAvailable")
        first = as_list(req["firstAvailable"], fa_path, errs) or []
    exactly = req.get("exactly")
    if first and exactly is not None:
        errs.append(invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                        "multiple fields are set"))
    elif first:
        if within(first, FIRST_AVAILABLE_MAX, fa_path, errs):
            for i, sub in enumerate(first):
                errs.extend(validate_sub_request(sub, fa_path.index(i), claim, name))
            errs.extend(duplicates_by(first, fa_path, name_of))
    elif exactly is not None:
        ex = as_object(exactly, path.child("exactly"), errs)
        if ex is not None:
            errs.extend(validate_exact_request(ex, path.child("exactly"), claim, name))
    else:
        errs.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    return errs


def validate_exact_request(ex: dict[str, Any], path: FieldPath, claim: _Claim, request: str) -> list[FieldError]:
    """RC-EX-1..8 for ``exactly``."""
    errs = _request_body(ex, path, claim, request)
    adm = ex.get("adminAccess")
    if adm is not None and not isinstance(adm, bool):
        errs.append(type_error(path.child("adminAccess"), adm, "boolean"))
    return errs


def validate_sub_request(value: Any, path: FieldPath, claim: _Claim, parent: str) -> list[FieldError]:
    """RC-FA-2: one ``firstAvailable`` entry: the ``exactly`` rules plus its own name."""
    errs: list[FieldError] = []
    sub = as_object(value, path, errs)
    if sub is None:
        if value is None:
            errs.append(type_error(path, None, "object"))
        return errs
    errs.extend(validate_request_name(sub.get("name") or "", path.child("name")))
    name = sub.get("name") if isinstance(sub.get("name"), str) else ""
    return errs + _request_body(sub, path, claim, f"{parent}/{name}")


def _request_body(body: dict[str, Any], path: FieldPath, claim: _Claim, request: str) -> list[FieldError]:
    """What ``exactly`` and a subrequest share: class, selectors, derived attributes, mode, tolerations.
    An absent optional list or map has nothing to report: its path is not even built."""
    errs = validate_device_class_name(body.get("deviceClassName"), path.child("deviceClassName"))
    if (selectors := body.get("selectors")) is not None:
        errs.extend(validate_selectors(selectors, path.child("selectors"), claim.ctx.gates))
    if (derived := body.get("derivedAttributes")) is not None:
        errs.extend(validate_derived_attributes(derived, path.child("derivedAttributes"), claim, request))
    errs.extend(validate_allocation_mode(body, path))
    if (tolerations := body.get("tolerations")) is not None:
        errs.extend(validate_tolerations(tolerations, path.child("tolerations")))
    if (capacity := body.get("capacity")) is not None:
        errs.extend(validate_capacity_requests(capacity, path.child("capacity")))
    return errs


def validate_capacity_requests(value: Any, path: FieldPath) -> list[FieldError]:
    """RC-EX-8: upstream does not validate capacity requests; a quantity that does not parse is a
    decoding error there (the decode step answers it before any rule), here Invalid."""
    errs: list[FieldError] = []
    cap = as_object(value, path, errs)
    if cap is None:
        return errs
    rp = path.child("requests")
    for k, v in (as_object(cap.get("requests"), rp, errs) or {}).items():
        try:
            parse_quantity(v)
        except QuantityError as e:
            errs.append(invalid(rp.key(k), v, str(e)))
    return errs


def validate_derived_attributes(value: Any, path: FieldPath, claim: _Claim, request: str) -> list[FieldError]:
    """RC-DA: each name is used by a constraint that targets this request; each expression compiles
    as a derived attribute within its own and the claim's shared cost budget; names unique."""
    errs: list[FieldError] = []
    attrs = as_list(value, path, errs) or []
    for i, a in enumerate(attrs):
        p = path.index(i)
        a = a if isinstance(a, dict) else {}
        name, expr = a.get("name"), a.get("expression")
        if isinstance(name, str) and name and not claim.uses(name, request):
            errs.append(invalid(p.child("name"), name, "must be referenced by at least one matchAttribute or "
                                                       "distinctAttribute constraint targeting this request"))
        if isinstance(expr, str) and expr:
            cel_errs, cost = check_cel(expr, p.child("expression"), claim.ctx.gates, derived=True)
            errs.extend(cel_errs)
            claim.derived_cost += cost
    return errs + duplicates_by(attrs, path, name_of)


def validate_allocation_mode(req: dict[str, Any], path: FieldPath) -> list[FieldError]:
    """RC-EX-2..4 on the defaulted request (an absent allocationMode is ExactCount, an absent
    count 1).

    An explicit ``""`` mode or ``0`` count was never defaulted: only a v1beta1 request that names
    no class converts to one (v1 defaults both), and the apiserver judges Go's zero values."""
    mode = req.get("allocationMode")
    if mode is None:
        mode = "ExactCount"
    count = req.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        return [type_error(path.child("count"), count, "integer")]
    if mode == "All":
        if count not in (None, 0):
            return [invalid(path.child("count"), count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == "ExactCount":
        n = 1 if count is None else count
        return [invalid(path.child("count"), count, "must be greater than zero")] if n <= 0 else []
    return [not_supported(path.child("allocationMode"), mode, ALLOCATION_MODES)]


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
        errs.extend(_fqn(match, path.child("matchAttribute")))
    elif distinct is not None:
        errs.extend(_fqn(distinct, path.child("distinctAttribute")))
    elif ctx.gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY):
        errs.append(required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                   "but multiple fields are set"))
    else:
        errs.append(required(path.child("matchAttribute")))
    return errs


def _fqn(value: Any, path: FieldPath) -> list[FieldError]:
    if not isinstance(value, str):
        return [type_error(path, value, "string")]
    return fully_qualified_name_by_hand(value, path)


def validate_claim_config(value: Any, path: FieldPath, names: RequestNames) -> list[FieldError]:
    """RC-CFG-1: one entry of ``config``."""
    errs: list[FieldError] = []
    cfg = as_object(value, path, errs)
    if cfg is None:
        return errs
    errs.extend(validate_request_refs(cfg.get("requests"), path.child("requests"), names))
    errs.extend(validate_opaque_config(cfg, path))
    return errs
