"""ResourceClaimTemplate (``resource.k8s.io/v1``): template metadata and the claim spec rules
under ``spec.spec`` (via claimspec), gate strips, spec immutability on UPDATE. No status. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, invalid
from webhook.rules.claims.common import validate_map_keys
from webhook.rules.claims.mutate import default_claim_spec, plan_spec_strips
from webhook.rules.claims.resourceclaim import ADMIN_ACCESS_WARNING, shape_hints, uses_admin_access
from webhook.rules.claims.spec import validate_claim_spec
from webhook.rules.claims.update import validate_spec_immutable
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.names import is_label_value, is_qualified_name, validate_object_meta
from webhook.rules.shape import as_object

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


def validate_template_meta(meta: Any, path: FieldPath) -> list[FieldError]:
    """``ValidateTemplateObjectMeta``: only labels and annotations are checked."""
    errs: list[FieldError] = []
    m = as_object(meta, path, errs)
    if m is None:
        return errs
    labels = as_object(m.get("labels"), path.child("labels"), errs)
    errs.extend(validate_map_keys(labels, path.child("labels"), is_qualified_name))
    for v in (labels or {}).values():
        if isinstance(v, str):
            errs.extend(invalid(path.child("labels"), v, msg) for msg in is_label_value(v))
    errs.extend(validate_map_keys(m.get("annotations"), path.child("annotations"),
                                  lambda k: is_qualified_name(k.lower())))
    return errs


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return []
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=True)
    spec = as_object(obj.get("spec"), SPEC, errs)
    if spec is None:
        return errs
    errs.extend(validate_template_meta(spec.get("metadata"), SPEC.child("metadata")))
    errs.extend(validate_claim_spec(spec.get("spec"), CLAIM_SPEC, ctx))
    return errs


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """RC-UPD-1: the whole ``spec`` (template metadata included) is immutable."""
    if not isinstance(obj, dict) or not isinstance(old, dict):
        return []
    return validate_spec_immutable(obj.get("spec"), old.get("spec"), SPEC)


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    out = [ADMIN_ACCESS_WARNING] if uses_admin_access(_claim_spec(obj)) else []
    return out + shape_hints(_claim_spec(obj), CLAIM_SPEC)


RULES = KindRules(
    group="resource.k8s.io", kind="ResourceClaimTemplate", versions=("v1",), namespaced=True,
    plural="resourceclaimtemplates", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
    feasibility=True, capacity_defaulting=True,
)
