"""``KindRules``: the one typed record of everything we know about one kind.

Each kind module ends with ``RULES = KindRules(...)``; ``webhook.rules.registry`` maps
(group, kind) to it. The pipeline, the CLI, ``simulate`` and the state read per-kind facts
(served versions, scope, plural, whether feasibility and capacity defaulting apply) and call
the rule functions through this record only, so mypy checks every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from webhook.fielderrors import FieldError, FieldPath
from webhook.findings import Finding
from webhook.rules.context import Mutation, RuleContext

if TYPE_CHECKING:
    from webhook.state.base import ClusterSnapshot

Obj = dict[str, Any]


def no_defaults(obj: Obj) -> Obj:
    """``apply_defaults`` of a kind whose served version declares no defaults: the object as is."""
    return obj


def no_state_warnings(obj: Obj, snapshot: ClusterSnapshot) -> list[str]:
    """``state_warnings`` of a kind with no notes that need the cluster state."""
    return []


def no_findings(obj: Obj, ctx: RuleContext) -> list[Finding]:
    """``findings`` of a kind with no lint of its own."""
    return []


class OpaqueParameters(NamedTuple):
    """The ``parameters`` of one opaque driver config entry, and where they are."""

    path: FieldPath
    """Of the ``parameters`` member (``spec.devices.config[0].opaque.parameters``)."""
    driver: str
    parameters: Any


def no_opaque_parameters(obj: Obj) -> list[OpaqueParameters]:
    """``opaque_parameters`` of a kind that holds no opaque driver config."""
    return []


@dataclass(frozen=True, slots=True)
class KindRules:
    """Facts and rule functions of one kind (all functions pure, none raises on user input)."""

    group: str
    """API group ("" for the core group)."""
    kind: str
    versions: tuple[str, ...]
    """The versions Kubernetes 1.37 can serve and we validate; the first is the preferred one,
    the one the rules judge. Any other is converted to it first (``webhook.versions``)."""
    namespaced: bool
    plural: str
    """The resource name in URLs and in ``AdmissionRequest.resource``."""
    apply_defaults: Callable[[Obj], Obj]
    """The defaults the apiserver applies before admission (the CLI needs them; the HTTP
    server gets objects already defaulted). Returns a new object."""
    mutate: Callable[[Obj, RuleContext], Mutation]
    """Gate strips and normalisation: JSON Patch ops plus one warning per strip."""
    validate: Callable[[Obj, RuleContext], list[FieldError]]
    """CREATE (and the base of UPDATE)."""
    validate_update: Callable[[Obj, Obj, RuleContext], list[FieldError]]
    """UPDATE: immutability and ratcheting against the stored object."""
    warnings: Callable[[Obj, RuleContext], list[str]]
    """Non-fatal notes about the object alone."""
    state_warnings: Callable[[Obj, ClusterSnapshot], list[str]] = no_state_warnings
    """Notes that need the cluster state (e.g. a pod joining a PodGroup)."""
    findings: Callable[[Obj, RuleContext], list[Finding]] = no_findings
    """Lint of the object alone: what the apiserver admits but will not work as meant (warnings;
    failures with ``review --strict``)."""
    opaque_parameters: Callable[[Obj], list[OpaqueParameters]] = no_opaque_parameters
    """The opaque driver ``parameters`` the object holds (checked against the drivers' config
    schemas when the settings have some, ``driverschemas.py``)."""
    pool_lint: bool = False
    """Whether the object is a ResourceSlice of a pool: the pipeline adds pool findings
    (``allocator/poollint.py``) for the pool as the state plus the object shows it."""
    feasibility: bool = False
    """Whether dry-run/CREATE requests get allocator feasibility warnings."""
    feasibility_on_update: bool = True
    """Whether dry-run UPDATEs get them too (not for workloads: their running pods would count twice)."""
    impact: bool = False
    """Whether CREATE/UPDATE requests get the impact preview: ``feasibility:`` warnings naming the
    existing claims the write would make infeasible or evict (``allocator/impact.py``)."""
    capacity_defaulting: bool = False
    """Whether ``/mutate`` makes the consumed capacity of its device requests explicit."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.kind)

    def serves(self, version: str) -> bool:
        """Whether ``version`` is one we validate."""
        return version in self.versions

    def served(self) -> str:
        """The versions in words, preferred first: ``resource.k8s.io/v1, v1beta2 and v1beta1``."""
        names = [self.api_version(), *self.versions[1:]]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    def api_version(self, version: str = "") -> str:
        """``group/version`` (just ``version`` for the core group), the preferred version by default."""
        return "/".join(filter(None, (self.group, version or self.versions[0])))
