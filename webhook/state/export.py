"""A snapshot written as a directory ``--cluster-state`` reads back: one YAML file per kind.

The kinds are the state's (``base.KINDS``: never Secrets or anything else), the objects as the
state keeps them (pods trimmed to what placement reads, terminal ones absent). Per object only
the metadata the rules and the allocator read is kept (name, namespace, labels, generateName,
uid, ownerReferences); managed fields, annotations and resource versions are dropped.
``anonymized`` replaces every name that could say something about the cluster (namespaces,
object and node names, pool names, the names pods and claims use to refer to each other, the
hostname label) with a hash of it, the same name always the same hash, so references still
resolve. Drivers, device classes, device names and attributes are kept: the allocator needs them.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import yaml

from webhook.raw import as_dict
from webhook.state.base import KINDS, ClusterSnapshot

META_KEPT = ("name", "namespace", "generateName", "labels", "uid", "ownerReferences")
HOSTNAME = "kubernetes.io/hostname"


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # compacted objects share sub-dicts: write each whole
        return True


def trimmed_meta(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k in META_KEPT}
    return out


def hashed(name: Any) -> Any:
    """``x-`` and 10 hex digits of SHA-256: stable across runs and kinds."""
    if not isinstance(name, str) or not name:
        return name
    return "x-" + hashlib.sha256(name.encode()).hexdigest()[:10]


def _set(d: Any, key: str) -> None:
    if isinstance(d, dict) and key in d:
        d[key] = hashed(d[key])


def _each(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _selector(sel: Any) -> None:
    """Node selector terms: values of ``metadata.name`` fields and of the hostname label."""
    for term in _each((sel or {}).get("nodeSelectorTerms") if isinstance(sel, dict) else None):
        for expr in _each(term.get("matchFields")) + _each(term.get("matchExpressions")):
            if isinstance(expr, dict) and expr.get("key") in ("metadata.name", HOSTNAME):
                expr["values"] = [hashed(v) for v in _each(expr.get("values"))]


def anonymized(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` (already a copy) with its identifying names hashed, in place; returned."""
    kind = obj.get("kind")
    meta = as_dict(obj.get("metadata"))
    if kind not in ("DeviceClass",):
        for k in ("name", "namespace", "generateName"):
            _set(meta, k)
    meta.pop("ownerReferences", None)
    _set(meta.get("labels"), HOSTNAME)
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    _set(spec, "nodeName")
    if kind == "ResourceSlice":
        _set(spec.get("pool"), "name")
        _selector(spec.get("nodeSelector"))
        for d in _each(spec.get("devices")):
            _set(d, "nodeName")
            _selector(d.get("nodeSelector") if isinstance(d, dict) else None)
    elif kind == "Pod":
        for e in _each(spec.get("resourceClaims")) + _each(status.get("resourceClaimStatuses")):
            _set(e, "resourceClaimName")
            _set(e, "resourceClaimTemplateName")
        _set(spec.get("schedulingGroup"), "podGroupName")
        _selector(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"))
    elif kind == "ResourceClaim":
        for r in _each(status.get("reservedFor")):
            _set(r, "name")
        alloc = as_dict(status.get("allocation"))
        for r in _each(as_dict(alloc.get("devices")).get("results")):
            _set(r, "pool")
        _selector(alloc.get("nodeSelector"))
    elif kind == "PodGroup":
        for e in _each(spec.get("resourceClaims")):
            _set(e, "resourceClaimName")
            _set(e, "resourceClaimTemplateName")
    return obj


def export(snapshot: ClusterSnapshot, out: str | Path, anonymize: bool = False) -> dict[str, int]:
    """Write ``snapshot`` under ``out`` (created; one ``<kind>.yaml`` per kind with objects);
    returns the objects written per kind."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for kind in KINDS:
        objs = [trimmed_meta(o) for o in snapshot.of(kind)]
        if anonymize:
            objs = [anonymized(o) for o in objs]
        if not objs:
            continue
        (root / f"{kind.lower()}s.yaml").write_text(yaml.dump_all(objs, Dumper=_Dumper, sort_keys=False))
        counts[kind] = len(objs)
    return counts
