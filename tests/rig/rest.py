"""The rig's own small REST client: keep-alive HTTPS as the admin, objects by kind.

For bulk work (thousands of objects) kubectl's process start-up is too slow; this sends what a
real client sends (JSON), with the rig's CA and the admin's client certificate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import requests

from tests.rig.cluster import ApiServer, RigError

TIMEOUT = 60.0

#: kind -> (API path prefix, plural, namespaced) of every kind the rig writes.
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "PodGroup": ("/apis/scheduling.k8s.io/v1beta1", "podgroups", True),
    "Workload": ("/apis/scheduling.k8s.io/v1beta1", "workloads", True),
    "Pod": ("/api/v1", "pods", True),
    "Node": ("/api/v1", "nodes", False),
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "CronJob": ("/apis/batch/v1", "cronjobs", True),
}


def admin_session(api: ApiServer) -> requests.Session:
    """A keep-alive HTTP session as the rig's admin (client certificate, the rig's CA)."""
    s = requests.Session()
    s.trust_env = False  # REQUESTS_CA_BUNDLE would win over our CA
    s.verify, s.cert = str(api.pki.ca), (str(api.pki.cert("admin")), str(api.pki.key("admin")))
    return s


class Rest:
    """Create, patch, list and delete objects of `RESOURCES` kinds on one apiserver."""

    def __init__(self, api: ApiServer, session: requests.Session | None = None) -> None:
        self.api = api
        self.session = session or admin_session(api)

    def path(self, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        base, plural, namespaced = RESOURCES[kind]
        ns = f"/namespaces/{namespace or 'default'}" if namespaced and namespace != "*" else ""
        return f"{self.api.url}{base}{ns}/{plural}" + (f"/{name}" if name else "")

    def url_of(self, obj: Mapping[str, Any], name: bool = False) -> str:
        meta = obj.get("metadata") or {}
        return self.path(str(obj.get("kind")), meta.get("namespace"), meta.get("name") if name else None)

    def request(self, method: str, url: str, body: Any = None, content_type: str = "application/json",
                params: Mapping[str, str] | None = None) -> requests.Response:
        try:
            return self.session.request(method, url, timeout=TIMEOUT, params=params,
                                        data=None if body is None else json.dumps(body),
                                        headers={"Content-Type": content_type})
        except requests.RequestException as e:
            raise RigError(f"{method} {url}: {e}") from e

    def create(self, obj: Mapping[str, Any], exists_ok: bool = False) -> dict[str, Any]:
        """POST ``obj``; the object as stored. AlreadyExists is an error unless ``exists_ok``."""
        r = self.request("POST", self.url_of(obj), obj)
        if r.status_code == 409 and exists_ok:
            return dict(obj)
        if r.status_code not in (200, 201):
            raise RigError(f"creating {obj.get('kind')} {(obj.get('metadata') or {}).get('name')}: "
                           f"{r.status_code} {r.text[:1500]}")
        out: dict[str, Any] = r.json()
        return out

    def patch(self, obj: Mapping[str, Any], body: Any, *, kind: str = "merge", subresource: str = "") -> dict[str, Any]:
        """PATCH ``obj`` (merge or json patch), optionally its ``status`` subresource."""
        types = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}
        url = self.url_of(obj, name=True) + (f"/{subresource}" if subresource else "")
        r = self.request("PATCH", url, body, types[kind])
        if r.status_code != 200:
            raise RigError(f"patching {obj.get('kind')} {(obj.get('metadata') or {}).get('name')}"
                           f"{'/' + subresource if subresource else ''}: {r.status_code} {r.text[:1500]}")
        out: dict[str, Any] = r.json()
        return out

    def list(self, kind: str, namespace: str | None = "*", label_selector: str = "") -> list[dict[str, Any]]:
        """Every object of ``kind`` (``namespace="*"``: in all namespaces) matching the selector."""
        r = self.request("GET", self.path(kind, namespace), params={"labelSelector": label_selector}
                         if label_selector else None)
        if r.status_code != 200:
            raise RigError(f"listing {kind}: {r.status_code} {r.text[:1500]}")
        items: list[dict[str, Any]] = r.json().get("items") or []
        for item in items:  # a list's items carry no kind
            item.setdefault("kind", kind)
        return items

    def delete_collection(self, kind: str, namespace: str | None = None, label_selector: str = "",
                          grace_seconds: int | None = None) -> None:
        params = {k: v for k, v in (("labelSelector", label_selector),
                                    ("gracePeriodSeconds", "" if grace_seconds is None else str(grace_seconds))) if v}
        r = self.request("DELETE", self.path(kind, namespace), params=params)
        if r.status_code not in (200, 404):
            raise RigError(f"deleting {kind} ({label_selector}): {r.status_code} {r.text[:1500]}")

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        r = self.request("DELETE", self.path(kind, namespace, name))
        if r.status_code not in (200, 202, 404):
            raise RigError(f"deleting {kind} {name}: {r.status_code} {r.text[:1500]}")


__all__ = ["RESOURCES", "Rest", "admin_session"]
