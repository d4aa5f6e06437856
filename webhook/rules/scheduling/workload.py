"""Workload (``scheduling.k8s.io/v1beta1``): the strategy's gate strips and the WL-* rules.

The declarative rules (template lists at every level: ≤ 8, unique names, no add/remove on
UPDATE; per-template fields; ``controllerRef``) come from ``fields``; here are the hand-written
rules over the composite template tree (names unique across it, depth < 4, one priority, ≥ 1
child), which upstream runs on CREATE and UPDATE alike. Pure.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, duplicate, invalid
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules import meta
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.declarative import NO_OLD
from webhook.rules.kind import KindRules
from webhook.rules.scheduling import common as sc
from webhook.rules.scheduling import fields
from webhook.rules.scheduling.declarative import Field
from webhook.rules.shape import by_name, by_name_get, is_set, mapping, strip_warning, type_error

SPEC = FieldPath.root("spec")
PGT = SPEC.child("podGroupTemplates")
CPGT = SPEC.child("compositePodGroupTemplates")
TREE_DEPTH_MAX = 4
_WALK_LIMIT = fields.WALK_LIMIT
KNOWN_SPEC_FIELDS = frozenset({"controllerRef", "podGroupTemplates", "compositePodGroupTemplates"})


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy: upstream declares no defaults on Workload or its templates (no ``+default``)."""
    return copy.deepcopy(obj)


# --- mutate ---------------------------------------------------------------------------------

#: Template fields the strategy drops while their gate is off, unless the old template uses them.
TEMPLATE_STRIPS = (("schedulingConstraints", Gate.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING),
                   ("resourceClaims", Gate.DRA_WORKLOAD_RESOURCE_CLAIMS),
                   ("preemptionPolicy", Gate.POD_GROUP_PREEMPTION_POLICY))
Counts = Counter[tuple[str, str, str]]


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """The strategy's gate strips (PrepareForCreate / PrepareForUpdate), as upstream walks them:
    a pod group template is compared with the old template at the same index, a composite
    template with the old one of the same name; compositePodGroupTemplates (at any depth) go
    while CompositePodGroup is off unless the old object has them there."""
    out = Mutation()
    spec = mapping(obj.get("spec")) if isinstance(obj, dict) else {}
    old_spec = mapping(mapping(ctx.old).get("spec")) if ctx.is_update() else {}
    counts: Counts = Counter()
    _strip_templates(spec.get("podGroupTemplates"), old_spec.get("podGroupTemplates"), PGT, ctx, out, counts)
    _strip_composites(spec, old_spec, SPEC, ctx, out, counts, 1)
    for (gate, key, where), n in counts.items():
        out.warnings.append(strip_warning(gate, f"spec.{key}" if where == "spec" else f"{key} from {n} {where}"))
    return out


def _strip_templates(templates: Any, old_templates: Any, path: FieldPath, ctx: RuleContext, out: Mutation,
                     counts: Counts) -> None:
    old = old_templates if isinstance(old_templates, list) else []
    for i, t in enumerate(templates if isinstance(templates, list) else []):
        if not isinstance(t, dict):
            continue
        old_t = mapping(old[i]) if i < len(old) else {}
        for key, gate in TEMPLATE_STRIPS:
            if key in t and not ctx.gates.enabled(gate) and not is_set(old_t.get(key)):
                out.ops.append(op_remove(path.index(i).child(key)))
                if is_set(t[key]):
                    counts[(gate, key, "podGroupTemplates")] += 1


def _strip_composites(parent: dict[str, Any], old_parent: dict[str, Any], path: FieldPath, ctx: RuleContext,
                      out: Mutation, counts: Counts, depth: int) -> None:
    key, gate = "compositePodGroupTemplates", Gate.COMPOSITE_POD_GROUP
    items = parent.get(key)
    if key in parent and not ctx.gates.enabled(gate) and not is_set(old_parent.get(key)):
        out.ops.append(op_remove(path.child(key)))
        if is_set(items):
            counts[(gate, key, "spec" if depth == 1 else key)] += 1
        return
    if not isinstance(items, list) or depth > fields.WALK_LIMIT:
        return
    old_items = old_parent.get(key)
    old_by_name = by_name(old_items)
    for i, c in enumerate(items):
        if not isinstance(c, dict):
            continue
        cpath = path.child(key).index(i)
        old_c = mapping(by_name_get(old_by_name, c))
        pp = "preemptionPolicy"
        if pp in c and not ctx.gates.enabled(Gate.POD_GROUP_PREEMPTION_POLICY) and not is_set(old_c.get(pp)):
            out.ops.append(op_remove(cpath.child(pp)))
            if is_set(c[pp]):
                counts[(Gate.POD_GROUP_PREEMPTION_POLICY, pp, key)] += 1
        _strip_composites(c, old_c, cpath, ctx, out, counts, depth + 1)
        _strip_templates(c.get("podGroupTemplates"), old_c.get("podGroupTemplates"),
                         cpath.child("podGroupTemplates"), ctx, out, counts)


# --- validate -------------------------------------------------------------------------------


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: metadata, the declarative rules and the hand-written tree rules."""
    return meta.check(obj, None, ctx, namespaced=True) + _validate(obj, NO_OLD, ctx)


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """UPDATE: the declarative rules against the old spec (ratcheting, immutability, no template
    added or removed at any level) and the hand-written tree rules, which are not ratcheted."""
    if refused := meta.preconditions(obj, old, namespaced=True):
        return refused
    return meta.check(obj, old, ctx, namespaced=True) + _validate(obj, mapping(mapping(old).get("spec")), ctx)


def _validate(obj: Any, old_spec: Any, ctx: RuleContext) -> list[FieldError]:
    if not isinstance(obj, dict):
        return [type_error(FieldPath.root(), obj, "object")]
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return [type_error(SPEC, spec, "object")]
    return fields.workload_spec(Field(SPEC, spec, old_spec, fields.WORKLOAD_SPEC, ctx)) + validate_tree(spec)


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
