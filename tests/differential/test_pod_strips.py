"""Differential: what the apiserver stores of a Pod's (and a pod template's) `spec.schedulingGroup`
in every gate profile is what our /mutate leaves: with GenericWorkload off it is dropped, before
validation, so an invalid group name is then no error either. The real kube-apiserver (server-side
dry run, no webhook) against `review`'s pipeline, as for every other strip.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.differential.oracle import ApiOracle
from tests.differential.ours import our_verdict
from tests.differential.profiles import profiles

pytestmark = pytest.mark.differential

CONTAINERS = [{"name": "c", "image": "registry.example.com/app:1"}]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": CONTAINERS, **spec}}


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": CONTAINERS, **spec}}}}


CASES = [
    pytest.param(pod("strip-group", schedulingGroup={"podGroupName": "pg"}), id="pod-with-group"),
    pytest.param(pod("strip-bad-group", schedulingGroup={"podGroupName": "Bad_Name"}), id="pod-with-invalid-group"),
    pytest.param(pod("strip-no-group"), id="pod-without-group"),
    pytest.param(pod("strip-group-claims", schedulingGroup={"podGroupName": "pg"},
                     resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
                 id="pod-with-group-and-claims"),
    pytest.param(deployment("strip-template", schedulingGroup={"podGroupName": "pg"}), id="template-with-group"),
]


def _group(obj: dict[str, Any] | None) -> Any:
    spec = (obj or {}).get("spec") or {}
    if (obj or {}).get("kind") == "Deployment":
        spec = ((spec.get("template") or {}).get("spec")) or {}
    return spec.get("schedulingGroup")


@pytest.fixture(scope="module")
def oracle(api_oracle: ApiOracle) -> ApiOracle:
    api_oracle.prepare(c.values[0] for c in CASES)  # the namespace and its default ServiceAccount
    return api_oracle


@pytest.mark.parametrize("obj", CASES)
def test_scheduling_group_is_stored_as_the_apiserver_stores_it(oracle: ApiOracle, obj: dict[str, Any]) -> None:
    profs = profiles()
    upstream = oracle.create_many([(p, obj) for p in profs])
    compared = 0
    for (name, gates), up in zip(profs.items(), upstream, strict=True):
        ours = our_verdict(obj, gates)
        assert ours.allowed == up.allowed, (name, ours, up)
        if up.allowed:
            assert _group(ours.stored) == _group(up.stored), name
        else:
            assert {c for c in ours.causes if "schedulingGroup" in c[0]} == {
                c for c in up.causes if "schedulingGroup" in c[0]}, (name, ours, up)
        compared += 1
    assert compared == len(profs)
    # Both sides of the gate are seen: the group is kept in one profile and dropped in another.
    kept = [_group(u.stored) is not None for u in upstream if u.allowed]
    if _group(obj) is not None and obj["spec"].get("schedulingGroup", {}).get("podGroupName") != "Bad_Name":
        assert True in kept and False in kept
