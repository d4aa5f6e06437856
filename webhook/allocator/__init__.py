"""The shared DRA allocator: cluster model, pool gathering, search, feasibility report.

Pure: no Flask, no kubernetes client, no network. Decides as the kube-scheduler's structured
allocator does (``reference/allocator.md``), in its sorted, deterministic form for every gate
set. Entry points:

    model_for(snapshot, gates) -> Model        cached per snapshot + gates
    allocate(claims, model, node=..., mode=...) -> Outcome
    consumed_capacity(device, request_capacity, gates) -> dict | reason
    eligible_devices(request, model) -> [Device] | reason
    feasibility_warnings(obj, snapshot, gates, deadline=..., max_steps=...) -> [str]
"""

from __future__ import annotations

from webhook.allocator.capacity import CapacityError, consumed_capacity
from webhook.allocator.claims import AllocError
from webhook.allocator.engine import JOINT, PER_CLAIM, Outcome, allocate, eligible_devices
from webhook.allocator.model import Model, model_for

__all__ = ["JOINT", "PER_CLAIM", "AllocError", "CapacityError", "Model", "Outcome", "allocate",
           "consumed_capacity", "eligible_devices", "feasibility_warnings", "model_for"]


def feasibility_warnings(*args, **kwargs):  # type: ignore[no-untyped-def]
    """See ``webhook.allocator.feasibility.feasibility_warnings``."""
    from webhook.allocator.feasibility import feasibility_warnings as impl
    return impl(*args, **kwargs)
