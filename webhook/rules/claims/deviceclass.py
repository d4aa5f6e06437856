"""DeviceClass (``resource.k8s.io/v1``, cluster-scoped): metadata, selectors (CEL), config,
extendedResourceName. The spec is mutable; on UPDATE selectors already stored are not
re-compiled (upstream's ``stored`` ratcheting). Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, invalid
from webhook.rules.claims.common import (
    CONFIG_MAX,
    validate_opaque_config,
    validate_selectors,
    within,
)
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.names import is_qualified_name, validate_object_meta
from webhook.rules.shape import as_list, as_object, type_error

SPEC = FieldPath.root("spec")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Nothing to drop: DRAExtendedResource, the one gate of a DeviceClass field, is GA and locked on in 1.37."""
    return Mutation()


def _stored_expressions(old: Any) -> frozenset[str]:
    spec = old.get("spec") if isinstance(old, dict) else None
    sels = spec.get("selectors") if isinstance(spec, dict) else None
    out = set()
    for s in sels if isinstance(sels, list) else []:
        cel = s.get("cel") if isinstance(s, dict) else None
        if isinstance(cel, dict) and isinstance(cel.get("expression"), str):
            out.add(cel["expression"])
    return frozenset(out)


def _validate(obj: dict[str, Any], stored: frozenset[str]) -> list[FieldError]:
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=False)
    spec = as_object(obj.get("spec"), SPEC, errs)
    if spec is None:
        return errs
    errs.extend(validate_selectors(spec.get("selectors"), SPEC.child("selectors"), stored))
    cp = SPEC.child("config")
    configs = as_list(spec.get("config"), cp, errs) or []
    if within(configs, CONFIG_MAX, cp, errs):
        for i, cfg in enumerate(configs):
            cfg_d = as_object(cfg, cp.index(i), errs)
            if cfg_d is not None:
                errs.extend(validate_opaque_config(cfg_d, cp.index(i)))
    ern = spec.get("extendedResourceName")
    if ern is not None:
        ep = SPEC.child("extendedResourceName")
        if not isinstance(ern, str):
            errs.append(type_error(ep, ern, "string"))
        else:
            errs.extend(invalid(ep, ern, m) for m in is_qualified_name(ern))
    return errs


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    return _validate(obj, frozenset()) if isinstance(obj, dict) else []


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    return _validate(obj, _stored_expressions(old)) if isinstance(obj, dict) else []


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    return []


RULES = KindRules(
    group="resource.k8s.io", kind="DeviceClass", versions=("v1",), namespaced=False,
    plural="deviceclasses", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
)
