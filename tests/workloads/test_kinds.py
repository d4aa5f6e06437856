"""A Pod or a workload object -> its replicas (``webhook/workloads/kinds.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.workloads import WorkloadError, workload_of

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def obj(kind: str, spec: dict[str, Any], group: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


def job(**spec: Any) -> dict[str, Any]:
    return obj("Job", {"template": TEMPLATE, **spec}, "batch/v1")


@pytest.mark.parametrize(("o", "replicas"), [
    pytest.param(obj("Deployment", {"template": TEMPLATE}), 1, id="deployment-replicas-default-1"),
    pytest.param(obj("Deployment", {"replicas": 5, "template": TEMPLATE}), 5, id="deployment-replicas"),
    pytest.param(obj("Deployment", {"replicas": 0, "template": TEMPLATE}), 0, id="deployment-scaled-to-zero"),
    pytest.param(obj("ReplicaSet", {"replicas": 3, "template": TEMPLATE}), 3, id="replicaset"),
    pytest.param(obj("StatefulSet", {"replicas": 2, "template": TEMPLATE}), 2, id="statefulset"),
    pytest.param(job(), 1, id="job-parallelism-default-1"),
    pytest.param(job(parallelism=4), 4, id="job-parallelism"),
    pytest.param(job(parallelism=4, completions=2), 2, id="job-completions-smaller"),
    pytest.param(job(parallelism=2, completions=9), 2, id="job-completions-larger"),
    pytest.param(job(parallelism=4, suspend=True), 0, id="job-suspended"),
    pytest.param(obj("CronJob", {"jobTemplate": {"spec": {"parallelism": 3, "template": TEMPLATE}}}, "batch/v1"),
                 3, id="cronjob-its-job"),
    pytest.param(obj("CronJob", {"suspend": True, "jobTemplate": {"spec": {"template": TEMPLATE}}}, "batch/v1"),
                 0, id="cronjob-suspended"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": TEMPLATE["spec"]}, 1,
                 id="pod"),
])
def test_replica_counts(o: dict[str, Any], replicas: int) -> None:
    assert workload_of(o).replicas == replicas


@pytest.mark.parametrize(("o", "error"), [
    pytest.param(obj("Deployment", {"replicas": 3}), "Deployment ns/w: no pod template (spec.template.spec)",
                 id="no-template"),
    pytest.param(obj("Deployment", {"template": {"metadata": {}}}),
                 "Deployment ns/w: no pod template (spec.template.spec)", id="template-without-spec"),
    pytest.param(obj("CronJob", {"jobTemplate": {}}, "batch/v1"),
                 "CronJob ns/w: no pod template (spec.jobTemplate.spec.template.spec)", id="cronjob-no-template"),
    pytest.param(obj("Deployment", {"replicas": "3", "template": TEMPLATE}),
                 "Deployment ns/w: spec.replicas must be a non-negative integer, got '3'", id="replicas-a-string"),
    pytest.param(obj("Deployment", {"replicas": -1, "template": TEMPLATE}),
                 "Deployment ns/w: spec.replicas must be a non-negative integer, got -1", id="replicas-negative"),
    pytest.param(job(parallelism=True), "Job ns/w: spec.parallelism must be a non-negative integer, got True",
                 id="parallelism-a-bool"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "Pod default/p: no spec",
                 id="pod-without-spec"),
])
def test_objects_that_make_no_pods_are_errors(o: dict[str, Any], error: str) -> None:
    with pytest.raises(WorkloadError) as e:
        workload_of(o)
    assert str(e.value) == error


def test_replicas_are_named_and_copied_from_the_template() -> None:
    w = workload_of(obj("StatefulSet", {"replicas": 3, "template": TEMPLATE}))
    pods = list(w.pods())
    assert [p["metadata"]["name"] for p in pods] == ["w-0", "w-1", "w-2"]  # as upstream names them
    assert all(p["metadata"]["namespace"] == "ns" and p["metadata"]["labels"] == {"app": "x"} for p in pods)
    assert all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in pods)
    pods[0]["spec"]["containers"].append({})
    assert w.pod(1)["spec"]["containers"] == TEMPLATE["spec"]["containers"]  # each replica its own copy
    assert [p["metadata"]["name"] for p in w.pods(limit=2)] == ["w-0", "w-1"]


def test_a_pod_keeps_its_name_or_gets_one_from_generate_name() -> None:
    named = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {}}
    assert workload_of(named).pod(0)["metadata"] == {"name": "p", "namespace": "n"}
    gen = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"}, "spec": {}}
    assert workload_of(gen).pod(0)["metadata"]["name"] == "web-0"
