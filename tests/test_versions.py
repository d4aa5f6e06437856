"""resource.k8s.io v1beta1 and v1beta2: conversion to v1, errors where the apiserver reports them,
patches in the shape that was sent (``webhook.versions``). No Go: the rows and the corpus's
conversions were checked against the real apiserver (``tests/differential/test_versions_diff.py``).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.builders import review
from tests.defaulting import test_capacity_defaulting as defaulting
from tests.differential.gen_versions import as_v1beta1, older_versions
from tests.differential.manifests import CORPUS, manifest_cases
from tests.differential.versions_rows import ROWS, Row
from tests.strategies import mutate_doc
from webhook import BadReview
from webhook.admission.decode import check as decode_check
from webhook.admission.offline import review_objects, with_defaults
from webhook.admission.pipeline import review as run_review
from webhook.admission.response import decode_patch
from webhook.cli.simulate import simulate_objects
from webhook.config import Settings
from webhook.fielderrors import ErrorType, FieldError, invalid, required
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.declarative import merge
from webhook.rules.registry import KINDS
from webhook.state.files import from_dir
from webhook.versions import OLDER, older, reporting, v1beta1, versions_of

ALL_ON = {"DRADeviceCompatibilityGroups": True, "DRADerivedAttributes": True, "DRAListTypeAttributes": True,
          "DRANodeAllocatableResources": True, "DRADeviceBindingConditions": True, "DRAFractionalCapacityRange": True,
          "DRAPartitionableDevicesType": True, "DRAResourcePoolStatus": True, "DRAOptionalNodeOperations": True}
V1 = "resource.k8s.io/v1"


def gate_settings(**gates: bool) -> Settings:
    return Settings(gates=FeatureGates().with_overrides(gates), feasibility=False, capacity_defaulting=False)


def causes_of(obj: dict[str, Any], s: Settings) -> set[tuple[str, str]]:
    (done,) = review_objects([obj], None, "CREATE", True, s, None)
    return {(e.field, str(e.type)) for e in done.outcome.errors}


# --- the rows: upstream's answers, recorded ----------------------------------------------------

@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in ROWS])
def test_a_row_gets_the_apiservers_causes(row: Row) -> None:
    assert causes_of(row.obj, gate_settings(**ALL_ON)) == row.causes


def test_every_reporting_entry_is_met_by_a_row() -> None:
    """No entry of the tables is a guess: each one decides a cause some row records."""
    met: set[int] = set()
    for row in ROWS:
        group, _, version = row.obj["apiVersion"].rpartition("/")
        if version != "v1beta1":
            continue
        v1 = v1beta1.to_v1(with_defaults(row.obj))
        (done,) = review_objects([v1], None, "CREATE", True, gate_settings(**ALL_ON), None)
        for e in done.outcome.errors:
            for table in (reporting.DECLARATIVE, reporting.COVERED):
                if (tag := reporting.tag_of(row.obj["kind"], e, table)) is not None:
                    met.add(id(tag))
    unmet = [f"{t.path} {t.type}" for table in (reporting.DECLARATIVE, reporting.COVERED)
             for tags in table.values() for t in tags if id(t) not in met]
    assert unmet == []


# --- conversion ------------------------------------------------------------------------------------

def _slice(*devices: Any, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, **spec,
                     "devices": list(devices)}}


def _claim(*requests: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": list(requests)}}}


@pytest.mark.parametrize(("sent", "spec"), [
    pytest.param(_slice({"name": "d", "basic": {"attributes": {"a": {"int": 1}}, "capacity": {"m": {"value": "1"}}}},
                        nodeName="n"),
                 {"nodeName": "n", "devices": [{"name": "d", "attributes": {"a": {"int": 1}},
                                                "capacity": {"m": {"value": "1"}}}]}, id="basic-moves-up"),
    pytest.param(_slice({"name": "d"}, {"name": "e", "basic": None}, {"name": "f", "basic": {}}, allNodes=True),
                 {"allNodes": True, "devices": [{"name": "d"}, {"name": "e"}, {"name": "f"}]},
                 id="no-basic-null-basic-empty-basic"),
    pytest.param(_slice(nodeName="", allNodes=False), {"devices": []},
                 id="empty-node-name-and-false-all-nodes-are-unset"),
    pytest.param(_slice({"name": "d", "basic": {"attributes": {}, "consumesCounters": [], "taints": [],
                                                "bindingConditions": [], "nodeAllocatableResources": {},
                                                "allNodes": False, "nodeName": None}}),
                 {"devices": [{"name": "d", "bindingConditions": [], "nodeAllocatableResources": {},
                               "allNodes": False}]},
                 id="empties-follow-go"),
])
def test_a_slice_converts_as_the_apiserver_converts_it(sent: dict[str, Any], spec: dict[str, Any]) -> None:
    got = v1beta1.to_v1(sent)
    assert got["apiVersion"] == V1
    assert {k: v for k, v in got["spec"].items() if k not in ("driver", "pool")} == spec
    assert sent["apiVersion"].endswith("/v1beta1")  # the input is left alone


@pytest.mark.parametrize(("request_", "converted"), [
    pytest.param({"name": "r", "deviceClassName": "c", "allocationMode": "All", "selectors": []},
                 {"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "All", "selectors": []}},
                 id="class-mode-selectors"),
    pytest.param({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]},
                 {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]},
                 id="first-available-only-has-no-exactly"),
    pytest.param({"name": "r", "deviceClassName": "", "count": 0}, {"name": "r"}, id="zero-values-are-unset"),
    pytest.param({"name": "r", "tolerations": []},
                 {"name": "r", "exactly": {"deviceClassName": "", "allocationMode": "", "count": 0}},
                 id="an-empty-list-is-set-but-converts-to-nothing"),
    pytest.param({"name": "r", "adminAccess": False},
                 {"name": "r", "exactly": {"deviceClassName": "", "adminAccess": False, "allocationMode": "",
                                           "count": 0}}, id="false-is-set"),
    pytest.param({"name": "r", "deviceClassName": "c", "count": 0, "allocationMode": "ExactCount"},
                 {"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount"}},
                 id="a-zero-count-with-a-class-is-left-to-the-defaults"),
])
def test_a_request_converts_as_the_apiserver_converts_it(request_: dict[str, Any], converted: dict[str, Any]) -> None:
    assert v1beta1.request_to_v1(request_) == converted


@pytest.mark.parametrize(("sent", "defaulted"), [
    pytest.param({"name": "r", "deviceClassName": "c"},
                 {"name": "r", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}, id="with-a-class"),
    pytest.param({"name": "r", "count": 2, "tolerations": [{"key": "k"}]},
                 {"name": "r", "count": 2, "tolerations": [{"key": "k", "operator": "Equal"}]},
                 id="without-a-class-only-tolerations"),
    pytest.param({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]},
                 {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount",
                                                    "count": 1}]}, id="subrequests"),
])
def test_v1beta1_defaults_a_request_only_when_it_names_a_class(sent: dict[str, Any],
                                                               defaulted: dict[str, Any]) -> None:
    assert v1beta1.apply_defaults(_claim(sent))["spec"]["devices"]["requests"] == [defaulted]


def _pruned(v: Any) -> Any:
    """What Go's JSON keeps: no null, [], {} or "" members (the conversions differ only there)."""
    if isinstance(v, dict):
        out = {k: _pruned(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x not in (None, [], {}, "")}
    return [_pruned(x) for x in v] if isinstance(v, list) else v


def _v1_manifests() -> list[dict[str, Any]]:
    return [o for _, o in manifest_cases() if o["apiVersion"] == V1]


def _lossless(o: dict[str, Any]) -> bool:
    """A v1 object v1beta1 can hold: one the apiserver decodes, without a slice's ``nodeName: ""``
    or ``allNodes: false`` (set in v1, the same as unset in v1beta1's string and bool)."""
    spec = o.get("spec") if isinstance(o.get("spec"), dict) else {}
    return decode_check(o) is None and spec.get("nodeName") != "" and spec.get("allNodes") is not False


def test_every_v1_manifest_survives_the_round_trip_through_v1beta1() -> None:
    """``from_v1`` is upstream's reverse conversion: there and back gives the v1 object, up to
    the members Go's JSON leaves out."""
    objs = [o for o in _v1_manifests() if _lossless(o)]
    assert len(objs) > 200
    bad = [o["metadata"].get("name") for o in objs if _pruned(v1beta1.to_v1(as_v1beta1(o))) != _pruned(o)]
    assert bad == []


def test_the_corpus_conversions_are_ours() -> None:
    """Where the corpus holds a manifest converted by hand to v1 (``--v1``), ours is the same."""
    entries = {e["id"]: e for e in json.loads(CORPUS.read_text())}
    pairs = [(e["object"], entries[i + "--v1"]["object"]) for i, e in entries.items()
             if i + "--v1" in entries and str(e["object"].get("apiVersion")).startswith("resource.k8s.io/v1beta")]
    assert len(pairs) >= 5
    for old, new in pairs:
        group, _, version = old["apiVersion"].rpartition("/")
        conv = older(group, old["kind"], version)
        assert conv is not None and _pruned(conv.to_v1(old)) == _pruned(new), old["metadata"]["name"]


# --- patches ---------------------------------------------------------------------------------------

STRIPPING = [{"DRAPartitionableDevices": False}, {"DRAConsumableCapacity": False},
             {"DRADeviceBindingConditions": False}, {}]


@pytest.mark.parametrize("gates", [pytest.param(g, id=",".join(g) or "defaults") for g in STRIPPING])
def test_the_patch_applies_to_the_object_as_sent(gates: dict[str, bool]) -> None:
    """For every manifest in v1beta1 and v1beta2 (and v1beta1-only variants): the patch applies to
    the object in its version, and the result converts to the v1 object we validated."""
    rnd = random.Random(27)
    objs = list(older_versions(rnd, _v1_manifests()))
    patched = 0
    for obj in objs:
        (done,) = review_objects([obj], None, "CREATE", False, gate_settings(**gates), None)
        if not done.answer.allowed:
            continue
        ops = done.answer.patch
        sent = done.request["object"]
        conv = older(*sent["apiVersion"].rsplit("/", 1)[0:1], sent["kind"], sent["apiVersion"].rsplit("/", 1)[1])
        assert conv is not None
        after = apply_patch(copy.deepcopy(sent), ops)
        assert _pruned(conv.to_v1(after)) == _pruned(done.outcome.mutated), json.dumps(sent)[:300]
        patched += bool(ops)
    assert patched > 0 or gates == {}


def test_an_op_with_no_v1beta1_form_is_refused() -> None:
    with pytest.raises(reporting.Untranslatable):
        reporting.patch("ResourceClaim", [{"op": "remove", "path": "/spec/devices/requests/0/exactly"}])


@pytest.mark.parametrize(("kind", "v1_path", "sent_path"), [
    pytest.param("ResourceSlice", "/spec/devices/3/consumesCounters/0/compatibilityGroups",
                 "/spec/devices/3/basic/consumesCounters/0/compatibilityGroups", id="slice-device-field"),
    pytest.param("ResourceSlice", "/spec/devices/3/name", "/spec/devices/3/name", id="slice-device-name"),
    pytest.param("ResourceSlice", "/spec/sharedCounters", "/spec/sharedCounters", id="slice-spec-field"),
    pytest.param("ResourceClaim", "/spec/devices/requests/1/exactly/capacity/requests/memory",
                 "/spec/devices/requests/1/capacity/requests/memory", id="claim-exactly-field"),
    pytest.param("ResourceClaim", "/spec/devices/requests/1/firstAvailable/0/capacity",
                 "/spec/devices/requests/1/firstAvailable/0/capacity", id="claim-subrequest"),
    pytest.param("ResourceClaimTemplate", "/spec/spec/devices/requests/0/exactly/adminAccess",
                 "/spec/spec/devices/requests/0/adminAccess", id="template-exactly-field"),
    pytest.param("DeviceClass", "/spec/selectors/0", "/spec/selectors/0", id="class-unchanged"),
])
def test_a_v1_pointer_has_one_place_in_v1beta1(kind: str, v1_path: str, sent_path: str) -> None:
    assert reporting.pointer(kind, v1_path) == sent_path


def test_a_replaced_spec_takes_the_v1beta1_shape() -> None:
    v1_spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "count": 2}}]}}
    (op,) = reporting.patch("ResourceClaim", [{"op": "replace", "path": "/spec", "value": v1_spec}])
    assert op["value"] == {"devices": {"requests": [{"name": "r", "deviceClassName": "c", "count": 2}]}}


# --- reporting -------------------------------------------------------------------------------------

def test_declarative_errors_move_and_their_shadows_come_back() -> None:
    """A declarative error left out by a merge (same field and type as a handwritten one) is
    reported at the v1beta1 path beside the handwritten one."""
    hand = invalid("spec.devices[0].attributes[k]", "x", "must be a string value")
    decl = invalid("spec.devices[0].attributes[k]", "", "must specify one of: ...")
    merged = merge([hand], [decl, required("spec.devices[1].consumesCounters[0].counters")], dedupe=False)
    assert merged == [hand, required("spec.devices[1].consumesCounters[0].counters")]  # v1: unchanged
    assert [(e.field, e.declarative) for e in reporting.report("ResourceSlice", merged)] == [
        ("spec.devices[0].attributes[k]", False),
        ("spec.devices[0].basic.attributes[k]", False),
        ("spec.devices[1].basic.consumesCounters[0].counters", True)]


def test_errors_outside_the_moved_parts_keep_their_path() -> None:
    errs = [required("spec.devices.requests[0].exactly.deviceClassName"), FieldError(ErrorType.INVALID, "spec.driver")]
    assert reporting.report("ResourceClaim", errs) == errs


def test_strip_warnings_name_the_v1beta1_field() -> None:
    text = "DRAConsumableCapacity is off: removed spec.devices.requests[0].exactly.capacity (and 1 more)"
    assert reporting.warning("ResourceClaim", text) == \
        "DRAConsumableCapacity is off: removed spec.devices.requests[0].capacity (and 1 more)"


# --- the pipeline ----------------------------------------------------------------------------------

BAD_SLICE = _slice({"name": "d", "basic": {"taints": [{"key": "k", "effect": "Bogus"}]}}, nodeName="n")


def test_a_request_in_v1beta1_is_answered_in_v1beta1() -> None:
    resp, out = run_review(review(BAD_SLICE), Settings(), None, endpoint="validate")
    r = resp["response"]
    assert r["allowed"] is False
    assert [c["field"] for c in r["status"]["details"]["causes"]] == ["spec.devices[0].basic.taints[0].effect"]
    assert "spec.devices[0].basic.taints[0].effect: Unsupported value" in r["status"]["message"]
    assert out.mutated is not None and out.mutated["apiVersion"] == V1
    assert not r.get("warnings")  # the deprecation warning is the apiserver's to send


def test_an_equivalent_match_reports_for_the_version_the_client_sent() -> None:
    """With ``matchPolicy: Equivalent`` the apiserver sends the v1 object and names the client's
    version in ``requestKind``: causes read as for that version, the patch stays v1."""
    doc = review(v1beta1.to_v1(BAD_SLICE))
    doc["request"]["requestKind"] = {"group": "resource.k8s.io", "version": "v1beta1", "kind": "ResourceSlice"}
    resp, _ = run_review(doc, Settings(), None, endpoint="validate")
    assert [c["field"] for c in resp["response"]["status"]["details"]["causes"]] == [
        "spec.devices[0].basic.taints[0].effect"]


def test_a_v1beta1_strip_is_a_patch_of_the_v1beta1_object() -> None:
    sent = _claim({"name": "r", "deviceClassName": "c", "capacity": {"requests": {"memory": "1Gi"}}})
    resp, _ = run_review(review(v1beta1.apply_defaults(sent)), gate_settings(DRAConsumableCapacity=False), None,
                         endpoint="mutate")
    assert decode_patch(resp) == [{"op": "remove", "path": "/spec/devices/requests/0/capacity"}]
    assert resp["response"]["warnings"] == [
        "DRAConsumableCapacity is off: removed spec.devices.requests[0].capacity"]


def test_review_notes_the_apiservers_deprecation_warning() -> None:
    (done,) = review_objects([BAD_SLICE], None, "CREATE", False, gate_settings(), None)
    assert done.answer.warnings[0] == \
        "resource.k8s.io/v1beta1 ResourceSlice is deprecated in v1.35+, unavailable in v1.38+"


# --- the registry and the table of versions agree ---------------------------------------------

def test_every_registered_kind_lists_the_older_versions_it_converts() -> None:
    for rules in KINDS.values():
        if rules.group == "resource.k8s.io":
            assert rules.versions == ("v1", *versions_of(rules.kind)), rules.kind
    registered = {r.kind for r in KINDS.values()}
    assert {k for k, _ in OLDER} - registered <= {"DeviceTaintRule"}  # wired when its kind is


# --- state and simulate: older versions are taken as the apiserver stores them ------------------

STATE_SLICE = _slice({"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}}}}, nodeName="node-1")
STATE = [STATE_SLICE,
         {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
          "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d.example.com"'}}]}},
         {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}]
A100 = _claim({"name": "gpu", "deviceClassName": "gpu.example.com",
               "selectors": [{"cel": {"expression": 'device.attributes["d.example.com"].model == "a100"'}}]})


def test_a_state_directory_may_hold_older_versions(tmp_path: Any) -> None:
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all(STATE))
    snap = from_dir(tmp_path)
    (stored,) = snap.of("ResourceSlice")
    assert stored["apiVersion"] == V1 and stored["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}]
    assert snap.of("DeviceClass")[0]["apiVersion"] == V1


def test_simulate_allocates_a_v1beta1_claim_on_a_v1beta1_slice(tmp_path: Any) -> None:
    (tmp_path / "state.yaml").write_text(yaml.safe_dump_all(STATE))
    sim = simulate_objects([A100], from_dir(tmp_path), FeatureGates(), None)
    assert sim.outcome.feasible, sim.outcome.reason_texts()
    assert [r["device"] for a in sim.outcome.allocations() for r in a["results"]] == ["gpu-0"]


# --- capacity defaulting (add and replace ops) on a v1beta1 claim ---------------------------------

@pytest.mark.parametrize(("st", "obj", "want", "warnings"), defaulting.CASES)
def test_capacity_defaults_patch_the_v1beta1_object(st: Any, obj: dict[str, Any], want: dict[str, str],
                                                     warnings: list[str]) -> None:
    """The same defaults as for the v1 claim, as a patch of the v1beta1 object the client sent."""
    sent = v1beta1.apply_defaults(as_v1beta1(obj))
    unhurried = Settings(default_timeout_seconds=300, feasibility_timeout_seconds=300)  # a cold CEL compile is slow
    resp, _ = run_review(review(sent), unhurried, st, endpoint="mutate")
    after = v1beta1.to_v1(apply_patch(copy.deepcopy(sent), decode_patch(resp)))
    assert defaulting.requests_after(after, [], template=obj["kind"] == "ResourceClaimTemplate") == want


# --- junk never crashes the conversion -----------------------------------------------------------

_V1BETA1_ROWS = [r.obj for r in ROWS if r.obj["apiVersion"].endswith("/v1beta1")]


@hypothesis_settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(obj=st.sampled_from(_V1BETA1_ROWS).flatmap(lambda o: mutate_doc(o, 3)))
def test_odd_shapes_never_crash_the_pipeline(obj: Any) -> None:
    """Whatever JSON sits where (the decode step refuses it in `review`; a webhook never sees it
    from an apiserver): conversion, defaults, rules, reporting and patch translation answer."""
    if not isinstance(obj, dict):
        return
    kind = obj.get("kind") if obj.get("kind") in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate") \
        else "ResourceSlice"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    obj = {**obj, "apiVersion": "resource.k8s.io/v1beta1", "kind": kind, "metadata": meta}
    for endpoint in ("mutate", "validate"):
        try:
            resp, _ = run_review(review(obj), gate_settings(**ALL_ON), None, endpoint=endpoint)
        except BadReview:  # an envelope our builder made from odd metadata: refused, not a crash
            continue
        assert "allowed" in resp["response"]
