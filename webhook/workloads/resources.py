"""What a pod requests of its node and what a node offers: kube-scheduler's NodeResourcesFit inputs.

Pure. ``pod_requests`` follows upstream's ``PodRequests`` (component-helpers ``resource``): the
containers' requests summed; each init container's requests as a floor (a restartable init
container, a sidecar, adds to the containers and to the init containers after it); pod-level
requests (``spec.resources.requests``, PodLevelResources, on by default since 1.34) replace
the aggregate for cpu, memory and hugepages; ``spec.overhead`` added. Requests the apiserver
would default from limits (a container with limits and no requests) are read from the limits.
Amounts are integers in the scheduler's units: millicores for cpu, plain values otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.quantity import Quantity, try_parse
from webhook.raw import as_dict, as_list

CPU, MEMORY, EPHEMERAL, PODS = "cpu", "memory", "ephemeral-storage", "pods"
POD_LEVEL = (CPU, MEMORY)
"""Resources pod-level requests may set (plus every ``hugepages-*``)."""

Amounts = dict[str, int]




def amount(name: str, q: Quantity) -> int:
    """A quantity in the scheduler's unit for ``name`` (``MilliValue`` for cpu, ``Value`` else)."""
    return q.milli_value() if name == CPU else q.int_value()


def amounts(raw: Any) -> Amounts:
    """A ResourceList (``{"cpu": "500m", ...}``) as amounts; unparsable entries are left out
    (the apiserver refuses them: only a hand-written state file can hold one)."""
    out: Amounts = {}
    for name, text in as_dict(raw).items():
        q = try_parse(text)
        if isinstance(name, str) and q is not None:
            out[name] = amount(name, q)
    return out


def _container_requests(c: Any) -> Amounts:
    res = as_dict(as_dict(c).get("resources"))
    got = amounts(res.get("requests"))
    for name, value in amounts(res.get("limits")).items():
        got.setdefault(name, value)  # the apiserver's default: requests from limits
    return got


def _add(into: Amounts, more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _floor(into: Amounts, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Any) -> Amounts:
    """What the pod requests of its node (see the module doc); never raises."""
    spec = as_dict(as_dict(pod).get("spec"))
    total: Amounts = {}
    for c in as_list(spec.get("containers")):
        _add(total, _container_requests(c))
    sidecars: Amounts = {}
    init_floor: Amounts = {}
    for c in as_list(spec.get("initContainers")):
        own = _container_requests(c)
        if as_dict(c).get("restartPolicy") == "Always":  # a sidecar runs beside everything after it
            _add(total, own)
            _add(sidecars, own)
            _floor(init_floor, sidecars)
        else:
            during = dict(own)
            _add(during, sidecars)
            _floor(init_floor, during)
    _floor(total, init_floor)
    pod_level = amounts(as_dict(spec.get("resources")).get("requests"))
    if any(_pod_level(k) for k in pod_level):
        total.update({k: v for k, v in pod_level.items() if _pod_level(k)})
    _add(total, amounts(spec.get("overhead")))
    return total


def _pod_level(name: str) -> bool:
    return name in POD_LEVEL or name.startswith("hugepages-")


def node_allocatable(node: Any) -> Amounts:
    """``status.allocatable`` of a Node as amounts (an absent one allows nothing, not even a
    pod: the scheduler reads the missing ``pods`` entry as 0)."""
    return amounts(as_dict(as_dict(node).get("status")).get("allocatable"))


def show(name: str, value: int) -> str:
    """An amount as a quantity text (``1500m``, ``8Gi``)."""
    if name == CPU:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    for suffix, factor in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value >= factor and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)
