"""What the state keeps of a pod (``webhook/state/pods.py``) reads the same as the whole pod to
everything that reads it: node filters, requests, claims, gang membership."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.state.fakeapi import pod_obj
from tests.workloads.builders import template
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.state.files import from_dir
from webhook.state.pods import trim_pod
from webhook.workloads import Lookup, PodFilter, pod_claims, pod_requests


def rich(node: str | None = None) -> dict[str, Any]:
    p = pod_obj("rich", node=node)
    spec = p["spec"]
    spec.update({
        "nodeSelector": {"zone": "a"}, "priority": 10, "schedulerName": "default-scheduler",
        "schedulingGroup": {"podGroupName": "pg"}, "overhead": {"cpu": "100m"},
        "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "gpu", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}},
        "initContainers": [{"name": "side", "image": "x", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "1"}}},
                           {"name": "init", "image": "x", "resources": {"limits": {"cpu": "3"}}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]})
    p["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "rich-gpu-abcde"}]
    return p


def same_filter(a: PodFilter, b: PodFilter) -> bool:
    return (a.node_name, a.node_selector, a.tolerations, dict(a.requests)) == (
        b.node_name, b.node_selector, b.tolerations, dict(b.requests)) and (
        (a.affinity is None) == (b.affinity is None)) and (a.affinity is None or a.affinity.terms == b.affinity.terms)


@pytest.mark.parametrize("node", [None, "node-1"], ids=["pending", "bound"])
def test_the_trimmed_pod_reads_the_same(node: str | None) -> None:
    whole = rich(node)
    kept = trim_pod(whole)
    assert kept is not None
    assert pod_requests(kept) == pod_requests(whole) == {"cpu": 4100, "memory": 2 << 30}  # (1 + init 3) + overhead
    assert kept["spec"]["schedulingGroup"] == {"podGroupName": "pg"}  # gangs count bound members
    assert len(json.dumps(kept)) * (4 if node else 2) < len(json.dumps(whole))
    if node is None:
        assert same_filter(PodFilter.of(kept), PodFilter.of(whole))
        look = Lookup(ClusterSnapshot.from_objects([template("tpl")]))
        assert pod_claims(kept, look, None, FeatureGates()) == pod_claims(whole, look, None, FeatureGates())
    else:
        assert set(kept["spec"]) == {"nodeName", "schedulingGroup", "overhead", "containers", "initContainers",
                                     "resources"}


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_are_not_kept(phase: str) -> None:
    assert trim_pod(pod_obj("done", node="n", phase=phase)) is None


def test_a_state_directory_keeps_pods_trimmed_and_leaves_terminal_ones_out(tmp_path: Path) -> None:
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([rich("node-1"), pod_obj("done", node="n", phase="Failed")]))
    (got,) = from_dir(tmp_path).of("Pod")
    assert got == trim_pod(rich("node-1"))
