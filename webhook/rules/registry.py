"""The registry: (group, kind) -> ``KindRules``. Adding a kind = one module + one line here.

Importing this module imports every kind module (all pure). Nothing else dispatches on kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from webhook.rules.claims import deviceclass, resourceclaim, resourceclaimtemplate
from webhook.rules.kind import KindRules
from webhook.rules.scheduling import pod, podgroup, workload
from webhook.rules.slices import resourceslice
from webhook.rules.taints import devicetaintrule
from webhook.rules.workloads import cronjob, deployment, job, replicaset, statefulset

KINDS: Mapping[tuple[str, str], KindRules] = MappingProxyType({r.key: r for r in (
    resourceslice.RULES,
    resourceclaim.RULES,
    resourceclaimtemplate.RULES,
    deviceclass.RULES,
    devicetaintrule.RULES,
    podgroup.RULES,
    workload.RULES,
    pod.RULES,
    deployment.RULES,
    replicaset.RULES,
    statefulset.RULES,
    job.RULES,
    cronjob.RULES,
)})

_BY_KIND: Mapping[str, KindRules] = MappingProxyType({r.kind: r for r in KINDS.values()})


def rules_for(group: str, kind: str) -> KindRules | None:
    """The record of a kind, or None when we have no rules for it."""
    return KINDS.get((group, kind))


def by_kind(kind: str) -> KindRules | None:
    """The record of a kind by its name alone (our kinds' names are unique across groups)."""
    return _BY_KIND.get(kind)


def feasibility_kinds() -> tuple[str, ...]:
    """Kinds whose claims the allocator checks, in registry order."""
    return tuple(r.kind for r in KINDS.values() if r.feasibility)
