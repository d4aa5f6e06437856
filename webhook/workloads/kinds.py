"""A Pod or a workload object -> the pods its controllers create, in the order they create them.

Pure. One ``WorkloadKind`` record per kind says where the pod template is and how many pods
run at once: ``spec.replicas`` (default 1) for Deployment, ReplicaSet and StatefulSet;
``spec.parallelism`` (default 1), or ``spec.completions`` when smaller, for a Job; the same
for the Job a CronJob's ``spec.jobTemplate`` makes; none for a suspended Job or CronJob.
Replica ``i`` is named ``<name>-<i>``: a StatefulSet's pods are named so upstream too; the
ReplicaSet, Job and CronJob controllers add random suffixes instead (and a Deployment's
ReplicaSet a template hash), which no answer depends on. A StatefulSet with the default
``OrderedReady`` policy creates each pod once the one before is Running and Ready: the answer
places them all, as they would be placed then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from webhook.raw import as_dict


class WorkloadError(ValueError):
    """The object cannot make pods (no pod template, a replica count that is not a count)."""


def _count(spec: dict[str, Any], field: str, default: int, what: str) -> int:
    v = spec.get(field)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise WorkloadError(f"{what}: spec.{field} must be a non-negative integer, got {v!r}")
    return v


def _replica_count(spec: dict[str, Any], what: str) -> int:
    return _count(spec, "replicas", 1, what)


def _job_count(spec: dict[str, Any], what: str) -> int:
    if spec.get("suspend") is True:
        return 0
    n = _count(spec, "parallelism", 1, what)
    completions = spec.get("completions")
    return min(n, _count(spec, "completions", n, what)) if completions is not None else n


@dataclass(frozen=True)
class WorkloadKind:
    """Where one kind keeps its pod template and how many pods it runs."""

    kind: str
    group: str
    template: tuple[str, ...]
    """Path from the object to the pod template (``metadata`` + ``spec``)."""
    count: Callable[[dict[str, Any], str], int]
    """(the object's spec at ``count_at``, its label) -> pods to run; raises WorkloadError."""
    count_at: tuple[str, ...] = ("spec",)


WORKLOAD_KINDS: dict[str, WorkloadKind] = {k.kind: k for k in (
    WorkloadKind("Deployment", "apps", ("spec", "template"), _replica_count),
    WorkloadKind("ReplicaSet", "apps", ("spec", "template"), _replica_count),
    WorkloadKind("StatefulSet", "apps", ("spec", "template"), _replica_count),
    WorkloadKind("Job", "batch", ("spec", "template"), _job_count),
    WorkloadKind("CronJob", "batch", ("spec", "jobTemplate", "spec", "template"),
                 lambda spec, what: 0 if spec.get("suspend") is True else _job_count(
                     as_dict(as_dict(spec.get("jobTemplate")).get("spec")), what)),
)}
"""The workload kinds whose pods ``simulate`` and the webhook place (besides Pod itself)."""


@dataclass(frozen=True)
class Workload:
    """The pods one object makes: ``replicas`` copies of ``template``, named by ``pod_name``."""

    kind: str
    namespace: str
    name: str
    replicas: int
    template: dict[str, Any]
    """The pod template (``metadata`` and ``spec``); for a Pod, the Pod itself."""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def pod_name(self, i: int) -> str:
        if self.kind == "Pod":
            return self.name
        return f"{self.name}-{i}"

    def pod(self, i: int) -> dict[str, Any]:
        """Replica ``i`` as a Pod object: its own top level and metadata; its ``spec`` (and any
        other field) is the template's, shared by every replica: read it, never change it."""
        return {**self.template, "metadata": {**as_dict(self.template.get("metadata")), "name": self.pod_name(i),
                                              "namespace": self.namespace}, "apiVersion": "v1", "kind": "Pod"}

    def pods(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The replicas in creation order (at most ``limit``)."""
        for i in range(self.replicas if limit is None else min(limit, self.replicas)):
            yield self.pod(i)


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def is_pod_source(obj: Any) -> bool:
    """Whether ``obj`` is a Pod or a workload kind ``workload_of`` takes."""
    return isinstance(obj, dict) and (obj.get("kind") == "Pod" or obj.get("kind") in WORKLOAD_KINDS)


def workload_of(obj: dict[str, Any]) -> Workload:
    """The pods ``obj`` (a Pod or a workload kind) makes. Raises WorkloadError on an object that
    cannot make any (no pod template, a bad count); zero replicas is an answer, not an error."""
    meta = as_dict(obj.get("metadata"))
    ns = _text(meta.get("namespace")) or "default"
    # generateName: upstream adds 5 random characters, we add "0"
    name = _text(meta.get("name")) or f"{_text(meta.get('generateName')) or 'unnamed-'}0"
    kind = str(obj.get("kind"))
    label = f"{kind} {ns}/{name}"
    if kind == "Pod":
        if not isinstance(obj.get("spec"), dict):
            raise WorkloadError(f"{label}: no spec")
        return Workload(kind, ns, name, 1, obj)
    wk = WORKLOAD_KINDS.get(kind)
    if wk is None:
        raise WorkloadError(f"{label}: not a Pod or a workload kind")
    template: Any = obj
    for step in wk.template:
        template = template.get(step) if isinstance(template, dict) else None
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise WorkloadError(f"{label}: no pod template ({'.'.join(wk.template)}.spec)")
    at: Any = obj
    for step in wk.count_at:
        at = as_dict(at.get(step)) if isinstance(at, dict) else {}
    return Workload(kind, ns, name, wk.count(as_dict(at), label), template)
