"""What the cluster state keeps of a Pod: only what the node filters and the placement read
(``webhook.workloads``).

Pure, stdlib only. A cluster's pods are most of its objects, and most of a pod (images, env, volumes,
probes, annotations, managed fields) matters to no filter: kept whole, 100,000 pods take
gigabytes. A bound pod (``spec.nodeName``) is kept for what it uses of its node (its requests)
and its PodGroup (gangs count bound members); a pending pod also for what ``explain`` places
(selectors, affinity, tolerations, claims). A terminal pod (Succeeded, Failed) uses nothing
and is not kept, as the scheduler's cache does not keep it. The result is still a Pod that
every reader reads as it reads the whole one (``tests/workloads/test_trim.py``).
"""

from __future__ import annotations

from typing import Any

from webhook.raw import as_dict, as_list

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
"""The node affinity the scheduler filters on (the preferred one only scores)."""

TERMINAL = ("Succeeded", "Failed")
"""Pod phases the scheduler's informer leaves out (``status.phase!=Succeeded,status.phase!=Failed``)."""
FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
"""The same, as the live state's LIST/WATCH asks the apiserver (it then sends DELETED for a pod
that turns terminal)."""



_META = ("name", "namespace", "uid", "resourceVersion", "generateName")
_PENDING_SPEC = ("nodeSelector", "tolerations", "resourceClaims", "priority", "schedulerName")
_BOTH_SPEC = ("nodeName", "schedulingGroup", "overhead")


def _container(c: Any) -> dict[str, Any]:
    c = as_dict(c)
    res = as_dict(c.get("resources"))
    out: dict[str, Any] = {"name": c.get("name")}
    kept = {k: res[k] for k in ("requests", "limits") if k in res}
    if kept:
        out["resources"] = kept
    if "restartPolicy" in c:  # a sidecar (restartable init container) counts differently
        out["restartPolicy"] = c["restartPolicy"]
    return out


def is_terminal(pod: Any) -> bool:
    return as_dict(as_dict(pod).get("status")).get("phase") in TERMINAL


def trim_pod(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The part of ``pod`` the state keeps; None for a terminal pod (not kept at all)."""
    if is_terminal(pod):
        return None
    meta, spec, status = as_dict(pod.get("metadata")), as_dict(pod.get("spec")), as_dict(pod.get("status"))
    bound = bool(spec.get("nodeName"))
    out_spec: dict[str, Any] = {k: spec[k] for k in _BOTH_SPEC if k in spec}
    out_spec["containers"] = [_container(c) for c in as_list(spec.get("containers"))]
    if "initContainers" in spec:
        out_spec["initContainers"] = [_container(c) for c in as_list(spec.get("initContainers"))]
    if "requests" in as_dict(spec.get("resources")):
        out_spec["resources"] = {"requests": as_dict(spec.get("resources"))["requests"]}
    if not bound:
        out_spec.update({k: spec[k] for k in _PENDING_SPEC if k in spec})
        required = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(REQUIRED)
        if required is not None:
            out_spec["affinity"] = {"nodeAffinity": {REQUIRED: required}}
    out_status = {k: status[k] for k in ("phase",) + (() if bound else ("resourceClaimStatuses",))
                  if k in status}
    out: dict[str, Any] = {"apiVersion": pod.get("apiVersion", "v1"), "kind": "Pod",
                           "metadata": {k: meta[k] for k in _META if k in meta}, "spec": out_spec}
    if out_status:
        out["status"] = out_status
    return out
