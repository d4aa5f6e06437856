"""PodGroup (``scheduling.k8s.io/v1beta1``): strategy (gate strips, status wipe), PG-* rules.

Owns the PodGroup defaults, the mapping of the seed's v1alpha2 ``spec.podGroupTemplateRef``
spelling onto the served ``spec.workloadRef``, and the spec/status validation of
reference/validation.md §3-§4. Shared field rules live in ``scheduling_common``. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, forbidden, immutable, invalid, required
from webhook.gates import Gate
from webhook.patch import op_add, op_remove
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.names import validate_object_meta
from webhook.rules.scheduling import common as sc
from webhook.rules.shape import is_set, mapping, strip_warning, type_error

SPEC = FieldPath.root("spec")
STATUS = FieldPath.root("status")
KNOWN_SPEC_FIELDS = frozenset({
    "parentCompositePodGroupName", "workloadRef", "schedulingPolicy", "schedulingConstraints",
    "resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy"})
OLD_REF = "podGroupTemplateRef"
SPELLING_WARNING = ("spec.podGroupTemplateRef is the v1alpha2 spelling; mapped it to "
                    "spec.workloadRef{workloadName, templateName}: use that")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy with ``spec.disruptionMode`` defaulted to ``{"single": {}}`` (``+default``)."""
    out = copy.deepcopy(obj)
    if not isinstance(out, dict):
        return out
    spec = out.setdefault("spec", {})
    if spec is None:
        spec = out["spec"] = {}
    if isinstance(spec, dict) and spec.get("disruptionMode") is None:
        spec["disruptionMode"] = {"single": {}}
    return out


# --- mutate: the strategy's PrepareForCreate / PrepareForUpdate ------------------------------


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Status wipe on CREATE, the v1alpha2 spelling map, and the gate strips (CREATE vs UPDATE)."""
    out = Mutation()
    if not isinstance(obj, dict):
        return out
    if ctx.subresource == "status":
        return _mutate_status(obj, ctx)
    if ctx.operation == "CREATE" and "status" in obj:
        out.ops.append(op_remove("/status"))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    out.extend(map_old_spelling(spec))
    old_spec = mapping(mapping(ctx.old).get("spec")) if ctx.is_update() else {}
    if "schedulingConstraints" in spec and not ctx.gates.enabled(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING) \
            and old_spec.get("schedulingConstraints") is None:
        out.ops.append(op_remove(SPEC.child("schedulingConstraints")))
        if spec["schedulingConstraints"] is not None:
            out.warnings.append(strip_warning(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, "spec.schedulingConstraints"))
    if "resourceClaims" in spec and not ctx.gates.enabled(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS) \
            and not is_set(old_spec.get("resourceClaims")):
        out.ops.append(op_remove(SPEC.child("resourceClaims")))
        if is_set(spec["resourceClaims"]):
            out.warnings.append(strip_warning(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS, "spec.resourceClaims"))
    return out


def map_old_spelling(spec: dict[str, Any]) -> Mutation:
    """Replace ``podGroupTemplateRef.workload`` by ``workloadRef`` when that is unambiguous.

    Unambiguous means: the old reference holds only ``workload.{workloadName,
    podGroupTemplateName}`` and ``workloadRef`` is absent or already says the same.
    Otherwise nothing changes and validation reports ``spec.podGroupTemplateRef``.
    """
    ref = spec.get(OLD_REF)
    mapped = _mapped_ref(ref)
    if mapped is None:
        return Mutation()
    current = spec.get("workloadRef")
    if current is not None and current != mapped:
        return Mutation()
    ops = [op_remove(SPEC.child(OLD_REF))]
    if current is None:
        ops.append(op_add(SPEC.child("workloadRef"), mapped))
    return Mutation(ops, [SPELLING_WARNING])


def _mapped_ref(ref: Any) -> dict[str, Any] | None:
    if not isinstance(ref, dict) or set(ref) != {"workload"}:
        return None
    wl = ref["workload"]
    if not isinstance(wl, dict) or not set(wl) <= {"workloadName", "podGroupTemplateName"}:
        return None
    mapped: dict[str, Any] = {}
    if "workloadName" in wl:
        mapped["workloadName"] = wl["workloadName"]
    if "podGroupTemplateName" in wl:
        mapped["templateName"] = wl["podGroupTemplateName"]
    return mapped


def _mutate_status(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """``/status``: resourceClaimStatuses go when the gate is off and the old spec has no claims."""
    out = Mutation()
    status = obj.get("status")
    old_spec = mapping(mapping(ctx.old).get("spec"))
    if isinstance(status, dict) and "resourceClaimStatuses" in status \
            and not ctx.gates.enabled(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS) \
            and not is_set(old_spec.get("resourceClaims")):
        out.ops.append(op_remove(STATUS.child("resourceClaimStatuses")))
        if is_set(status["resourceClaimStatuses"]):
            out.warnings.append(strip_warning(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS, "status.resourceClaimStatuses"))
    return out


# --- validate -----------------------------------------------------------------------------


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: metadata plus every spec rule (status was wiped by :func:`mutate`)."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=True)
    return errs + validate_spec(obj.get("spec"), ctx)


def validate_spec(spec: Any, ctx: RuleContext, old: dict[str, Any] | None = None) -> list[FieldError]:
    """The PG-* spec rules; with ``old`` (UPDATE) unchanged fields are not re-validated."""
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return [type_error(SPEC, spec, "object")]
    errs: list[FieldError] = []
    if OLD_REF in spec:
        errs.append(_old_spelling_error(spec))
    if sc.changed(spec, old, "workloadRef"):
        errs += validate_workload_ref(spec.get("workloadRef"), SPEC.child("workloadRef"))
    if sc.changed(spec, old, "parentCompositePodGroupName") or sc.changed(spec, old, "workloadRef"):
        errs += _validate_parent(spec, ctx)
    errs += sc.validate_group_fields(spec, SPEC, ctx, old)
    return errs


def _old_spelling_error(spec: dict[str, Any]) -> FieldError:
    path = SPEC.child(OLD_REF)
    if spec.get("workloadRef") is not None and _mapped_ref(spec[OLD_REF]) is not None:
        return forbidden(path, "v1alpha2 field that conflicts with spec.workloadRef; "
                               "set only spec.workloadRef{workloadName, templateName}")
    return forbidden(path, "not a field of scheduling.k8s.io/v1beta1 (v1alpha2 spelling); "
                           "use spec.workloadRef{workloadName, templateName}")


def validate_workload_ref(ref: Any, path: FieldPath) -> list[FieldError]:
    """PG-WR-1/2: a DNS-subdomain ``workloadName`` and a DNS-label ``templateName``, both required."""
    if ref is None:
        return []
    if not isinstance(ref, dict):
        return [type_error(path, ref, "object")]
    return (sc.check_long_name(ref.get("workloadName"), path.child("workloadName"), required_=True)
            + sc.check_short_name(ref.get("templateName"), path.child("templateName"), required_=True))


def _validate_parent(spec: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """PG-PAR-1..3: Forbidden while CompositePodGroup is off; else a DNS subdomain needing workloadRef."""
    value = spec.get("parentCompositePodGroupName")
    path = SPEC.child("parentCompositePodGroupName")
    if value is None:
        return []
    if not ctx.gates.enabled(Gate.COMPOSITE_POD_GROUP):
        return [forbidden(path, f"requires feature gate {Gate.COMPOSITE_POD_GROUP}")]
    errs = sc.check_long_name(value, path, required_=False)
    if spec.get("workloadRef") is None:
        errs.append(required(SPEC.child("workloadRef"),
                             "must be set when parentCompositePodGroupName is set"))
    return errs


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE of the main resource or of ``/status`` (``ctx.subresource``)."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    old = old if isinstance(old, dict) else {}
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=True)
    if ctx.subresource == "status":
        # The apiserver copies the old spec; only the status is the user's.
        return errs + validate_status(obj.get("status"), mapping(old.get("spec")))
    spec, old_spec = obj.get("spec"), mapping(old.get("spec"))
    errs += validate_spec(spec, ctx, old_spec)
    if isinstance(spec, dict):
        errs += _validate_spec_update(spec, old_spec, ctx)
    return errs


def _validate_spec_update(spec: dict[str, Any], old: dict[str, Any], ctx: RuleContext
                          ) -> list[FieldError]:
    """PG-WR-3, PG-PAR-2, PG-RC-6, PG-SC-4, PG-DM-2, PG-PRI-3, PG-PP-2, PG-POL-U1/U2."""
    errs: list[FieldError] = []
    if spec.get("workloadRef") != old.get("workloadRef"):
        errs.append(immutable(SPEC.child("workloadRef"), spec.get("workloadRef")))
    if ctx.gates.enabled(Gate.COMPOSITE_POD_GROUP) and \
            spec.get("parentCompositePodGroupName") != old.get("parentCompositePodGroupName"):
        errs.append(immutable(SPEC.child("parentCompositePodGroupName"),
                              spec.get("parentCompositePodGroupName")))
    errs += sc.validate_group_fields_update(spec, old, SPEC, ctx, constraints_always_immutable=False)
    return errs


def validate_status(status: Any, spec: dict[str, Any]) -> list[FieldError]:
    """PG-ST-1..3: conditions, and resourceClaimStatuses that name entries of spec.resourceClaims."""
    if status is None:
        return []
    if not isinstance(status, dict):
        return [type_error(STATUS, status, "object")]
    errs = sc.validate_conditions(status.get("conditions"), STATUS.child("conditions"))
    path = STATUS.child("resourceClaimStatuses")
    items, lerrs = sc.check_list(status.get("resourceClaimStatuses"), path, sc.RESOURCE_CLAIMS_MAX)
    errs += lerrs + sc.map_list_duplicates(items, path)
    claim_names = {c.get("name") for c in spec.get("resourceClaims") or [] if isinstance(c, dict)}
    for i, item in enumerate(items):
        ipath = path.index(i)
        if not isinstance(item, dict):
            errs.append(type_error(ipath, item, "object"))
            continue
        name = item.get("name")
        if not isinstance(name, str) or name not in claim_names:
            errs.append(invalid(ipath.child("name"), name,
                                "must match the name of an entry in `spec.resourceClaims`"))
        if item.get("resourceClaimName") is not None:
            errs += sc.check_long_name(item["resourceClaimName"], ipath.child("resourceClaimName"))
    return errs


# --- warnings -----------------------------------------------------------------------------


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    """The GenericWorkload-off note and ``unknown field`` notes for the spec."""
    out = sc.gate_off_warning(ctx, "scheduling.k8s.io/v1beta1 PodGroup")
    spec = obj.get("spec") if isinstance(obj, dict) else None
    # podGroupTemplateRef left in place is already a validation error naming spec.workloadRef.
    out += sc.unknown_field_warnings(spec, KNOWN_SPEC_FIELDS | {OLD_REF})
    return out


RULES = KindRules(
    group=sc.GROUP, kind="PodGroup", versions=("v1beta1",), namespaced=True,
    plural="podgroups", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
    feasibility=True,
)
