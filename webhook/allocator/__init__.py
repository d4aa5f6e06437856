"""The shared DRA allocator: cluster model, pool gathering, search, feasibility report.

Pure: no Flask, no kubernetes client, no network. Decides as the kube-scheduler's structured
allocator does (``docs/allocator.md``; a ``§N`` in this package cites its section N), in its
sorted, deterministic form for every gate set. Entry points:

    model_for(snapshot, gates) -> Model        cached per snapshot + gates
    allocate(claims, model, Call(nodes=..., held=..., memo=..., mode=..., limits=Limits(...)))
        -> Allocation                          every candidate node searched, as the scheduler
                                               filters them (a fatal error on any one fails)
    consumed_capacity(device, request_capacity, gates) -> dict | Reason
    eligible_devices(request, model) -> [Device] | Reason
    feasibility_warnings(obj, snapshot, gates, deadline=..., max_steps=...) -> [str]

Failures are ``reasons.Reason`` values (a code plus fields), worded only by ``reasons``.
"""

from __future__ import annotations

from webhook.allocator.allocation import Allocation
from webhook.allocator.capacity import CapacityError, consumed_capacity
from webhook.allocator.claims import AllocError
from webhook.allocator.classes import node_names, run_end
from webhook.allocator.engine import JOINT, PER_CLAIM, Call, allocate, eligible_devices
from webhook.allocator.feasibility import feasibility_warnings
from webhook.allocator.frame import Limits
from webhook.allocator.model import Model, model_for
from webhook.allocator.reasons import Code, Reason
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

__all__ = ["JOINT", "PER_CLAIM", "AllocError", "Allocation", "Call", "CapacityError", "Code", "Limits", "Model",
           "Reason", "allocate", "consumed_capacity", "eligible_devices", "feasibility_warnings", "model_for", "warm"]


def warm(snapshot: ClusterSnapshot, gates: FeatureGates) -> int:
    """Build the model, convert every device and key every node's class ahead of the first request.

    Converted devices and the devices' part of a class key are cached across snapshots (unchanged
    slices are reused), so after this only changed slices cost much; node classes are per model.
    Without it the first feasibility check on a large cluster spends its budget converting
    devices. CEL views are not built here: a device's view is built when a selector is first
    evaluated on it (about a microsecond), and with node classes most devices never need one.
    Returns the number of devices. Pure; safe to run in a thread.
    """
    model = model_for(snapshot, gates)
    n = 0
    for sl in model.slices:
        n += len(sl.devices)
    names = node_names(model)
    i = 0
    while i < len(names):  # every node's class (``classes.py``), as the first infeasible claim needs them
        i = run_end(model, i)
    return n
