"""ResourceClaimTemplate (``resource.k8s.io/v1``): template metadata and the claim spec rules
under ``spec.spec`` (via ``spec.py``), gate strips; an UPDATE is validated whole again and its
spec must not change. No status. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath
from webhook.rules import meta
from webhook.rules.claims.common import opaque_parameters
from webhook.rules.claims.mutate import default_claim_spec, plan_spec_strips
from webhook.rules.claims.resourceclaim import ADMIN_ACCESS_WARNING, shape_hints, uses_admin_access
from webhook.rules.claims.spec import validate_claim_spec
from webhook.rules.claims.update import validate_spec_immutable
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import NO_OLD
from webhook.rules.kind import KindRules, OpaqueParameters
from webhook.rules.shape import as_object, mapping

SPEC = FieldPath.root("spec")
CLAIM_SPEC = SPEC.child("spec")


def _claim_spec(obj: Any) -> Any:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec.get("spec") if isinstance(spec, dict) else None


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    default_claim_spec(_claim_spec(out))
    return out


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Gate strips under ``spec.spec`` (in use = the old template's spec uses the field)."""
    if not isinstance(obj, dict):
        return Mutation()
    return plan_spec_strips(_claim_spec(obj), CLAIM_SPEC, ctx, _claim_spec(ctx.old))


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return []
    return meta.check(obj, None, ctx, namespaced=True, rules=META) + _validate_spec(obj, ctx, NO_OLD)


def _validate_spec(obj: dict[str, Any], ctx: RuleContext, old: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = as_object(obj.get("spec"), SPEC, errs)
    if spec is None:
        return errs
    errs.extend(meta.validate_template_meta(spec.get("metadata"), SPEC.child("metadata")))
    errs.extend(validate_claim_spec(spec.get("spec"), CLAIM_SPEC, ctx,
                                    NO_OLD if old is NO_OLD else _claim_spec(old)))
    return errs


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """RC-UPD-1: the new template is validated whole (as on CREATE), and its ``spec`` (template
    metadata included) must not change."""
    if not isinstance(obj, dict) or not isinstance(old, dict):
        return []
    errs = meta.check(obj, old, ctx, namespaced=True, rules=META)
    return errs + _validate_spec(obj, ctx, old) + validate_spec_immutable(obj.get("spec"), old.get("spec"), SPEC)


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    out = [ADMIN_ACCESS_WARNING] if uses_admin_access(_claim_spec(obj)) else []
    return out + shape_hints(_claim_spec(obj), CLAIM_SPEC)


#: The strategy validates an UPDATE with the CREATE rules too; updates may be unconditional.
META = meta.MetaRules(create_rules_on_update=True, unconditional_update=True)

def _opaque(obj: dict[str, Any]) -> list[OpaqueParameters]:
    """The opaque driver parameters of ``spec.spec.devices.config``."""
    devices = mapping(mapping(mapping(obj.get("spec")).get("spec")).get("devices"))
    return opaque_parameters(devices.get("config"), FieldPath.root("spec").child("spec", "devices", "config"))


RULES = KindRules(
    group="resource.k8s.io", kind="ResourceClaimTemplate", versions=("v1", "v1beta2", "v1beta1"), namespaced=True,
    plural="resourceclaimtemplates", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings, opaque_parameters=_opaque,
    feasibility=True, capacity_defaulting=True,
)
