"""ResourceClaim (``resource.k8s.io/v1``): metadata, spec (via claimspec), status, strategy.

CREATE: the strategy wipes ``status`` (a ``remove /status`` op) and drops gated spec fields.
UPDATE of the main resource: spec immutable, old status kept. UPDATE of ``/status``: old spec
and metadata kept, status rules RC-ST-* and the status drops. RC-ADM-1 (adminAccess needs a
namespace label) cannot be decided without the namespace: only a warning here. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath
from webhook.rules import meta
from webhook.rules.claims.common import opaque_parameters
from webhook.rules.claims.mutate import default_claim_spec, default_claim_status, plan_spec_strips
from webhook.rules.claims.spec import validate_claim_spec
from webhook.rules.claims.status import plan_status_strips, validate_status_update
from webhook.rules.claims.update import validate_spec_immutable
from webhook.rules.context import Mutation, RuleContext, plan_status_split
from webhook.rules.kind import KindRules, OpaqueParameters
from webhook.rules.shape import mapping

SPEC = FieldPath.root("spec")
ADMIN_ACCESS_WARNING = ("adminAccess needs namespace label resource.kubernetes.io/admin-access=true "
                        "(not checked by this webhook)")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy with v1 defaults (allocationMode, count, toleration operator) applied."""
    out = copy.deepcopy(obj)
    if isinstance(out, dict):
        default_claim_spec(out.get("spec"))
        default_claim_status(out.get("status"))
    return out


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Strategy effects as JSON Patch: status wipe/restore and gate strips."""
    out = Mutation()
    if not isinstance(obj, dict):
        return out
    old = ctx.old if isinstance(ctx.old, dict) else {}
    out.ops.extend(plan_status_split(obj, ctx))
    if ctx.subresource == "status":
        if ctx.is_update():
            out.extend(plan_status_strips(obj, old, ctx))
        return out
    out.extend(plan_spec_strips(obj.get("spec"), SPEC, ctx, old.get("spec")))
    return out


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: metadata and every spec rule (status was wiped by mutate)."""
    if not isinstance(obj, dict):
        return []
    return meta.check(obj, None, ctx, namespaced=True, rules=META) + validate_claim_spec(obj.get("spec"), SPEC, ctx)


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE of ``/status``: the status rules. Of the main resource: metadata, and the spec must
    not change (nothing else is checked again, by hand or by the tags: "the only actionable error
    is the immutability violation")."""
    if not isinstance(obj, dict) or not isinstance(old, dict):
        return []
    errs = meta.check(obj, old, ctx, namespaced=True, rules=META)
    if ctx.subresource == "status":
        return errs + validate_status_update(obj, old)
    return errs + validate_spec_immutable(obj.get("spec"), old.get("spec"), SPEC)


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    """RC-ADM-1 cannot be checked here (say so), plus hints for shapes from other versions."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    out = [ADMIN_ACCESS_WARNING] if uses_admin_access(spec) else []
    if isinstance(spec, dict) and "spec" in spec:
        out.append("spec.spec is not a ResourceClaim field (template shape?); the apiserver drops it")
    return out + shape_hints(spec, SPEC)


#: Members of a v1beta1 request that v1 has under ``exactly``.
V1BETA1_REQUEST_KEYS = frozenset({"deviceClassName", "selectors", "count", "allocationMode"})


def shape_hints(spec: Any, path: FieldPath) -> list[str]:
    """One warning per request written in the v1beta1 shape (class/selectors on the request)."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    out = []
    for i, r in enumerate(reqs if isinstance(reqs, list) else []):
        if isinstance(r, dict) and not V1BETA1_REQUEST_KEYS.isdisjoint(r):
            p = path.child("devices", "requests").index(i)
            out.append(f"{p}: v1beta1 request shape; in resource.k8s.io/v1 these fields go under exactly")
    return out[:3]


def uses_admin_access(spec: Any) -> bool:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    reqs = devices.get("requests") if isinstance(devices, dict) else None
    for r in reqs if isinstance(reqs, list) else []:
        ex = r.get("exactly") if isinstance(r, dict) else None
        if isinstance(ex, dict) and ex.get("adminAccess") is True:
            return True
    return False


#: ValidateResourceClaimUpdate runs the CREATE ObjectMeta rules too; updates may be unconditional.
META = meta.MetaRules(create_rules_on_update=True, unconditional_update=True)

def _opaque(obj: dict[str, Any]) -> list[OpaqueParameters]:
    """The opaque driver parameters of ``spec.devices.config``."""
    devices = mapping(mapping(obj.get("spec")).get("devices"))
    return opaque_parameters(devices.get("config"), FieldPath.root("spec").child("devices", "config"))


RULES = KindRules(
    group="resource.k8s.io", kind="ResourceClaim", versions=("v1", "v1beta2", "v1beta1"), namespaced=True,
    plural="resourceclaims", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings, opaque_parameters=_opaque,
    feasibility=True, capacity_defaulting=True,
)
