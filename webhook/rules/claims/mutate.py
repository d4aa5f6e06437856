"""What the apiserver does to a claim spec before validation: defaults and gate strips (docs/rules.md).

``default_claim_spec`` mirrors v1 defaulting (allocationMode, count, toleration operator).
``plan_spec_strips`` mirrors ``pkg/api/resourceclaimspec`` dropDisabledFields as JSON Patch ops:
on CREATE a field guarded by a disabled gate is removed; on UPDATE it is kept when the *old*
spec already uses the feature anywhere. One warning per gate names it. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from webhook.fielderrors import FieldPath
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules import shape
from webhook.rules.context import Mutation, RuleContext


def default_claim_spec(spec: Any) -> None:
    """Apply v1 defaults in place to a ResourceClaimSpec (ignores anything malformed)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return
    for req in _list(spec["devices"].get("requests")):
        if not isinstance(req, dict):
            continue
        if isinstance(req.get("exactly"), dict):
            default_request(req["exactly"])
        for sub in _list(req.get("firstAvailable")):
            if isinstance(sub, dict):
                default_request(sub)


def default_claim_status(status: Any) -> None:
    """Apply v1 defaults in place to a ResourceClaimStatus: the operator of allocated devices'
    tolerations (a DeviceToleration is defaulted wherever it appears)."""
    alloc = status.get("allocation") if isinstance(status, dict) else None
    devices = alloc.get("devices") if isinstance(alloc, dict) else None
    for result in _list(devices.get("results")) if isinstance(devices, dict) else []:
        for tol in _list(result.get("tolerations")) if isinstance(result, dict) else []:
            if isinstance(tol, dict) and tol.get("operator") in (None, ""):
                tol["operator"] = "Equal"


def default_request(r: dict[str, Any]) -> None:
    """Upstream's request defaults, in place: ``allocationMode`` ExactCount, then ``count`` 1,
    and each toleration's operator."""
    if r.get("allocationMode") in (None, ""):
        r["allocationMode"] = "ExactCount"
    if r["allocationMode"] == "ExactCount" and r.get("count") in (None, 0):
        r["count"] = 1
    default_tolerations(r)


def default_tolerations(r: dict[str, Any]) -> None:
    """Every toleration of a request body gets operator Equal when it has none (in place)."""
    for tol in _list(r.get("tolerations")):
        if isinstance(tol, dict) and tol.get("operator") in (None, ""):
            tol["operator"] = "Equal"


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _requests(spec: Any) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """(relative path, body) of every ``exactly`` and every ``firstAvailable`` entry."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for i, req in enumerate(_list(devices.get("requests"))):
        if not isinstance(req, dict):
            continue
        if isinstance(req.get("exactly"), dict):
            yield ("devices", "requests", i, "exactly"), req["exactly"]
        for j, sub in enumerate(_list(req.get("firstAvailable"))):
            if isinstance(sub, dict):
                yield ("devices", "requests", i, "firstAvailable", j), sub


def _constraints(spec: Any) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for i, con in enumerate(_list(devices.get("constraints"))):
        if isinstance(con, dict):
            yield ("devices", "constraints", i), con


def _first_available(spec: Any) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for i, req in enumerate(_list(devices.get("requests"))):
        if isinstance(req, dict) and req.get("firstAvailable") is not None:
            yield ("devices", "requests", i), req


# (gate, fields to remove: [(walker, member)], in-use test on one member value)
def _non_nil(v: Any) -> bool:
    return v is not None


def _non_empty(v: Any) -> bool:
    return shape.is_set(v, map_field=True)


_Walker = Callable[[Any], Iterator[tuple[tuple[str | int, ...], dict[str, Any]]]]
STRIPS: tuple[tuple[Gate, tuple[tuple[_Walker, str, Callable[[Any], bool]], ...]], ...] = (
    (Gate.DRA_PRIORITIZED_LIST, ((_first_available, "firstAvailable", _non_empty),)),
    (Gate.DRA_DEVICE_TAINTS, ((_requests, "tolerations", _non_empty),)),
    (Gate.DRA_ADMIN_ACCESS, ((_requests, "adminAccess", _non_nil),)),
    (Gate.DRA_CONSUMABLE_CAPACITY, ((_constraints, "distinctAttribute", _non_nil),
                               (_requests, "capacity", _non_nil))),
    (Gate.DRA_DERIVED_ATTRIBUTES, ((_requests, "derivedAttributes", _non_empty),)),
)


def _in_use(old_spec: Any, fields: tuple[tuple[_Walker, str, Callable[[Any], bool]], ...]) -> bool:
    return any(test(body.get(member)) for walk, member, test in fields for _, body in walk(old_spec))


def plan_spec_strips(spec: Any, base: FieldPath, ctx: RuleContext, old_spec: Any = None) -> Mutation:
    """Remove-ops for gated fields in ``spec`` (at ``base``) plus one warning per gate."""
    out = Mutation()
    gone: list[str] = []  # pointers already removed; nothing below them may be removed again
    for gate, fields in STRIPS:
        if ctx.gates.enabled(gate):
            continue
        if ctx.is_update() and _in_use(old_spec, fields):
            continue
        removed: list[str] = []
        for walk, member, _ in fields:
            for rel, body in walk(spec):
                if member in body:
                    p = FieldPath(base.parts + rel).child(member)
                    if any(p.pointer().startswith(g + "/") for g in gone):
                        continue
                    out.ops.append(op_remove(p))
                    gone.append(p.pointer())
                    removed.append(str(p))
        if removed:
            out.warnings.append(strip_warning(gate, removed))
    return out


def strip_warning(gate: str, removed: list[str]) -> str:
    """The strip warning for removed field paths: the first one, and how many more."""
    more = f" (and {len(removed) - 1} more)" if len(removed) > 1 else ""
    return shape.strip_warning(gate, removed[0] + more)
