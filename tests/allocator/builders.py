"""Builders for allocator tests: raw objects as the apiserver stores them, short to write."""

from __future__ import annotations

from typing import Any

DRV = "driver.example.com"
CLASS = "cls"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def device_class(name: str = CLASS, driver: str = DRV) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}


def dev(name: str, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    attrs = kw.pop("attrs", None)
    if attrs:
        d["attributes"] = {k: ({"string": v} if isinstance(v, str) else
                               {"bool": v} if isinstance(v, bool) else {"int": v}) for k, v in attrs.items()}
    d.update(kw)
    return d


def counters(counter_set: str, groups: list[str] | None = None, **amounts: str) -> dict[str, Any]:
    c: dict[str, Any] = {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in amounts.items()}}
    if groups is not None:
        c["compatibilityGroups"] = groups
    return c


def rslice(name: str, devices: list[dict[str, Any]] | None = None, *, node_name: str | None = "node-1",
           pool: str = "pool", driver: str = DRV, generation: int = 1, count: int = 1,
           shared: dict[str, dict[str, str]] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                    "resourceSliceCount": count}}
    if node_name:
        s["nodeName"] = node_name
    if devices is not None:
        s["devices"] = devices
    if shared is not None:
        s["sharedCounters"] = [{"name": n, "counters": {k: {"value": v} for k, v in c.items()}}
                               for n, c in shared.items()]
    s.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": s}


def req(name: str = "req-0", count: int = 1, cls: str = CLASS, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": kw.pop("mode", "ExactCount")}
    if body["allocationMode"] == "ExactCount":
        body["count"] = count
    sels = kw.pop("selectors", None)
    if sels:
        body["selectors"] = [{"cel": {"expression": e}} for e in sels]
    body.update(kw)
    return {"name": name, "exactly": body}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": s["name"], **s["exactly"]} for s in subs]}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          ns: str = "default", allocation: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": name, "namespace": ns},
                         "spec": {"devices": {"requests": list(requests)}}}
    if constraints:
        c["spec"]["devices"]["constraints"] = constraints
    if allocation is not None:
        c["status"] = {"allocation": {"devices": {"results": allocation}}}
    return c


def result(device: str, pool: str = "pool", driver: str = DRV, request: str = "req-0",
           **kw: Any) -> dict[str, Any]:
    return {"request": request, "driver": driver, "pool": pool, "device": device, **kw}


def searched_nodes(monkeypatch: Any) -> list[str]:
    """The names of the nodes ``engine`` searches from now on, in order (each search once)."""
    from webhook.allocator import engine

    calls: list[str] = []
    real = engine._on_node

    def counting(run: Any, node: Any, *a: Any) -> Any:
        calls.append(node.name)
        return real(run, node, *a)
    monkeypatch.setattr(engine, "_on_node", counting)
    return calls


def taint_rule(name: str, effect: str = "NoSchedule", key: str = "example.com/maintenance", value: str = "",
               **selector: str | None) -> dict[str, Any]:
    """A DeviceTaintRule; ``selector`` holds driver/pool/device (``selector=None`` for none at all)."""
    spec: dict[str, Any] = {"taint": {"key": key, "effect": effect, **({"value": value} if value else {})}}
    if "selector" not in selector:
        spec["deviceSelector"] = dict(selector)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def toleration(key: str = "example.com/maintenance", operator: str = "Exists", effect: str = "",
               **kw: Any) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"effect": effect} if effect else {}), **kw}
