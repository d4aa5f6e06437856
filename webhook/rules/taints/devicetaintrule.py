"""DeviceTaintRule (``resource.k8s.io/v1``, cluster-scoped): metadata, the device selector, the
taint, the status subresource, and the strategy's effects. Pure.

What the 1.37 apiserver does (``ValidateDeviceTaintRule``, ``…Update``, ``…StatusUpdate`` and the
registry strategy), restated:

- CREATE: the strategy wipes ``status`` (a ``remove /status`` op) and sets ``generation``; the
  selector's ``driver``/``pool``/``device``, when set, must be a driver name, a pool name and a
  device name (DTR-SEL-1..3); the taint is checked as a device's taint (DTR-TNT-1..3).
- UPDATE of the main resource: the stored status is kept; everything is checked again except an
  unchanged effect (so an effect a later release adds ratchets); ``resourceVersion`` is required
  (v1 refuses unconditional updates).
- UPDATE of ``/status``: the stored spec is kept; conditions must be valid ``metav1.Condition``s
  with unique types, at most 8 (DTR-ST-1, DTR-ST-2).

The declarative tags of the type check the effect only (required, enum, ratcheted when
unchanged), exactly as the handwritten rule does, so they add nothing here. No gate changes what
the apiserver accepts: with ``DRADeviceTaints``/``DRADeviceTaintRules`` off it still serves,
validates and stores DeviceTaintRules (only the scheduler and the eviction controller ignore
them), so there is no strip, only a warning.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, too_many
from webhook.gates import Gate
from webhook.rules import meta
from webhook.rules.claims.status import validate_conditions
from webhook.rules.context import Mutation, RuleContext, plan_status_split
from webhook.rules.kind import KindRules
from webhook.rules.shape import as_list, as_object, mapping
from webhook.rules.slices.common import validate_dns_label, validate_driver_name, validate_pool_name
from webhook.rules.slices.devices import validate_taint

SPEC = FieldPath.root("spec")
STATUS = FieldPath.root("status")
SELECTOR = SPEC.child("deviceSelector")
CONDITIONS = STATUS.child("conditions")
CONDITIONS_MAX = 8
NO_SELECTOR_WARNING = "spec.deviceSelector is not set: this DeviceTaintRule selects no device"
GATE_OFF_WARNING = ("{gate} feature gate is off: the apiserver stores this DeviceTaintRule, "
                    "but the scheduler and the eviction controller ignore it")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy. The apiserver's one default, ``spec.taint.timeAdded`` (the time of the write),
    is a server-set field that carries no rule (docs/upstream-differences.md)."""
    return copy.deepcopy(obj)


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """The strategy as JSON Patch: status wiped on CREATE, the stored status kept on an UPDATE of
    the main resource, the stored spec kept on an UPDATE of ``/status``. Nothing is gated."""
    return Mutation(plan_status_split(obj, ctx) if isinstance(obj, dict) else [])


def _validate_spec(spec_raw: Any, old_spec: Any) -> list[FieldError]:
    """``validateDeviceTaintRuleSpec``: the selector (each part only when set) and the taint; on
    UPDATE (``old_spec`` not None) the effect only when it changed."""
    errs: list[FieldError] = []
    spec = as_object(spec_raw, SPEC, errs) or {}
    sel = as_object(spec.get("deviceSelector"), SELECTOR, errs)
    if sel is not None:
        if sel.get("driver") is not None:
            errs += validate_driver_name(sel["driver"], SELECTOR.child("driver"))
        if sel.get("pool") is not None:
            errs += validate_pool_name(sel["pool"], SELECTOR.child("pool"))
        if sel.get("device") is not None:
            errs += validate_dns_label(sel["device"], SELECTOR.child("device"))
    tp = SPEC.child("taint")
    taint = as_object(spec.get("taint"), tp, errs) or {}
    old_effect = mapping(mapping(old_spec).get("taint")).get("effect") if old_spec is not None else None
    changed = old_spec is None or (old_effect or "") != (taint.get("effect") or "")
    return errs + validate_taint(taint, tp, effect=changed)


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: metadata, selector and taint (status was wiped by mutate)."""
    if not isinstance(obj, dict):
        return []
    return meta.check(obj, None, ctx, namespaced=False, rules=META) + _validate_spec(obj.get("spec"), None)


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE of ``/status``: the conditions. Of the main resource: metadata and the spec again
    (the effect only when it changed)."""
    if not isinstance(obj, dict) or not isinstance(old, dict):
        return []
    errs = meta.check(obj, old, ctx, namespaced=False, rules=META)
    if ctx.subresource == "status":
        return errs + _validate_status(obj.get("status"))
    return errs + _validate_spec(obj.get("spec"), mapping(old.get("spec")))


def _validate_status(status_raw: Any) -> list[FieldError]:
    """DTR-ST-1: every condition a valid ``metav1.Condition``, types unique; DTR-ST-2: at most 8."""
    errs: list[FieldError] = []
    status = as_object(status_raw, STATUS, errs) or {}
    conditions = as_list(status.get("conditions"), CONDITIONS, errs) or []
    errs += validate_conditions(conditions, CONDITIONS)
    if len(conditions) > CONDITIONS_MAX:
        errs.append(too_many(CONDITIONS, len(conditions), CONDITIONS_MAX))
    return errs


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    """A rule without a selector taints nothing; with the rules' gate off, the scheduler ignores it."""
    if not isinstance(obj, dict) or ctx.subresource == "status":
        return []
    out = [] if mapping(obj.get("spec")).get("deviceSelector") is not None else [NO_SELECTOR_WARNING]
    for gate in (Gate.DRA_DEVICE_TAINTS, Gate.DRA_DEVICE_TAINT_RULES):
        if not ctx.gates.enabled(gate):
            return [*out, GATE_OFF_WARNING.format(gate=gate)]
    return out


#: ValidateObjectMeta with DNS-subdomain names; the strategy sets generation on CREATE; v1 refuses
#: unconditional updates (only v1alpha3/v1beta2 requests may omit resourceVersion).
META = meta.MetaRules(generation_set_on_create=True)

RULES = KindRules(
    group="resource.k8s.io", kind="DeviceTaintRule", versions=("v1", "v1beta2"), namespaced=False,
    plural="devicetaintrules", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings, impact=True,
)
