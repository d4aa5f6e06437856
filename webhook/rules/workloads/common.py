"""The one record shape of a workload kind (Deployment, ReplicaSet, StatefulSet, Job, CronJob).

We add feasibility ("k of N replicas fit now", ``webhook.workloads``) and the gate strip of the
pod template's ``schedulingGroup`` that the apiserver's strategies do; validation is the
apiserver's, so ``validate`` finds nothing. Feasibility runs on CREATE (and dry runs of it):
for an UPDATE the pods the workload already runs are in the state and would count twice. Pure.
"""

from __future__ import annotations

from typing import Any

from webhook.fielderrors import FieldError, FieldPath
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.scheduling.pod import strip_scheduling_group
from webhook.workloads.kinds import WORKLOAD_KINDS


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, dict) else None
    return obj


def _none(*_: Any) -> list[Any]:
    return []


def workload_rules(kind: str, plural: str) -> KindRules:
    """The record of workload ``kind`` (its template path comes from ``WORKLOAD_KINDS``)."""
    template = (*WORKLOAD_KINDS[kind].template, "spec")

    def mutate(obj: dict[str, Any], ctx: RuleContext) -> Mutation:
        old = _at(ctx.old, template) if ctx.is_update() else None
        return strip_scheduling_group(_at(obj, template), old, FieldPath.root(*template), ctx)

    def validate(obj: dict[str, Any], ctx: RuleContext) -> list[FieldError]:
        return []

    return KindRules(group=WORKLOAD_KINDS[kind].group, kind=kind, versions=("v1",), namespaced=True,
                     plural=plural, apply_defaults=dict, mutate=mutate, validate=validate,
                     validate_update=_none, warnings=_none, feasibility=True, feasibility_on_update=False)
