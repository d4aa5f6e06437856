"""Feasibility warnings for Pods and workloads through the one pipeline (``/validate``, ``review``):
"k of N replicas can be placed now", missing references named, never a denial."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.workloads.builders import deployment, pod
from tests.workloads.test_place import GPUS, ONE_GPU
from webhook.admission.offline import review_objects
from webhook.config import Settings
from webhook.state.base import ClusterSnapshot, StaticState

STATE = StaticState(ClusterSnapshot.from_objects(GPUS))


def warnings(obj: dict[str, Any], operation: str = "CREATE", dry_run: bool = True,
             old: dict[str, Any] | None = None) -> list[str]:
    (done,) = review_objects([copy.deepcopy(obj)], old, operation, dry_run, Settings(), STATE)
    assert done.answer.allowed
    return [w for w in done.answer.warnings if w.startswith("feasibility: ")]


@pytest.mark.parametrize(("obj", "want"), [
    pytest.param(deployment("web", 3, claims=ONE_GPU), [], id="every-replica-fits"),
    pytest.param(deployment("web", 5, claims=ONE_GPU), [
        "feasibility: 3 of 5 replicas can be placed now; the 4th: 0/2 nodes are available: "
        "2 cannot allocate all claims",
        "feasibility: claim web-3-gpu request req-0 (class cls): device g0 already in use on n1",
        "feasibility: claim web-3-gpu request req-0 (class cls): device g1 already in use on n1"],
        id="three-of-five"),
    pytest.param(deployment("web", 0, claims=ONE_GPU), [], id="no-replicas"),
    pytest.param(pod("p", claims=ONE_GPU), [], id="pod-fits"),
    pytest.param(pod("p", claims={"gpu": ("template", "nope")}), [
        "feasibility: the pod cannot be placed now: template default/nope not found"],
        id="pod-missing-template-named"),
    pytest.param(pod("p", claims={"gpu": ("claim", "nope")}), [
        "feasibility: the pod cannot be placed now: claim default/nope not found"],
        id="pod-missing-claim-named"),
    pytest.param(pod("p", cpu="99"), [], id="pod-without-claims-or-group-is-not-checked"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"replicas": 1}}, [
        "feasibility: not checked: Deployment default/d: no pod template (spec.template.spec)"],
        id="workload-without-template"),
])
def test_warnings(obj: dict[str, Any], want: list[str]) -> None:
    assert warnings(obj) == want


def test_an_update_of_a_workload_is_not_checked() -> None:
    """Its running pods are in the state already: they would count twice."""
    d = deployment("web", 5, claims=ONE_GPU)
    assert warnings(d, "UPDATE", True, old=deployment("web", 1, claims=ONE_GPU)) == []


def test_every_warning_fits_the_apiservers_guidance() -> None:
    long = deployment("w" * 60, 9, claims={"g" * 60: ("template", "one")})
    got = warnings(long)
    assert got and all(len(w) <= 120 for w in got), got
