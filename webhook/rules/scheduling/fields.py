"""The field rules of the v1beta1 scheduling types, one function per field, in upstream's terms.

Each function takes a :class:`~webhook.rules.scheduling.declarative.Field` (path, new and old
value, request) and follows the tags of that field on the upstream type: its gatekeeping checks
first, its content only when none of them fired (``declarative`` explains the machinery). The
types below describe the Go shape of every value, for ratcheting and for what counts as unset.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.fielderrors import FieldError
from webhook.gates import Gate
from webhook.rules.names import is_dns1123_label, is_dns1123_subdomain, is_path_segment_name, is_qualified_name
from webhook.rules.scheduling.declarative import (
    INT,
    PINT,
    PSTR,
    STR,
    Field,
    GoType,
    each,
    enum,
    gated,
    gatekeep,
    immutable,
    int_bound,
    max_items,
    named,
    no_add_no_remove,
    no_set_no_unset,
    optional,
    optional_rule,
    required_,
    rule,
    text_format,
    union,
    unique,
)

RESOURCE_CLAIMS_MAX = 4
TOPOLOGY_CONSTRAINTS_MAX = 1
TEMPLATES_MAX = 8
HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
#: Composite trees deeper than this are not walked (the depth rule fails at 4 already); hostile
#: nesting cannot exhaust the stack.
WALK_LIMIT = 12

# --- the Go shapes -----------------------------------------------------------------------------

EMPTY = GoType("pstruct")
WORKLOAD_REFERENCE = GoType("pstruct", {"workloadName": STR, "templateName": STR})
POLICY = GoType("struct", {"basic": EMPTY, "gang": GoType("pstruct", {"minCount": INT})})
COMPOSITE_POLICY = GoType("struct", {"basic": EMPTY, "gang": GoType("pstruct", {"minGroupCount": INT})})
TOPOLOGY = GoType("list", item=GoType("struct", {"key": STR}))
CONSTRAINTS = GoType("pstruct", {"topology": TOPOLOGY})
CLAIM = GoType("struct", {"name": STR, "resourceClaimName": PSTR, "resourceClaimTemplateName": PSTR})
CLAIMS = GoType("list", item=CLAIM)
DISRUPTION = GoType("pstruct", {"single": EMPTY, "all": EMPTY})
TEMPLATE = named("PodGroupTemplate", GoType("struct", {
    "name": STR, "schedulingPolicy": POLICY, "schedulingConstraints": CONSTRAINTS, "resourceClaims": CLAIMS,
    "disruptionMode": DISRUPTION, "priorityClassName": STR, "priority": PINT, "preemptionPolicy": PSTR}))
TEMPLATES = GoType("list", item=TEMPLATE)
COMPOSITES = GoType("list", item="CompositePodGroupTemplate")
COMPOSITE = named("CompositePodGroupTemplate", GoType("struct", {
    "name": STR, "schedulingPolicy": COMPOSITE_POLICY, "schedulingConstraints": CONSTRAINTS,
    "disruptionMode": DISRUPTION, "priorityClassName": STR, "priority": PINT, "preemptionPolicy": PSTR,
    "podGroupTemplates": TEMPLATES, "compositePodGroupTemplates": COMPOSITES}))
PODGROUP_SPEC = GoType("struct", {
    "parentCompositePodGroupName": PSTR, "workloadRef": WORKLOAD_REFERENCE, "schedulingPolicy": POLICY,
    "schedulingConstraints": CONSTRAINTS, "resourceClaims": CLAIMS, "disruptionMode": DISRUPTION,
    "priorityClassName": STR, "priority": PINT, "preemptionPolicy": PSTR})
CONTROLLER_REF = GoType("pstruct", {"apiGroup": STR, "kind": STR, "name": STR})
WORKLOAD_SPEC = GoType("struct", {"controllerRef": CONTROLLER_REF, "podGroupTemplates": TEMPLATES,
                                  "compositePodGroupTemplates": COMPOSITES})


def _fields(t: GoType) -> Mapping[str, GoType | str]:
    return t.fields


# --- names --------------------------------------------------------------------------------------


@rule
def required_name(f: Field, check: Any) -> list[FieldError]:
    """``+k8s:required`` and a name format (short = DNS label, long = DNS subdomain, ...)."""
    errs, stop = gatekeep(required_(f))
    return errs if stop else errs + text_format(f, check)


@optional_rule
def optional_name(f: Field, check: Any) -> list[FieldError]:
    errs, stop = gatekeep(optional(f))
    return errs if stop else errs + text_format(f, check)


# --- schedulingPolicy -----------------------------------------------------------------------------


@rule
def scheduling_policy(f: Field, count: str = "minCount") -> list[FieldError]:
    """The basic/gang union; ``basic`` immutable; ``gang`` can be neither set nor cleared, its
    count required and at least 1 (and free to change)."""
    types = _fields(COMPOSITE_POLICY if count == "minGroupCount" else POLICY)
    return (union(f, ("basic", "gang"), types) + _basic(f.child("basic", EMPTY))
            + _gang(f.child("gang", types["gang"]), count))


@optional_rule
def _basic(f: Field) -> list[FieldError]:
    return gatekeep(immutable(f), optional(f))[0]


@optional_rule
def _gang(f: Field, count: str) -> list[FieldError]:
    errs, stop = gatekeep(optional(f), no_set_no_unset(f))
    return errs if stop else errs + _count(f.child(count, INT))


@rule
def _count(f: Field) -> list[FieldError]:
    errs, stop = gatekeep(required_(f))
    return errs if stop else errs + int_bound(f, minimum=1)


# --- schedulingConstraints ------------------------------------------------------------------------


@optional_rule
def scheduling_constraints(f: Field, *, gate_governs: bool, immutable_when_on_only: bool = False) -> list[FieldError]:
    """Topology constraints (at most one, each a label key). PodGroup and template constraints are
    governed by TopologyAwareWorkloadScheduling (a PodGroup's immutable only with it on);
    composite templates' are not gated."""
    gate = Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING
    checks = [gated(f, gate) if gate_governs else optional(f)]
    if not immutable_when_on_only or f.ctx.gates.enabled(gate):
        checks.append(immutable(f))
    errs, stop = gatekeep(*checks)
    return errs if stop else errs + _topology(f.child("topology", TOPOLOGY))


@optional_rule
def _topology(f: Field) -> list[FieldError]:
    errs, stop = gatekeep(max_items(f, TOPOLOGY_CONSTRAINTS_MAX), optional(f))
    if stop:
        return errs
    return errs + each(f, None, lambda item: required_name(item.child("key", STR), is_qualified_name))


# --- resourceClaims ---------------------------------------------------------------------------------


@optional_rule
def resource_claims(f: Field) -> list[FieldError]:
    """Immutable; at most 4; unique names; each a DNS-label name and exactly one of a claim or a
    template name (DNS subdomains)."""
    errs, stop = gatekeep(immutable(f), max_items(f, RESOURCE_CLAIMS_MAX), optional(f))
    return errs if stop else errs + unique(f, "name") + each(f, "name", _claim)


def _claim(f: Field) -> list[FieldError]:
    members = ("resourceClaimName", "resourceClaimTemplateName")
    errs = union(f, members, _fields(CLAIM)) + required_name(f.child("name", STR), is_dns1123_label)
    for m in members:
        errs += optional_name(f.child(m, PSTR), is_dns1123_subdomain)
    return errs


# --- disruptionMode, priority, preemptionPolicy -------------------------------------------------------


@rule
def disruption_mode(f: Field, *, required: bool) -> list[FieldError]:
    """Immutable; the single/all union (required on a PodGroup, where it is defaulted)."""
    errs, stop = gatekeep(immutable(f), required_(f) if required else optional(f))
    if stop:
        return errs
    types = _fields(DISRUPTION)
    return errs + union(f, ("single", "all"), types) + _empty(f.child("single", EMPTY)) + _empty(f.child("all", EMPTY))


@optional_rule
def _empty(f: Field) -> list[FieldError]:
    """An optional member that is an empty struct: nothing in it to check but its type."""
    return []


@optional_rule
def priority_class_name(f: Field) -> list[FieldError]:
    """Immutable; "" is unset; otherwise a DNS subdomain."""
    errs, stop = gatekeep(immutable(f), optional(f))
    return errs if stop else errs + text_format(f, is_dns1123_subdomain)


@optional_rule
def priority(f: Field) -> list[FieldError]:
    """Immutable; at most 1000000000 (negatives allowed)."""
    errs, stop = gatekeep(immutable(f), optional(f))
    return errs if stop else errs + int_bound(f, maximum=HIGHEST_USER_PRIORITY)


@optional_rule
def preemption_policy(f: Field) -> list[FieldError]:
    """Forbidden while PodGroupPreemptionPolicy is off; immutable; Never or PreemptLowerPriority."""
    errs, stop = gatekeep(gated(f, Gate.POD_GROUP_PREEMPTION_POLICY), immutable(f))
    return errs if stop else errs + enum(f, PREEMPTION_POLICIES)


# --- templates -----------------------------------------------------------------------------------------


def pod_group_template(f: Field) -> list[FieldError]:
    """One PodGroupTemplate (a Workload's, or a composite template's child)."""
    return (required_name(f.child("name", STR), is_dns1123_label)
            + scheduling_policy(f.child("schedulingPolicy", POLICY))
            + scheduling_constraints(f.child("schedulingConstraints", CONSTRAINTS), gate_governs=True)
            + resource_claims(f.child("resourceClaims", CLAIMS))
            + disruption_mode(f.child("disruptionMode", DISRUPTION), required=False)
            + _priorities(f))


def _priorities(f: Field) -> list[FieldError]:
    return (priority_class_name(f.child("priorityClassName", STR)) + priority(f.child("priority", PINT))
            + preemption_policy(f.child("preemptionPolicy", PSTR)))


@optional_rule
def template_list(f: Field, item: Any, *, gate: Gate | None = None) -> list[FieldError]:
    """A list of templates keyed by name: at most 8, none added or removed on UPDATE, unique names,
    each item (against the old item of the same name)."""
    errs, stop = gatekeep(gated(f, gate) if gate else optional(f), max_items(f, TEMPLATES_MAX),
                          no_add_no_remove(f, "name"))
    return errs if stop else errs + unique(f, "name") + each(f, "name", item)


def composite_template(f: Field, depth: int = 1) -> list[FieldError]:
    """One CompositePodGroupTemplate at ``depth`` (1 = a Workload's own)."""
    errs = (required_name(f.child("name", STR), is_dns1123_label)
            + scheduling_policy(f.child("schedulingPolicy", COMPOSITE_POLICY), count="minGroupCount")
            + scheduling_constraints(f.child("schedulingConstraints", CONSTRAINTS), gate_governs=False)
            + disruption_mode(f.child("disruptionMode", DISRUPTION), required=False)
            + _priorities(f) + template_list(f.child("podGroupTemplates", TEMPLATES), pod_group_template))
    if depth < WALK_LIMIT:
        errs += template_list(f.child("compositePodGroupTemplates", COMPOSITES),
                              lambda g: composite_template(g, depth + 1))
    return errs


# --- Workload.spec.controllerRef ---------------------------------------------------------------------


def controller_ref(f: Field) -> list[FieldError]:
    """Immutable; kind and name required path segments; apiGroup, when set, a DNS subdomain."""
    return _reference(f, (("apiGroup", is_dns1123_subdomain, False), ("kind", is_path_segment_name, True),
                          ("name", is_path_segment_name, True)))


@optional_rule
def _reference(f: Field, members: tuple[tuple[str, Any, bool], ...]) -> list[FieldError]:
    """An optional, immutable reference: each member (name, format, required) a plain string."""
    errs, stop = gatekeep(immutable(f), optional(f))
    if stop:
        return errs
    for key, check, needed in members:
        errs += (required_name if needed else optional_name)(f.child(key, STR), check)
    return errs


# --- PodGroup.spec -----------------------------------------------------------------------------------


def podgroup_spec(f: Field) -> list[FieldError]:
    """Every declarative rule of PodGroupSpec (CREATE, or UPDATE against the old spec)."""
    return (_parent(f.child("parentCompositePodGroupName", PSTR))
            + _workload_ref(f.child("workloadRef", WORKLOAD_REFERENCE))
            + scheduling_policy(f.child("schedulingPolicy", POLICY))
            + scheduling_constraints(f.child("schedulingConstraints", CONSTRAINTS), gate_governs=True,
                                     immutable_when_on_only=True)
            + resource_claims(f.child("resourceClaims", CLAIMS))
            + disruption_mode(f.child("disruptionMode", DISRUPTION), required=True)
            + _priorities(f))


@optional_rule
def _parent(f: Field) -> list[FieldError]:
    """Forbidden while CompositePodGroup is off; immutable; a DNS subdomain."""
    errs, stop = gatekeep(gated(f, Gate.COMPOSITE_POD_GROUP), immutable(f))
    return errs if stop else errs + text_format(f, is_dns1123_subdomain)


def _workload_ref(f: Field) -> list[FieldError]:
    """Immutable; a DNS-subdomain workloadName and a DNS-label templateName, both required."""
    return _reference(f, (("workloadName", is_dns1123_subdomain, True), ("templateName", is_dns1123_label, True)))


# --- Workload.spec -------------------------------------------------------------------------------------


def workload_spec(f: Field) -> list[FieldError]:
    """Every declarative rule of WorkloadSpec (CREATE, or UPDATE against the old spec)."""
    return (union(f, ("podGroupTemplates", "compositePodGroupTemplates"), _fields(WORKLOAD_SPEC))
            + controller_ref(f.child("controllerRef", CONTROLLER_REF))
            + template_list(f.child("podGroupTemplates", TEMPLATES), pod_group_template)
            + template_list(f.child("compositePodGroupTemplates", COMPOSITES), composite_template,
                            gate=Gate.COMPOSITE_POD_GROUP))
