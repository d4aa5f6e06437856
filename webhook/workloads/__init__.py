"""Pods and workloads as feasibility inputs: what pods an object makes, and where they go.

Pure: no Flask, no kubernetes client. Entry points:

    workload_of(obj) -> Workload                 a Pod or Deployment/ReplicaSet/StatefulSet/Job/CronJob
    pod_claims(pod, lookup, group, gates)        the claims a pod uses (named shared, templates per pod)
    PodFilter.of(pod), static_reason, fit_reason the scheduler's node filters before DynamicResources
    place(workloads, model, lookup, gates, ...)  the pods placed one at a time -> Placement

Placement calls the one allocator (``webhook.allocator.allocate``) per pod.
"""

from __future__ import annotations

from webhook.workloads.claims import ClaimUse, Lookup, generated_name, pod_claims
from webhook.workloads.filters import NodeFacts, PodFilter, fit_reason, static_reason
from webhook.workloads.kinds import WORKLOAD_KINDS, Workload, WorkloadError, is_pod_source, workload_of
from webhook.workloads.placement import Placement, PodPlacement, place
from webhook.workloads.resources import pod_requests

__all__ = ["WORKLOAD_KINDS", "ClaimUse", "Lookup", "NodeFacts", "Placement", "PodFilter", "PodPlacement",
           "Workload", "WorkloadError", "fit_reason", "generated_name", "is_pod_source", "place", "pod_claims",
           "pod_requests", "static_reason", "workload_of"]
