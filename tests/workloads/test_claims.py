"""The claims a pod uses (``webhook/workloads/claims.py``): named ones found and shared, template ones
made per pod (and per PodGroup) with the controller's names, minus its random suffix."""

from __future__ import annotations

import pytest

from tests.workloads.builders import claim, pod, req, template
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, generated_name, pod_claims

WORKLOAD = FeatureGates.parse("GenericWorkload=true,DRAWorkloadResourceClaims=true")
STATE = ClusterSnapshot.from_objects([claim("shared", req()), template("tpl")])


@pytest.mark.parametrize(("owner", "entry", "want"), [
    pytest.param("web-0", "gpu", "web-0-gpu", id="short"),
    pytest.param("p" * 60, "gpu", "p" * 52 + "-" + "gp", id="long-pod-name-both-cut-in-proportion"),
    pytest.param("a" * 30, "b" * 30, "a" * 27 + "-" + "b" * 27, id="both-long"),
])
def test_generated_names_follow_the_controller(owner: str, entry: str, want: str) -> None:
    got = generated_name(owner, entry)
    assert got == want and len(got) <= 57


def test_named_claims_are_shared_and_templates_give_each_pod_its_own() -> None:
    uses, notes = pod_claims(pod("web-0", claims={"a": ("claim", "shared"), "b": ("template", "tpl")}),
                             Lookup(STATE), None, FeatureGates())
    assert notes == []
    assert [(u.entry, u.key, u.shared) for u in uses] == [("a", "default/shared", True),
                                                         ("b", "default/web-0-b", False)]
    assert uses[1].claim["spec"] == template("tpl")["spec"]["spec"]
    assert uses[1].claim["metadata"] == {"name": "web-0-b", "namespace": "default"}


def test_missing_references_are_notes() -> None:
    uses, notes = pod_claims(pod("p", ns="other", claims={"a": ("claim", "shared"), "b": ("template", "tpl")}),
                             Lookup(STATE), None, FeatureGates())
    assert uses == []
    assert notes == ["claim other/shared not found", "template other/tpl not found"]


def test_input_objects_are_found_before_the_state() -> None:
    mine = claim("shared", req(count=2))
    uses, _ = pod_claims(pod("p", claims={"a": ("claim", "shared")}), Lookup(STATE, [mine]), None, FeatureGates())
    assert uses[0].claim is mine


def test_a_live_pod_uses_the_claim_its_status_names() -> None:
    made = claim("p-b-x7k2q", req())
    p = pod("p", claims={"b": ("template", "tpl")})
    p["status"] = {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x7k2q"}]}
    uses, _ = pod_claims(p, Lookup(ClusterSnapshot.from_objects([made, template("tpl")])), None, FeatureGates())
    assert [(u.key, u.claim is made) for u in uses] == [("default/p-b-x7k2q", True)]


def group(*entries: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default"}, "spec": {"resourceClaims": list(entries)}}


@pytest.mark.parametrize(("entries", "gates", "key", "shared"), [
    pytest.param([{"name": "b", "resourceClaimTemplateName": "tpl"}], WORKLOAD, "default/pg-b", True,
                 id="same-entry-uses-the-groups-claim"),
    pytest.param([{"name": "other", "resourceClaimTemplateName": "tpl"}], WORKLOAD, "default/p-b", False,
                 id="another-name-is-the-pods-own"),
    pytest.param([{"name": "b", "resourceClaimTemplateName": "tpl"}], FeatureGates(), "default/p-b", False,
                 id="workload-claims-gate-off"),
])
def test_podgroup_claims(entries: list[dict[str, str]], gates: FeatureGates, key: str, shared: bool) -> None:
    uses, _ = pod_claims(pod("p", claims={"b": ("template", "tpl")}), Lookup(STATE), group(*entries), gates)
    assert [(u.key, u.shared) for u in uses] == [(key, shared)]
