"""Pod (core v1): only ``spec.schedulingGroup`` (POD-SG-1..3, its gate strip) and the PodGroup
claim-sharing check; feasibility (where the pod can go) is ``webhook.workloads``.

Everything else about pods is the apiserver's business and passes untouched. The webhook
matches only pods with claims or ``spec.schedulingGroup`` (off by default in the chart). Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.fielderrors import FieldError, FieldPath, forbidden, invalid
from webhook.gates import Gate
from webhook.patch import op_remove
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.scheduling import common as sc
from webhook.rules.shape import mapping, shorten, strip_warning, type_error

SPEC = FieldPath.root("spec")
SG = SPEC.child("schedulingGroup")
_CLAIM_REFS = ("resourceClaimName", "resourceClaimTemplateName")


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy; pod defaulting is not modelled (no rule here depends on it)."""
    return copy.deepcopy(obj)


def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
    """The strategy's gate strip: ``spec.schedulingGroup`` goes while GenericWorkload is off."""
    old = ctx.old if ctx.is_update() else None
    return strip_scheduling_group(_spec(obj), _spec(old), SPEC, ctx)


def _spec(obj: Any) -> Any:
    return obj.get("spec") if isinstance(obj, dict) else None


def strip_scheduling_group(spec: Any, old_spec: Any, path: FieldPath, ctx: RuleContext) -> Mutation:
    """Drop ``schedulingGroup`` from a pod spec at ``path`` while GenericWorkload is off, unless
    the stored spec (``old_spec``, an UPDATE) uses it already: what the apiserver's pod strategy
    (and a workload's, for its pod template) does before validation."""
    if ctx.gates.enabled(Gate.GENERIC_WORKLOAD) or not isinstance(spec, dict) or "schedulingGroup" not in spec:
        return Mutation()
    if isinstance(old_spec, dict) and old_spec.get("schedulingGroup") is not None:
        return Mutation()
    where = path.child("schedulingGroup")
    warnings = [strip_warning(Gate.GENERIC_WORKLOAD, str(where))] if spec["schedulingGroup"] is not None else []
    return Mutation([op_remove(where)], warnings)


def scheduling_group(obj: Any) -> Any:
    """``spec.schedulingGroup`` or None."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec.get("schedulingGroup") if isinstance(spec, dict) else None


def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """CREATE: POD-SG-1/2 on ``spec.schedulingGroup`` when present."""
    return validate_scheduling_group(scheduling_group(obj), SG)


def validate_scheduling_group(sg: Any, path: FieldPath) -> list[FieldError]:
    """POD-SG-2: a one-member union (``podGroupName``); POD-SG-1: that name is a DNS subdomain."""
    if sg is None:
        return []
    if not isinstance(sg, dict):
        return [type_error(path, sg, "object")]
    name = sg.get("podGroupName")
    if name is None:
        return [invalid(path, "", "must specify exactly one of: podGroupName")]
    return sc.check_long_name(name, path.child("podGroupName"))


def validate_update(obj: dict[str, Any], old: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
    """POD-SG-3: the pod spec is immutable apart from a few fields; schedulingGroup is not one."""
    new_sg, old_sg = scheduling_group(obj), scheduling_group(old)
    if new_sg == old_sg:
        return []
    return validate_scheduling_group(new_sg, SG) + [forbidden(
        SPEC, "pod updates may not change fields other than `spec.containers[*].image`, "
              "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
              "(only additions to existing tolerations), `spec.terminationGracePeriodSeconds`; "
              "spec.schedulingGroup was changed")]


def warnings(obj: dict[str, Any], ctx: RuleContext) -> list[str]:
    """None: a ``schedulingGroup`` the gate drops is reported by ``mutate``."""
    return []


# --- PodGroup claim sharing (needs the cluster state) -------------------------------------------


def state_warnings(obj: dict[str, Any], snapshot: Any) -> list[str]:
    """The pipeline's cluster-state hook: look up the pod's PodGroup, then compare the claims.

    ``snapshot`` is a ``ClusterSnapshot`` (anything with ``find(kind, name, namespace)``).
    """
    sg = scheduling_group(obj)
    if not isinstance(sg, dict) or not isinstance(sg.get("podGroupName"), str):
        return []
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    group = snapshot.find("PodGroup", sg["podGroupName"], namespace if isinstance(namespace, str) else None)
    return podgroup_claim_mismatch_warnings(obj, group)



def podgroup_claim_mismatch_warnings(pod: dict[str, Any], podgroup: dict[str, Any] | None) -> list[str]:
    """Warnings where the pod's ``spec.resourceClaims`` cannot share its PodGroup's claims.

    A pod shares a PodGroup claim only with an entry of the same ``name`` that names the same
    ResourceClaim or ResourceClaimTemplate. Warned: the PodGroup is missing from the state; a pod
    claim with a group claim's name but another reference; a pod claim with a group claim's
    reference under another name (a template then yields a per-pod claim, not the shared one).
    Group claims the pod does not use are fine; a pod without claims gets no note. Never raises.
    """
    sg = scheduling_group(pod)
    if not isinstance(sg, dict) or not isinstance(sg.get("podGroupName"), str):
        return []
    pg_name = shorten(sg["podGroupName"])
    own = _claims(mapping(pod.get("spec")))
    if podgroup is None:
        # Only a pod with claims has something to share; others need no note.
        if not own:
            return []
        return [f'PodGroup "{pg_name}" not found in the cluster state; claim sharing not checked']
    group = _claims(mapping(podgroup.get("spec") if isinstance(podgroup, dict) else None))
    if not group:
        return []
    # Group claims by reference, so a pod with many claims costs one lookup each, not a scan of
    # the group (that was quadratic: 40,000 pod claims against 4,000 group claims took 23 s).
    # Valid references are strings; any other value keeps the scan, over the few such entries.
    by_ref: dict[tuple[str | None, str], list[str]] = {}
    odd: list[tuple[str, tuple[str | None, Any]]] = []
    for gname, gref in group.items():
        if isinstance(gref[1], str):
            by_ref.setdefault((gref[0], gref[1]), []).append(gname)
        else:
            odd.append((gname, gref))
    out: list[str] = []
    for name, ref in own.items():
        if name in group:
            if group[name] != ref:
                out.append(f'pod claim "{shorten(name, 30)}" is not shared: PodGroup "{pg_name}" has '
                           f"it as {_show(group[name])}")
            continue
        if ref[0] is None:
            continue
        same = by_ref.get((ref[0], ref[1]), []) if isinstance(ref[1], str) else \
            [gname for gname, gref in odd if ref == gref]
        for gname in same:
            out.append(f'pod claim "{shorten(name, 30)}" is not shared: PodGroup names it '
                       f'"{shorten(gname, 30)}"')
    return out


def _claims(spec: dict[str, Any]) -> dict[str, tuple[str | None, Any]]:
    """name -> (which reference field, its value) for the well-formed entries of resourceClaims."""
    out: dict[str, tuple[str | None, Any]] = {}
    items = spec.get("resourceClaims")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        refs = [(k, item[k]) for k in _CLAIM_REFS if item.get(k) is not None]
        out.setdefault(item["name"], refs[0] if len(refs) == 1 else (None, None))
    return out


def _show(ref: tuple[str | None, Any]) -> str:
    field, value = ref
    if field is None:
        return "an invalid reference"
    return f'{field} "{shorten(str(value), 30)}"'


RULES = KindRules(
    group="", kind="Pod", versions=("v1",), namespaced=True,
    plural="pods", apply_defaults=apply_defaults, mutate=mutate, validate=validate,
    validate_update=validate_update, warnings=warnings,
    state_warnings=state_warnings, feasibility=True,
)
