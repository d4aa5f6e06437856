"""A workload author's flow from the seed (PodGroup API page): Workload, PodGroup and a Pod that
joins it with `spec.schedulingGroup`, created for real through both webhooks and read back.

The seed spells the PodGroup's reference `spec.podGroupTemplateRef.workload`, the v1alpha2 form
the served v1beta1 API rejects; the author uses the served `spec.workloadRef`, as our warning says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import REPO
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

SEED = REPO / "examples" / "seeds" / "seed-003-workload-podgroup-pod.yaml"
NAMESPACE = "e2e-training"


def _seed_docs() -> dict[str, dict[str, Any]]:
    docs = {d["kind"]: d for d in yaml.safe_load_all(SEED.read_text()) if d}
    ref = docs["PodGroup"]["spec"].pop("podGroupTemplateRef")["workload"]
    docs["PodGroup"]["spec"]["workloadRef"] = {"workloadName": ref["workloadName"],
                                               "templateName": ref["podGroupTemplateName"]}
    for d in docs.values():
        d["metadata"]["namespace"] = NAMESPACE
    return docs


def _get(sb: Sandbox, kind: str, name: str) -> dict[str, Any]:
    return json.loads(sb.must("get", kind, name, "-n", NAMESPACE, "-o", "json"))


def test_workload_podgroup_and_pod_are_created_and_read_back(sandbox: Sandbox):
    sb = sandbox
    docs = _seed_docs()
    sb.must("create", "namespace", NAMESPACE)
    sb.must("create", "serviceaccount", "default", "-n", NAMESPACE)
    try:
        for kind in ("Workload", "PodGroup", "Pod"):
            sb.must("create", "-f", "-", input=json.dumps(docs[kind]))
        wl = _get(sb, "workloads.scheduling.k8s.io", "training-policy")
        assert [t["name"] for t in wl["spec"]["podGroupTemplates"]] == ["worker"]
        assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 4}}
        pg = _get(sb, "podgroups.scheduling.k8s.io", "training-worker-0")
        assert pg["spec"]["workloadRef"] == {"workloadName": "training-policy", "templateName": "worker"}
        assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
        assert pg["spec"]["disruptionMode"] == {"single": {}}, "the apiserver's default"
        pod = _get(sb, "pods", "worker-0")
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "training-worker-0"}
    finally:
        sb.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
