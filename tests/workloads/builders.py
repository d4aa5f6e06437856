"""Builders for pod and workload tests: Nodes with allocatable, pods, templates, workloads."""

from __future__ import annotations

from typing import Any

from tests.allocator.builders import CLASS, claim, device_class, req, rslice

__all__ = ["CLASS", "claim", "device_class", "req", "rslice"]


def node(name: str, cpu: str = "8", pods: str = "110", labels: dict[str, str] | None = None,
         **spec: Any) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "32Gi", "pods": pods}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"capacity": alloc, "allocatable": alloc}}


def template(name: str, *requests: dict[str, Any], ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": list(requests or (req(),))}}}}


def pod_spec(claims: dict[str, tuple[str, str]] | None = None, cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    """A pod spec; ``claims`` maps entry name -> ("claim" | "template", referenced name)."""
    c: dict[str, Any] = {"name": "c", "image": "x"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    out: dict[str, Any] = {"containers": [c], **spec}
    if claims:
        out["resourceClaims"] = [
            {"name": e, ("resourceClaimName" if how == "claim" else "resourceClaimTemplateName"): ref}
            for e, (how, ref) in claims.items()]
    return out


def pod(name: str, ns: str = "default", **kw: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": pod_spec(**kw)}


def deployment(name: str, replicas: int, ns: str = "default", **kw: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(**kw)}}}
