"""Capacity-request defaulting on /mutate: filled, rounded, left alone when not neutral."""

from __future__ import annotations

import copy

import jsonpatch
import pytest

from tests.builders import review
from webhook.admission.pipeline import review as run_review
from webhook.admission.response import decode_patch
from webhook.config import Settings
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot, StaticState


def nic(name, *, value="10G", policy=None, shared=True):
    cap = {"value": value}
    if policy:
        cap["requestPolicy"] = policy
    d = {"name": name, "attributes": {"kind": {"string": name.split("-")[0]}}, "capacity": {"bandwidth": cap}}
    if shared:
        d["allowMultipleAllocations"] = True
    return d


STEP = {"default": "1G", "validRange": {"min": "1G", "max": "5G", "step": "1G"}}
VALUES = {"default": "1G", "validValues": ["1G", "4G", "8G"]}


def state(*devices):
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "net.example.com", "nodeName": "n1",
                       "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": list(devices)}}
    classes = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expr}}]}} for name, expr in (
        ("net", 'device.driver == "net.example.com"'),
    )]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    return StaticState(ClusterSnapshot.from_objects([slice_, node, *classes]))


def claim(capacity=None, *, kind="ResourceClaim", annotations=None, first_available=False):
    body = {"deviceClassName": "net", "allocationMode": "ExactCount", "count": 1}
    if capacity is not None:
        body["capacity"] = {"requests": capacity}
    req = {"name": "req-0", "firstAvailable": [{"name": "sub-0", **body}]} if first_available \
        else {"name": "req-0", "exactly": body}
    spec = {"devices": {"requests": [req]}}
    meta = {"name": "c", "namespace": "default", **({"annotations": annotations} if annotations else {})}
    if kind == "ResourceClaimTemplate":
        return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": meta, "spec": {"spec": spec}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec}


def mutate(obj, st, gates=None, dry_run=False, settings=None):
    s = settings or Settings(gates=gates or FeatureGates())
    resp, _ = run_review(review(obj, dry_run=dry_run), s, st, endpoint="mutate")
    return decode_patch(resp), resp["response"].get("warnings", [])


def requests_after(obj, ops, template=False):
    out = jsonpatch.apply_patch(copy.deepcopy(obj), ops)
    spec = out["spec"]["spec"] if template else out["spec"]
    req = spec["devices"]["requests"][0]
    body = req.get("exactly") or req["firstAvailable"][0]
    return body.get("capacity", {}).get("requests")


CASES = [
    pytest.param(state(nic("nic-a", policy=STEP), nic("nic-b", policy=STEP)), claim(),
                 {"bandwidth": "1G"}, [], id="omitted-capacity-filled-with-policy-default"),
    pytest.param(state(nic("nic-a"), nic("nic-b")), claim(),
                 {"bandwidth": "10G"}, [], id="omitted-capacity-without-policy-is-the-full-value"),
    pytest.param(state(nic("nic-a", policy=STEP)), claim({"bandwidth": "1.5G"}),
                 {"bandwidth": "2G"}, ["capacity bandwidth 1.5G rounds up to 2G (step 1G)"], id="step-rounding"),
    pytest.param(state(nic("nic-a", policy=STEP)), claim({"bandwidth": "100M"}),
                 {"bandwidth": "1G"}, ["capacity bandwidth 100M rounds up to 1G (minimum 1G)"], id="min-rounding"),
    pytest.param(state(nic("nic-a", policy=VALUES)), claim({"bandwidth": "3G"}),
                 {"bandwidth": "4G"}, ["capacity bandwidth 3G rounds up to 4G (valid values 1G, 4G, 8G)"],
                 id="valid-values-rounding"),
    pytest.param(state(nic("nic-a", policy=STEP)), claim({"bandwidth": "2G"}),
                 {"bandwidth": "2G"}, [], id="already-aligned-untouched"),
    pytest.param(state(nic("nic-a", policy=STEP)), claim(kind="ResourceClaimTemplate"),
                 {"bandwidth": "1G"}, [], id="template-spec-spec-path"),
    pytest.param(state(nic("nic-a", policy=STEP)), claim(first_available=True),
                 {"bandwidth": "1G"}, [], id="first-available-subrequest"),
]


@pytest.mark.parametrize(("st", "obj", "want", "warnings"), CASES)
def test_defaulting(st, obj, want, warnings):
    ops, ws = mutate(obj, st)
    assert requests_after(obj, ops, template=obj["kind"] == "ResourceClaimTemplate") == want
    for w in warnings:
        assert w in ws
    if not warnings:
        assert not [w for w in ws if "capacity" in w]


@pytest.mark.parametrize(("st", "obj", "message"), [
    pytest.param(state(nic("nic-a", policy=STEP), nic("vf-b", policy={"default": "2G"})), claim(),
                 "capacity bandwidth of req-0 not defaulted: devices differ: 1G (nic-a) or 2G (vf-b)",
                 id="ambiguous-class-left-alone"),
    pytest.param(state(nic("nic-a", policy=STEP), nic("dedicated-b", shared=False)), claim(),
                 "capacity of req-0 not defaulted: device dedicated-b would consume a different amount",
                 id="non-shareable-device-makes-it-non-neutral"),
    pytest.param(state(nic("nic-a", policy=STEP), nic("small-b", value="500M", shared=False)), claim(),
                 "capacity of req-0 not defaulted: would stop matching p/small-b", id="would-drop-a-device"),
])
def test_non_neutral_or_ambiguous_changes_are_left_alone(st, obj, message):
    ops, ws = mutate(obj, st)
    assert ops == []
    assert message in ws


def test_opt_out_annotation():
    st = state(nic("nic-a", policy=STEP))
    ops, ws = mutate(claim(annotations={"dra-webhook.io/capacity-defaulting": "off"}), st)
    assert ops == [] and ws == []


def test_global_switch_off():
    st = state(nic("nic-a", policy=STEP))
    ops, _ = mutate(claim(), st, settings=Settings(capacity_defaulting=False))
    assert ops == []


def test_gate_off_means_no_defaulting():
    st = state(nic("nic-a", policy=STEP))
    ops, _ = mutate(claim(), st, gates=FeatureGates.parse("DRAConsumableCapacity=false"))
    assert not any("capacity" in op["path"] and op["op"] != "remove" for op in ops)


def test_dry_run_gets_the_same_patch():
    st = state(nic("nic-a", policy=STEP))
    assert mutate(claim({"bandwidth": "1.5G"}), st, dry_run=True) == mutate(claim({"bandwidth": "1.5G"}), st)


def test_update_is_not_defaulted():
    st = state(nic("nic-a", policy=STEP))
    obj = claim()
    resp, _ = run_review(review(obj, op="UPDATE", old=obj), Settings(), st, endpoint="mutate")
    assert decode_patch(resp) == []


def test_deadline_stops_defaulting_with_a_warning():
    import time

    from webhook.defaulting import plan_capacity_defaults
    st = state(nic("nic-a", policy=STEP))
    out = plan_capacity_defaults(claim(), st.snapshot(), FeatureGates(), deadline=time.monotonic() - 1)
    assert out.ops == []
    assert out.warnings == ["capacity defaulting cut short at the request deadline: some requests left as written"]
    done = plan_capacity_defaults(claim(), st.snapshot(), FeatureGates(), deadline=time.monotonic() + 30)
    assert done.ops and done.warnings == []
