"""ObjectMeta rules (webhook/rules/meta.py) on every kind we validate: CREATE and UPDATE tables with
exact (field, reason) sets. Every row was found by the differential tests
(tests/differential/test_generated_meta.py) or restates what they check against the apiserver."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.registry import by_kind

GATES = FeatureGates.parse("GenericWorkload=true")
UUID = "6f1f8a52-3c1e-4b6e-9d1a-3a4b5c6d7e8f"
SPECS: dict[str, dict[str, Any]] = {
    "ResourceSlice": {"driver": "gpu.example.com", "nodeName": "n1",
                      "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "d"}]},
    "DeviceClass": {},
    "ResourceClaim": {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
    "ResourceClaimTemplate": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}},
    "PodGroup": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}},
    "Workload": {"podGroupTemplates": [{"name": "w", "schedulingPolicy": {"basic": {}}}]},
}
API = {"PodGroup": "scheduling.k8s.io/v1beta1", "Workload": "scheduling.k8s.io/v1beta1"}


def obj(kind: str, **meta: Any) -> dict[str, Any]:
    """A valid object of ``kind`` whose metadata has ``meta`` (None deletes a key)."""
    rules = by_kind(kind)
    assert rules is not None
    m: dict[str, Any] = {"name": "x"}
    if rules.namespaced:
        m["namespace"] = "ns"
    m.update(meta)
    return {"apiVersion": API.get(kind, "resource.k8s.io/v1"), "kind": kind,
            "metadata": {k: v for k, v in m.items() if v is not None}, "spec": copy.deepcopy(SPECS[kind])}


def causes(new: dict[str, Any], old: dict[str, Any] | None = None) -> set[tuple[str, T]]:
    rules = by_kind(new["kind"])
    assert rules is not None
    if old is None:
        errs = rules.validate(new, RuleContext(GATES))
    else:
        errs = rules.validate_update(new, old, RuleContext(GATES, "UPDATE", old))
    return {(e.field, e.type) for e in errs}


KINDS = tuple(SPECS)
L, A, F, OR = "metadata.labels", "metadata.annotations", "metadata.finalizers", "metadata.ownerReferences"
EVENT = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": UUID}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": UUID}

CREATE_CASES = [
    pytest.param({}, set(), id="plain"),
    pytest.param({"labels": {"example.com/tier": "gpu", "app": "", "a": None}}, set(), id="labels-ok-null-is-empty"),
    pytest.param({"labels": {"a/b/c": "x"}}, {(L, T.INVALID)}, id="label-key-two-slashes"),
    pytest.param({"labels": {"example.com/": "x"}}, {(L, T.INVALID)}, id="label-key-empty-name"),
    pytest.param({"labels": {"/x": "x"}}, {(L, T.INVALID)}, id="label-key-empty-prefix"),
    pytest.param({"labels": {"k" * 63: "v" * 63}}, set(), id="label-key-and-value-63"),
    pytest.param({"labels": {"k" * 64: "v"}}, {(L, T.INVALID)}, id="label-key-64"),
    pytest.param({"labels": {"k": "v" * 64}}, {(L, T.INVALID)}, id="label-value-64"),
    pytest.param({"labels": {"k": "-v"}}, {(L, T.INVALID)}, id="label-value-leading-dash"),
    pytest.param({"labels": {"a" * 253 + "/k": "v"}}, set(), id="label-prefix-253"),
    pytest.param({"labels": {"a" * 254 + "/k": "v"}}, {(L, T.INVALID)}, id="label-prefix-254"),
    pytest.param({"annotations": {"Example.COM/Key_1": "anything"}}, set(), id="annotation-key-case-free"),
    pytest.param({"annotations": {"example.com/": "x"}}, {(A, T.INVALID)}, id="annotation-key-empty-name"),
    pytest.param({"annotations": {"a": "x" * (262144 - 1)}}, set(), id="annotations-at-256KiB"),
    pytest.param({"annotations": {"a": "x" * 262144}}, {(A, T.TOO_LONG)}, id="annotations-over-256KiB"),
    pytest.param({"annotations": {"a": "é" * 131072}}, {(A, T.TOO_LONG)}, id="annotations-counted-in-bytes"),
    pytest.param({"finalizers": ["kubernetes", "orphan", "example.com/keep", "example.com/Keep_1"]}, set(),
                 id="finalizers-standard-and-qualified"),
    pytest.param({"finalizers": ["Example.COM/keep"]}, {(F, T.INVALID)}, id="finalizer-prefix-not-lowered"),
    pytest.param({"finalizers": ["foo"]}, {(F + "[0]", T.INVALID)}, id="finalizer-not-standard-not-qualified"),
    pytest.param({"finalizers": ["a/b/c"]}, {(F, T.INVALID)}, id="finalizer-two-slashes"),
    pytest.param({"finalizers": [""]}, {(F, T.INVALID), (F + "[0]", T.INVALID)}, id="finalizer-empty"),
    pytest.param({"finalizers": ["orphan", "foregroundDeletion"]}, {(F, T.INVALID)}, id="orphan-and-foreground"),
    pytest.param({"finalizers": ["example.com/a", "example.com/a"]}, set(), id="finalizer-repeated-is-fine"),
    pytest.param({"ownerReferences": [JOB]}, set(), id="owner-ok"),
    pytest.param({"ownerReferences": [{**JOB, "apiVersion": ""}]}, {(OR + "[0].apiVersion", T.REQUIRED)},
                 id="owner-api-version-empty"),
    pytest.param({"ownerReferences": [{**JOB, "apiVersion": "a/b/c"}]}, {(OR + "[0].apiVersion", T.INVALID)},
                 id="owner-api-version-two-slashes"),
    pytest.param({"ownerReferences": [{**JOB, "apiVersion": "apps/"}, {**JOB, "apiVersion": "/", "uid": "u2"}]},
                 {(OR + "[0].apiVersion", T.INVALID), (OR + "[1].apiVersion", T.INVALID)}, id="owner-no-version"),
    pytest.param({"ownerReferences": [{**JOB, "apiVersion": "/v1"}]}, set(), id="owner-empty-group-is-core"),
    pytest.param({"ownerReferences": [{"apiVersion": "v1"}]},
                 {(OR + "[0].kind", T.REQUIRED), (OR + "[0].name", T.REQUIRED), (OR + "[0].uid", T.REQUIRED)},
                 id="owner-missing-fields"),
    pytest.param({"ownerReferences": [EVENT]}, {(OR + "[0]", T.INVALID)}, id="owner-core-event-banned"),
    pytest.param({"ownerReferences": [{**EVENT, "apiVersion": "events.k8s.io/v1"}]}, set(),
                 id="owner-events-group-event-fine"),
    pytest.param({"ownerReferences": [{**JOB, "controller": True}, {**JOB, "uid": "u2", "controller": True}]},
                 {(OR, T.INVALID)}, id="two-controllers"),
    pytest.param({"ownerReferences": [{**JOB, "controller": True}, {**JOB, "controller": True}]}, set(),
                 id="exact-duplicate-controller-dropped-first"),
    pytest.param({"name": "a" * 253}, set(), id="name-253"),
    pytest.param({"name": "a" * 254}, {("metadata.name", T.INVALID)}, id="name-254"),
    pytest.param({"name": "a..b"}, {("metadata.name", T.INVALID)}, id="name-double-dot"),
    pytest.param({"name": None}, {("metadata.name", T.REQUIRED)}, id="no-name-no-generate-name"),
    pytest.param({"name": None, "generateName": "gpu-"}, set(), id="generate-name"),
    pytest.param({"name": None, "generateName": "a" * 252 + "-"}, set(), id="generate-name-cut-to-58"),
    pytest.param({"name": None, "generateName": "a.-"}, {("metadata.name", T.INVALID)},
                 id="generated-name-checked"),
]
NOT_ON_DEVICECLASS = [
    pytest.param({"name": None, "generateName": "a" * 300}, {("metadata.generateName", T.INVALID)},
                 id="generate-name-too-long-name-fine"),
    pytest.param({"name": None, "generateName": "a" * 58 + "B"}, {("metadata.generateName", T.INVALID)},
                 id="generate-name-bad-after-the-cut"),
    pytest.param({"name": None, "generateName": "-"},
                 {("metadata.generateName", T.INVALID), ("metadata.name", T.INVALID)}, id="generate-name-dash"),
    pytest.param({"name": None, "generateName": "A-"}, {("metadata.name", T.INVALID)},
                 id="generate-name-masked-dash-checks-as-a"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("meta", "want"), CREATE_CASES)
def test_create(kind: str, meta: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert causes(obj(kind, **meta)) == want


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "DeviceClass"])
@pytest.mark.parametrize(("meta", "want"), NOT_ON_DEVICECLASS)
def test_create_generate_name(kind: str, meta: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert causes(obj(kind, **meta)) == want


@pytest.mark.parametrize(
    ("kind", "meta", "want"),
    [
        pytest.param("DeviceClass", {"name": None, "generateName": "-"}, {("metadata.name", T.INVALID)},
                     id="deviceclass-checks-only-the-generated-name"),
        pytest.param("DeviceClass", {"name": None, "generateName": "a" * 300}, set(),
                     id="deviceclass-long-generate-name-cut"),
        pytest.param("PodGroup", {"generation": -1}, {("metadata.generation", T.INVALID)}, id="generation-negative"),
        pytest.param("ResourceSlice", {"generation": -1}, set(), id="slice-generation-set-by-the-strategy"),
        pytest.param("DeviceClass", {"generation": -1}, set(), id="class-generation-set-by-the-strategy"),
        pytest.param("ResourceSlice", {"namespace": "ns"}, set(), id="cluster-scoped-namespace-cleared"),
        pytest.param("ResourceClaim", {"namespace": "Bad_NS"}, {("metadata.namespace", T.INVALID)},
                     id="namespace-not-a-label"),
        pytest.param("PodGroup", {"uid": "garbage", "creationTimestamp": "2020-01-01T00:00:00Z"}, set(),
                     id="server-fields-wiped-on-create"),
    ],
)
def test_create_per_kind(kind: str, meta: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert causes(obj(kind, **meta)) == want


def stored(kind: str, **meta: Any) -> dict[str, Any]:
    return obj(kind, uid=UUID, resourceVersion="7", creationTimestamp="2026-01-01T00:00:00Z", **meta)


def edited(old: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    """``old`` with its metadata changed by ``edit`` (None deletes a key)."""
    new = copy.deepcopy(old)
    for k, v in edit.items():
        if v is None:
            new["metadata"].pop(k, None)
        else:
            new["metadata"][k] = v
    return new


UPDATE_CASES = [
    pytest.param({}, {}, set(), id="no-op"),
    pytest.param({}, {"name": "renamed"}, {("metadata.name", T.INVALID)}, id="rename"),
    pytest.param({}, {"uid": "7a1f8a52-3c1e-4b6e-9d1a-3a4b5c6d7e8f"}, {("metadata.uid", T.INVALID)}, id="uid-changed"),
    pytest.param({}, {"uid": None}, set(), id="uid-left-out-is-the-stored-one"),
    pytest.param({}, {"creationTimestamp": "2001-01-01T00:00:00Z"}, set(), id="creation-timestamp-ignored"),
    pytest.param({}, {"generation": -1}, set(), id="generation-is-the-stored-one"),
    pytest.param({}, {"resourceVersion": "6"}, {("metadata.resourceVersion", T.INVALID)}, id="stale-resource-version"),
    pytest.param({}, {"deletionTimestamp": "2026-02-01T00:00:00Z"}, {("metadata.deletionTimestamp", T.INVALID)},
                 id="deletion-timestamp-set"),
    pytest.param({}, {"deletionGracePeriodSeconds": 5}, {("metadata.deletionGracePeriodSeconds", T.INVALID)},
                 id="grace-period-set"),
    pytest.param({"deletionTimestamp": "2026-02-01T00:00:00Z", "finalizers": ["example.com/a"]},
                 {"finalizers": ["example.com/a", "example.com/b"]}, {(F, T.FORBIDDEN)},
                 id="no-new-finalizer-while-deleting"),
    pytest.param({}, {"labels": {"-x": "y"}}, {(L, T.INVALID)}, id="labels-checked-on-update"),
    pytest.param({}, {"finalizers": ["foo", "orphan", "foregroundDeletion"]},
                 {(F + "[0]", T.INVALID), (F, T.INVALID)}, id="finalizers-checked-on-update"),
    pytest.param({}, {"ownerReferences": [{**JOB, "name": ""}]}, {(OR + "[0].name", T.REQUIRED)},
                 id="owners-checked-on-update"),
    pytest.param({}, {"generateName": "a/b"}, {("metadata.generateName", T.INVALID)},
                 id="generate-name-path-segment-on-update"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("old_meta", "edit", "want"), UPDATE_CASES)
def test_update(kind: str, old_meta: dict[str, Any], edit: dict[str, Any], want: set[tuple[str, T]]) -> None:
    old = stored(kind, **old_meta)
    assert causes(edited(old, edit), old) == want


@pytest.mark.parametrize(
    ("kind", "edit", "want"),
    [
        pytest.param("PodGroup", {"namespace": "other"}, {("metadata.namespace", T.INVALID)}, id="namespace-changed"),
        pytest.param("PodGroup", {"resourceVersion": None}, {("metadata.resourceVersion", T.INVALID)},
                     id="podgroup-needs-resource-version"),
        pytest.param("Workload", {"resourceVersion": None}, {("metadata.resourceVersion", T.INVALID)},
                     id="workload-needs-resource-version"),
        pytest.param("ResourceClaim", {"resourceVersion": None}, set(), id="claim-unconditional-update"),
        pytest.param("ResourceSlice", {"resourceVersion": None}, set(), id="slice-unconditional-update"),
        pytest.param("ResourceClaim", {"generateName": "a" * 58 + "B"}, {("metadata.generateName", T.INVALID)},
                     id="claim-runs-create-rules-on-update"),
        pytest.param("ResourceClaimTemplate", {"generateName": "a" * 300}, {("metadata.generateName", T.INVALID)},
                     id="template-runs-create-rules-on-update"),
        pytest.param("PodGroup", {"generateName": "a" * 300}, set(), id="podgroup-generate-name-not-a-dns-check"),
        pytest.param("DeviceClass", {"generateName": "Bad_"}, set(), id="class-generate-name-not-checked"),
    ],
)
def test_update_per_kind(kind: str, edit: dict[str, Any], want: set[tuple[str, T]]) -> None:
    old = stored(kind)
    assert causes(edited(old, edit), old) == want


@pytest.mark.parametrize("kind", ["PodGroup", "Workload"])
def test_missing_resource_version_is_the_whole_answer(kind: str) -> None:
    """The apiserver refuses an UPDATE without resourceVersion before validating (found at scale 5)."""
    old = stored(kind)
    new = edited(old, {"resourceVersion": None, "labels": {"-bad": "x"}})
    new["spec"] = {"junk": True} if kind == "PodGroup" else {}
    assert causes(new, old) == {("metadata.resourceVersion", T.INVALID)}


def test_hand_written_files_without_resource_versions_compare() -> None:
    """`review --old-file` with two hand-written files: no resourceVersion on either is fine."""
    assert causes(obj("PodGroup"), obj("PodGroup")) == set()


@pytest.mark.parametrize("junk", [None, 5, "meta", ["a"], {"labels": "a=b"}, {"finalizers": [1]},
                                  {"ownerReferences": [None, 1]}, {"annotations": {"a": 1}}])
def test_never_raises_on_junk(junk: Any) -> None:
    for kind in KINDS:
        o = obj(kind)
        o["metadata"] = junk
        causes(o)
        causes(o, stored(kind))
