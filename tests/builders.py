"""Builders for AdmissionReview requests and small objects used across tests."""

from __future__ import annotations

import copy
import uuid
from typing import Any

SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "slice-1"},
    "spec": {
        "driver": "gpu.example.com",
        "nodeName": "worker-1",
        "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}],
    },
}

PODGROUP: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "training-worker-0", "namespace": "default"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"single": {}}},
}


def obj(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    o = copy.deepcopy(base)
    o["spec"].update(spec)
    return o


def review(o: dict[str, Any] | None, *, op: str = "CREATE", old: dict[str, Any] | None = None,
           dry_run: bool = False, uid: str | None = None) -> dict[str, Any]:
    src = o or old or {}
    group, _, version = str(src.get("apiVersion", "")).rpartition("/")
    meta = src.get("metadata", {})
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": src.get("kind", "")},
            "resource": {"group": group, "version": version, "resource": str(src.get("kind", "")).lower() + "s"},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "operation": op,
            "userInfo": {"username": "test"},
            "object": o,
            "oldObject": old,
            "dryRun": dry_run,
        },
    }
