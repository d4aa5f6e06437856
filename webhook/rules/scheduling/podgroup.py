"""PodGroup (``scheduling.k8s.io/v1beta1``): strategy (gate strips, status wipe), PG-* rules.

Owns the PodGroup defaults, the mapping of the seed's v1alpha2 ``spec.podGroupTemplateRef``
spelling onto the served ``spec.workloadRef``, and the spec/status validation of docs/rules.md
("PodGroup"). Shared field rules live in ``scheduling_common``. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, forbidden, invalid, required
from webhook.gates import Gate
from webhook.patch import op_add, op_remove
from webhook.rules import meta
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import NO_OLD
from webhook.rules.kind import KindRules
from webhook.rules.scheduling import common as sc
from webhook.rules.scheduling import fields
from webhook.rules.scheduling.declarative import Field
from webhook.rules.scheduling.plain import is_plain_podgroup_spec
from webhook.rules.shape import is_set, mapping, strip_warning, type_error

SPEC = FieldPath.root("spec")
STATUS = FieldPath.root("status")
KNOWN_SPEC_FIELDS = frozenset({
    "parentCompositePodGroupName", "workloadRef", "schedulingPolicy", "schedulingConstraints",
    "resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy"})
OLD_REF = "podGroupTemplateRef"
#: The keys no ``unknown field`` note names (podGroupTemplateRef left in place is already a
#: validation error naming spec.workloadRef).
NOTED_AS_KNOWN = KNOWN_SPEC_FIELDS | {OLD_REF}
#: Fields the strategy drops while their gate is off (PrepareForCreate / PrepareForUpdate).
STRIPPED = (("schedulingConstraints", Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING),
            ("resourceClaims", Gate.DRA_WORKLOAD_RESOURCE_CLAIMS),
            ("preemptionPolicy", Gate.POD_GROUP_PREEMPTION_POLICY),
            ("parentCompositePodGroupName", Gate.COMPOSITE_POD_GROUP))
PREEMPTION_DEFAULT = "PreemptLowerPriority"
#: The PriorityClasses the apiserver creates itself, with their fixed values.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
SPELLING_WARNING = ("spec.podGroupTemplateRef is the v1alpha2 spelling; mapped it to "
                    "spec.workloadRef{workloadName, templateName}: use that")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy as the apiserver hands it to webhooks: ``spec.disruptionMode`` defaulted to
    ``{"single": {}}`` (``+default``), and the ``priority`` the Priority admission plugin gives a
    PodGroup naming one of the two PriorityClasses every cluster has (their values are fixed;
    other classes need a lookup, which only the plugin in a cluster can do)."""
    out = copy.deepcopy(obj)
    if not isinstance(out, dict):
        return out
    spec = out.setdefault("spec", {})
    if spec is None:
        spec = out["spec"] = {}
    if isinstance(spec, dict):
        if spec.get("disruptionMode") is None:
            spec["disruptionMode"] = {"single": {}}
        cls = spec.get("priorityClassName")
        if spec.get("priority") is None and isinstance(cls, str) and cls in SYSTEM_PRIORITY_CLASSES:
            spec["priority"] = SYSTEM_PRIORITY_CLASSES[cls]
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
    if OLD_REF in spec:
        out.extend(map_old_spelling(spec))
    old_spec = mapping(mapping(ctx.old).get("spec")) if ctx.is_update() else {}
    for key, gate in STRIPPED:
        # A field of a gate that is off goes, unless the stored object uses it already.
        if key in spec and not ctx.gates.enabled(gate) and not is_set(old_spec.get(key)):
            out.ops.append(op_remove(SPEC.child(key)))
            if is_set(spec[key]):
                out.warnings.append(strip_warning(gate, f"spec.{key}"))
    if ctx.gates.enabled(Gate.POD_GROUP_PREEMPTION_POLICY) and spec.get("preemptionPolicy") is None:
        # The apiserver's default when it decodes a PodGroup (SetDefaults_PodGroup), UPDATEs too.
        out.ops.append(op_add(SPEC.child("preemptionPolicy"), PREEMPTION_DEFAULT))
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
    """CREATE: metadata and every spec rule (status was wiped by :func:`mutate`)."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    spec = obj.get("spec")
    errs = meta.check(obj, None, ctx, namespaced=True) + validate_spec(spec, NO_OLD, ctx)
    if isinstance(spec, dict) and spec.get("parentCompositePodGroupName") is not None \
            and spec.get("workloadRef") is None:
        # ValidatePodGroup's own rule (the declarative one is alpha): CREATE only.
        errs.append(required(SPEC.child("workloadRef"), "must be set when parentCompositePodGroupName is set"))
    return errs


def validate_spec(spec: Any, old: Any, ctx: RuleContext) -> list[FieldError]:
    """The declarative PodGroupSpec rules against ``old`` (the old spec, or NO_OLD on CREATE): none
    to run for a spec ``plain`` vouches for on CREATE."""
    if old is NO_OLD and is_plain_podgroup_spec(spec, ctx.gates):
        return []
    return all_spec_rules(spec, old, ctx)


def all_spec_rules(spec: Any, old: Any, ctx: RuleContext) -> list[FieldError]:
    """The spec rules without the shortcut."""
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return [type_error(SPEC, spec, "object")]
    errs: list[FieldError] = []
    if OLD_REF in spec:
        errs.append(_old_spelling_error(spec))
    return errs + fields.podgroup_spec(Field(SPEC, spec, old, fields.PODGROUP_SPEC, ctx))


def _old_spelling_error(spec: dict[str, Any]) -> FieldError:
    path = SPEC.child(OLD_REF)
    if spec.get("workloadRef") is not None and _mapped_ref(spec[OLD_REF]) is not None:
        return forbidden(path, "v1alpha2 field that conflicts with spec.workloadRef; "
                               "set only spec.workloadRef{workloadName, templateName}")
    return forbidden(path, "not a field of scheduling.k8s.io/v1beta1 (v1alpha2 spelling); "
                           "use spec.workloadRef{workloadName, templateName}")


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE of the main resource or of ``/status`` (``ctx.subresource``)."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    old = old if isinstance(old, dict) else {}
    if refused := meta.preconditions(obj, old, namespaced=True):
        return refused
    errs = meta.check(obj, old, ctx, namespaced=True)
    if ctx.subresource == "status":
        # The apiserver copies the old spec; only the status is the user's.
        return errs + validate_status(obj.get("status"), mapping(old.get("spec")))
    return errs + validate_spec(obj.get("spec"), mapping(old.get("spec")), ctx)


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
    out += sc.unknown_field_warnings(spec, NOTED_AS_KNOWN)
    return out


RULES = KindRules(
    group=sc.GROUP, kind="PodGroup", versions=("v1beta1",), namespaced=True,
    plural="podgroups", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
    feasibility=True,
)
