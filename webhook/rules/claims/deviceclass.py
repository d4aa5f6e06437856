"""DeviceClass (``resource.k8s.io/v1``, cluster-scoped): metadata, selectors (CEL), config,
extendedResourceName, by hand and by the declarative tags. The spec is mutable; on UPDATE an
unchanged selector list is not compiled again, nor an unchanged config list size-checked
(upstream's ``stored`` ratcheting). Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath
from webhook.rules import meta
from webhook.rules.claims import declarative
from webhook.rules.claims.common import (
    CONFIG_MAX,
    opaque_parameters,
    validate_opaque_config,
    validate_selectors,
    within,
)
from webhook.rules.claims.names import extended_resource_name
from webhook.rules.claims.update import equal
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import NO_OLD, merge
from webhook.rules.kind import KindRules, OpaqueParameters
from webhook.rules.shape import as_list, as_object, mapping, type_error

SPEC = FieldPath.root("spec")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Nothing to drop: DRAExtendedResource, the one gate of a DeviceClass field, is GA and locked on in 1.37."""
    return Mutation()


def _validate(obj: dict[str, Any], ctx: RuleContext, old: Any) -> list[FieldError]:
    """``ValidateDeviceClass``: the selectors and the config count as stored (not compiled or
    size-checked again) when an UPDATE leaves each list as it was."""
    errs: list[FieldError] = []
    spec = as_object(obj.get("spec"), SPEC, errs)
    if spec is None:
        return errs
    old_spec = mapping(mapping(old).get("spec")) if old is not NO_OLD else {}
    stored = old is not NO_OLD and equal(spec.get("selectors"), old_spec.get("selectors"))
    errs.extend(validate_selectors(spec.get("selectors"), SPEC.child("selectors"), ctx.gates, stored=stored))
    stored = old is not NO_OLD and equal(spec.get("config"), old_spec.get("config"))
    cp = SPEC.child("config")
    configs = as_list(spec.get("config"), cp, errs) or []
    if within(configs, CONFIG_MAX, cp, errs):
        for i, cfg in enumerate(configs):
            cfg_d = as_object(cfg, cp.index(i), errs)
            if cfg_d is not None:
                errs.extend(validate_opaque_config(cfg_d, cp.index(i), stored))
    ern = spec.get("extendedResourceName")
    if ern is not None:
        ep = SPEC.child("extendedResourceName")
        errs.extend(extended_resource_name(ern, ep) if isinstance(ern, str) else [type_error(ep, ern, "string")])
    return merge(errs, declarative.device_class_spec(spec, NO_OLD if old is NO_OLD else old_spec, SPEC))


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return []
    return meta.check(obj, None, ctx, namespaced=False, rules=META) + _validate(obj, ctx, NO_OLD)


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return []
    return meta.check(obj, old, ctx, namespaced=False, rules=META) + _validate(obj, ctx, old)


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    return []


#: ValidateObjectMetaWithOpts: the generated name is checked, a generateName itself is not; the
#: strategy sets generation; updates may be unconditional.
META = meta.MetaRules(generate_name_checked=False, generation_set_on_create=True, unconditional_update=True)

def _opaque(obj: dict[str, Any]) -> list[OpaqueParameters]:
    """The opaque driver parameters of ``spec.config``."""
    return opaque_parameters(mapping(obj.get("spec")).get("config"), FieldPath.root("spec").child("config"))


RULES = KindRules(
    group="resource.k8s.io", kind="DeviceClass", versions=("v1", "v1beta2", "v1beta1"), namespaced=False,
    plural="deviceclasses", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings, opaque_parameters=_opaque, impact=True,
)
