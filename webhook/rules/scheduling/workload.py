"""Workload (``scheduling.k8s.io/v1beta1``): strategy gate strips and the WL-* rules.

Owns the template list rules (≤ 8, unique names, no add/remove on UPDATE), the composite
template tree (CompositePodGroup gate, cross-tree names, depth ≤ 4, one priority, ≥ 1 child)
and ``controllerRef``. Per-template field rules come from ``scheduling_common``. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, duplicate, forbidden, immutable, invalid
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.names import is_path_segment_name, validate_object_meta
from webhook.rules.scheduling import common as sc
from webhook.rules.shape import is_set, mapping, strip_warning, type_error

SPEC = FieldPath.root("spec")
PGT = SPEC.child("podGroupTemplates")
CPGT = SPEC.child("compositePodGroupTemplates")
TEMPLATES_MAX = 8
TREE_DEPTH_MAX = 4
# Composite trees deeper than this are not walked any further (the depth rule already fails
# at 4); it keeps hostile nesting from exhausting the Python stack.
_WALK_LIMIT = 12
KNOWN_SPEC_FIELDS = frozenset({"controllerRef", "podGroupTemplates", "compositePodGroupTemplates"})


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy: upstream declares no defaults on Workload or its templates (no ``+default``)."""
    return copy.deepcopy(obj)


# --- mutate ---------------------------------------------------------------------------------


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """Drop ``schedulingConstraints`` / ``resourceClaims`` of top-level templates when gated off.

    As upstream's Workload strategy: the old template at the same index decides whether the field
    is kept on UPDATE; templates inside compositePodGroupTemplates are not touched.
    """
    out = Mutation()
    spec = mapping(obj.get("spec")) if isinstance(obj, dict) else {}
    templates = spec.get("podGroupTemplates")
    if not isinstance(templates, list):
        return out
    old_spec = mapping(mapping(ctx.old).get("spec")) if ctx.is_update() else {}
    old_templates = old_spec.get("podGroupTemplates")
    old_templates = old_templates if isinstance(old_templates, list) else []
    dropped = {Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: 0, Gate.DRA_WORKLOAD_RESOURCE_CLAIMS: 0}
    for i, tmpl in enumerate(templates):
        if not isinstance(tmpl, dict):
            continue
        old_t = mapping(old_templates[i]) if i < len(old_templates) else {}
        path = PGT.index(i)
        if "schedulingConstraints" in tmpl and not ctx.gates.enabled(Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING) \
                and old_t.get("schedulingConstraints") is None:
            out.ops.append(op_remove(path.child("schedulingConstraints")))
            dropped[Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING] += tmpl["schedulingConstraints"] is not None
        if "resourceClaims" in tmpl and not ctx.gates.enabled(Gate.DRA_WORKLOAD_RESOURCE_CLAIMS) \
                and not is_set(old_t.get("resourceClaims")):
            out.ops.append(op_remove(path.child("resourceClaims")))
            dropped[Gate.DRA_WORKLOAD_RESOURCE_CLAIMS] += is_set(tmpl["resourceClaims"])
    for gate, field in ((Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, "schedulingConstraints"),
                        (Gate.DRA_WORKLOAD_RESOURCE_CLAIMS, "resourceClaims")):
        if dropped[gate]:
            out.warnings.append(strip_warning(gate, f"{field} from {dropped[gate]} podGroupTemplates"))
    return out


# --- validate -------------------------------------------------------------------------------


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: metadata, the union, the template lists and the hand-written tree rules."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=True)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return errs + [type_error(SPEC, spec, "object")]
    return errs + validate_spec(spec, ctx) + validate_tree(spec)


def validate_spec(spec: dict[str, Any], ctx: RuleContext, old: dict[str, Any] | None = None
                  ) -> list[FieldError]:
    """The declarative WL-* rules; with ``old`` unchanged parts are not re-validated."""
    errs: list[FieldError] = []
    if sc.changed(spec, old, "podGroupTemplates") or sc.changed(spec, old, "compositePodGroupTemplates"):
        errs += sc.check_union(spec, SPEC, ("podGroupTemplates", "compositePodGroupTemplates"))
    if sc.changed(spec, old, "controllerRef"):
        errs += validate_controller_ref(spec.get("controllerRef"), SPEC.child("controllerRef"))
    if sc.changed(spec, old, "podGroupTemplates"):
        old_list = (old or {}).get("podGroupTemplates")
        errs += validate_templates(spec.get("podGroupTemplates"), PGT, ctx,
                                   old_list if isinstance(old_list, list) else None)
    if sc.changed(spec, old, "compositePodGroupTemplates") and \
            spec.get("compositePodGroupTemplates") is not None:
        if not ctx.gates.enabled(Gate.COMPOSITE_POD_GROUP):
            errs.append(forbidden(CPGT, f"requires feature gate {Gate.COMPOSITE_POD_GROUP}"))
        else:
            errs += validate_composite_templates(spec["compositePodGroupTemplates"], CPGT, ctx, 1)
    return errs


def validate_templates(value: Any, path: FieldPath, ctx: RuleContext,
                       old: list[Any] | None = None) -> list[FieldError]:
    """WL-PGT-1..5: ≤ 8 templates, unique DNS-label names, each with the PodGroup field rules.

    With ``old``, a template equal to the old template of the same name is skipped (ratcheting).
    """
    items, errs = sc.check_list(value, path, TEMPLATES_MAX)
    errs += sc.map_list_duplicates(items, path)
    old_by_name = _by_name(old or [])
    for i, tmpl in enumerate(items):
        ipath = path.index(i)
        if not isinstance(tmpl, dict):
            errs.append(type_error(ipath, tmpl, "object"))
            continue
        name = tmpl.get("name")
        prev = old_by_name.get(name) if isinstance(name, str) else None
        if prev is not None and prev == tmpl:
            continue
        errs += sc.check_short_name(tmpl.get("name"), ipath.child("name"), required_=True)
        errs += sc.validate_group_fields(tmpl, ipath, ctx, prev)
    return errs


def validate_composite_templates(value: Any, path: FieldPath, ctx: RuleContext, depth: int
                                 ) -> list[FieldError]:
    """WL-CPG-1 (gate on): ≤ 8 composite templates, unique names, policy union, children lists."""
    items, errs = sc.check_list(value, path, TEMPLATES_MAX)
    errs += sc.map_list_duplicates(items, path)
    for i, tmpl in enumerate(items):
        ipath = path.index(i)
        if not isinstance(tmpl, dict):
            errs.append(type_error(ipath, tmpl, "object"))
            continue
        errs += sc.check_short_name(tmpl.get("name"), ipath.child("name"), required_=True)
        errs += sc.validate_scheduling_policy(tmpl.get("schedulingPolicy"), ipath.child("schedulingPolicy"),
                                              count_field="minGroupCount")
        errs += sc.check_long_name(tmpl.get("priorityClassName"), ipath.child("priorityClassName"))
        errs += sc.validate_priority(tmpl.get("priority"), ipath.child("priority"))
        errs += validate_templates(tmpl.get("podGroupTemplates"), ipath.child("podGroupTemplates"), ctx)
        if depth < _WALK_LIMIT:
            errs += validate_composite_templates(tmpl.get("compositePodGroupTemplates"),
                                                 ipath.child("compositePodGroupTemplates"), ctx, depth + 1)
    return errs


def validate_controller_ref(ref: Any, path: FieldPath) -> list[FieldError]:
    """WL-CR-2: required path-segment ``kind`` and ``name``; optional DNS-subdomain ``apiGroup``."""
    if ref is None:
        return []
    if not isinstance(ref, dict):
        return [type_error(path, ref, "object")]
    errs = sc.check_long_name(ref.get("apiGroup") or None, path.child("apiGroup"))
    for key in ("kind", "name"):
        errs += sc.check_name(ref.get(key), path.child(key), is_path_segment_name, required_=True)
    return errs


# --- hand-written tree rules (not ratcheted upstream) -----------------------------------------


def validate_tree(spec: dict[str, Any]) -> list[FieldError]:
    """WL-HW-1..5 over the composite template tree, as ``ValidateWorkloadSpec`` does."""
    errs = _names_unique(spec)
    errs += _depth(spec)
    errs += _priority(spec)
    for i, cpg in enumerate(_dicts(spec.get("compositePodGroupTemplates"))):
        errs += _has_child(cpg, CPGT.index(i), 1)
    return errs


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The mapping items of a list (anything else is reported by the declarative rules)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict_items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _by_name(items: list[Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in items if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _hashable(name: Any) -> Any:
    return name if isinstance(name, (str, int, float, bool, type(None))) else repr(name)


def _names_unique(spec: dict[str, Any]) -> list[FieldError]:
    """WL-HW-1: a name already used elsewhere in the tree is Duplicate (same-list repeats are DV's)."""
    names = {_hashable(t.get("name")) for t in _dicts(spec.get("podGroupTemplates"))}
    return _composite_list_names(spec.get("compositePodGroupTemplates"), CPGT, names, 1)


def _composite_list_names(value: Any, path: FieldPath, names: set[Any], depth: int) -> list[FieldError]:
    errs: list[FieldError] = []
    listed: set[Any] = set()
    items = _dict_items(value)
    for i, child in items:
        name = _hashable(child.get("name"))
        if name in names:
            errs.append(duplicate(path.index(i).child("name"), child.get("name")))
        listed.add(name)
    names |= listed
    if depth >= _WALK_LIMIT:
        return errs
    for i, child in items:
        cpath = path.index(i)
        listed = set()
        for j, pgt in _dict_items(child.get("podGroupTemplates")):
            name = _hashable(pgt.get("name"))
            if name in names:
                jpath = cpath.child("podGroupTemplates").index(j)
                errs.append(duplicate(jpath.child("name"), pgt.get("name")))
            listed.add(name)
        names |= listed
        errs += _composite_list_names(child.get("compositePodGroupTemplates"),
                                      cpath.child("compositePodGroupTemplates"), names, depth + 1)
    return errs


def _depth(spec: dict[str, Any]) -> list[FieldError]:
    """WL-HW-2: a top-level composite template whose composite chain reaches depth 4 is Invalid."""
    def fits(cpg: dict[str, Any], depth: int) -> bool:
        if depth >= TREE_DEPTH_MAX:
            return False
        return all(fits(c, depth + 1) for c in _dicts(cpg.get("compositePodGroupTemplates")))

    return [invalid(CPGT.index(i), cpg.get("compositePodGroupTemplates"),
                    f"maximum template hierarchy depth is {TREE_DEPTH_MAX}")
            for i, cpg in _dict_items(spec.get("compositePodGroupTemplates")) if not fits(cpg, 1)]


def _priority(spec: dict[str, Any]) -> list[FieldError]:
    """WL-HW-3/4: every template in the workload carries the same priorityClassName and priority."""
    first: list[tuple[Any, Any]] = []

    def same(t: dict[str, Any]) -> bool:
        conf = (t.get("priorityClassName") or "", t.get("priority"))
        if not first:
            first.append(conf)
            return True
        return first[0] == conf

    for t in _dicts(spec.get("podGroupTemplates")):
        if not same(t):
            return [invalid(SPEC, None, "detected multiple priority configurations")]

    def tree_same(cpg: dict[str, Any], depth: int) -> bool:
        if not same(cpg):
            return False
        if depth < _WALK_LIMIT and not all(
                tree_same(c, depth + 1) for c in _dicts(cpg.get("compositePodGroupTemplates"))):
            return False
        return all(same(p) for p in _dicts(cpg.get("podGroupTemplates")))

    for cpg in _dicts(spec.get("compositePodGroupTemplates")):
        if not tree_same(cpg, 1):
            return [invalid(SPEC, None, "all priority and priorityClassName values must be identical, "
                                        "detected multiple values")]
    return []


def _has_child(cpg: dict[str, Any], path: FieldPath, depth: int) -> list[FieldError]:
    """WL-HW-5: every composite template has at least one child template."""
    errs: list[FieldError] = []
    if not is_set(cpg.get("podGroupTemplates")) and not is_set(cpg.get("compositePodGroupTemplates")):
        errs.append(invalid(path, cpg.get("name"),
                            "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"))
    if depth < _WALK_LIMIT:
        for i, child in _dict_items(cpg.get("compositePodGroupTemplates")):
            errs += _has_child(child, path.child("compositePodGroupTemplates").index(i), depth + 1)
    return errs


# --- update ---------------------------------------------------------------------------------


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE: ratcheted declarative rules, immutability, no template add/remove, tree rules."""
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    errs = validate_object_meta(obj.get("metadata"), FieldPath.root("metadata"), namespaced=True)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return errs + [type_error(SPEC, spec, "object")]
    old_spec = mapping(mapping(old).get("spec"))
    errs += validate_spec(spec, ctx, old_spec)
    if spec.get("controllerRef") != old_spec.get("controllerRef"):
        errs.append(immutable(SPEC.child("controllerRef"), spec.get("controllerRef")))
    errs += _templates_update(spec.get("podGroupTemplates"), old_spec.get("podGroupTemplates"), ctx)
    if _none_if_empty(spec.get("compositePodGroupTemplates")) != \
            _none_if_empty(old_spec.get("compositePodGroupTemplates")):
        errs.append(immutable(CPGT, spec.get("compositePodGroupTemplates")))
    return errs + validate_tree(spec)


def _none_if_empty(value: Any) -> Any:
    return None if value == [] else value


def _templates_update(new: Any, old: Any, ctx: RuleContext) -> list[FieldError]:
    """WL-PGT-U1/U2 and per-template immutability, templates matched by name."""
    if not isinstance(new, list) or len(new) > TEMPLATES_MAX:
        return []
    old_by_name = _by_name(old if isinstance(old, list) else [])
    errs: list[FieldError] = []
    new_names: set[str] = set()
    for i, tmpl in _dict_items(new):
        name = tmpl.get("name")
        if not isinstance(name, str):
            continue
        new_names.add(name)
        prev = old_by_name.get(name)
        if prev is None:
            errs.append(forbidden(PGT.index(i), "item may not be added"))
            continue
        errs += sc.validate_group_fields_update(tmpl, prev, PGT.index(i), ctx,
                                                constraints_always_immutable=True)
    if any(name not in new_names for name in old_by_name):
        errs.append(forbidden(PGT, "item may not be removed"))
    return errs


# --- warnings -------------------------------------------------------------------------------


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    """The GenericWorkload-off note and ``unknown field`` notes for the spec."""
    out = sc.gate_off_warning(ctx, "scheduling.k8s.io/v1beta1 Workload")
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return out + sc.unknown_field_warnings(spec, KNOWN_SPEC_FIELDS)


RULES = KindRules(
    group=sc.GROUP, kind="Workload", versions=("v1beta1",), namespaced=True,
    plural="workloads", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
)
