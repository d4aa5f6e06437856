"""The seed's (003) PodGroup/Workload/Pod manifests and examples/scheduling pass the rules pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.registry import rules_for
from webhook.rules.scheduling import pod, podgroup
from webhook.rules.scheduling.podgroup import SPELLING_WARNING

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(EXAMPLES.glob("seeds/seed-003-*.yaml")) + sorted(EXAMPLES.glob("scheduling/*.yaml"))


def documents() -> list[Any]:
    out = []
    for f in FILES:
        for i, doc in enumerate(yaml.safe_load_all(f.read_text())):
            out.append(pytest.param(doc, id=f"{f.stem}-{i}-{doc['kind']}"))
    return out


def review(doc: dict[str, Any], gates: str) -> tuple[dict[str, Any], list[Any], list[str]]:
    """apply_defaults → mutate → patch → validate → warnings, as ``dra-webhook review`` does."""
    group = doc["apiVersion"].rpartition("/")[0]
    mod = rules_for(group, doc["kind"])
    assert mod is not None
    ctx = RuleContext(FeatureGates.parse(gates))
    obj = mod.apply_defaults(doc)
    m = mod.mutate(obj, ctx)
    new = apply_patch(obj, m.ops)
    return new, mod.validate(new, ctx), m.warnings + mod.warnings(new, ctx)


def test_the_seed_files_are_there() -> None:
    assert len([f for f in FILES if "seed-003" in f.name]) == 4


@pytest.mark.parametrize(
    "gates",
    [
        pytest.param("", id="defaults"),
        pytest.param("GenericWorkload=true", id="generic-workload"),
        pytest.param("GenericWorkload=true,DRAWorkloadResourceClaims=true", id="workload-claims"),
    ],
)
@pytest.mark.parametrize("doc", documents())
def test_seed_and_example_documents_are_admitted(doc: dict[str, Any], gates: str) -> None:
    new, errs, warns = review(doc, gates)
    assert errs == []
    spec = doc.get("spec") or {}
    assert (SPELLING_WARNING in warns) is ("podGroupTemplateRef" in spec)
    # PodGroups and Workloads are not served with the gate off; a Pod's schedulingGroup is dropped.
    gate_warned = any(w.startswith(("GenericWorkload feature gate is off", "GenericWorkload is off: removed"))
                      for w in warns)
    assert gate_warned is ("GenericWorkload" not in gates)
    if doc["kind"] == "Pod":
        assert ("schedulingGroup" in new["spec"]) is ("GenericWorkload" in gates)
    assert all(len(w) <= 120 for w in warns)


def test_seed_podgroup_reference_is_mapped_to_the_served_field() -> None:
    docs = list(yaml.safe_load_all((EXAMPLES / "seeds/seed-003-workload-podgroup-pod.yaml").read_text()))
    new, errs, _ = review(docs[1], "GenericWorkload=true")
    assert errs == []
    assert new["spec"]["workloadRef"] == {"workloadName": "training-policy", "templateName": "worker"}
    assert "podGroupTemplateRef" not in new["spec"]
    # The Workload of the same file defines that template.
    assert docs[0]["spec"]["podGroupTemplates"][0]["name"] == new["spec"]["workloadRef"]["templateName"]


@pytest.mark.parametrize(
    ("gates", "kept"),
    [
        pytest.param("GenericWorkload=true", False, id="claims-gate-off-dropped"),
        pytest.param("GenericWorkload=true,DRAWorkloadResourceClaims=true", True, id="claims-gate-on-kept"),
    ],
)
def test_seed_resource_claims_follow_the_gate(gates: str, kept: bool) -> None:
    doc = yaml.safe_load((EXAMPLES / "seeds/seed-003-podgroup-resourceclaims.yaml").read_text())
    new, errs, warns = review(doc, gates)
    assert errs == []
    assert ("resourceClaims" in new["spec"]) is kept
    assert any("DRAWorkloadResourceClaims is off" in w for w in warns) is not kept


def test_example_pod_shares_the_example_podgroup_claim() -> None:
    group = yaml.safe_load((EXAMPLES / "scheduling/podgroup-training-worker-0.yaml").read_text())
    member = yaml.safe_load((EXAMPLES / "scheduling/pod-training-worker-0-a.yaml").read_text())
    assert pod.podgroup_claim_mismatch_warnings(member, podgroup.apply_defaults(group)) == []
