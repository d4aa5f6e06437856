"""DeviceTaintRule: selector, taint, effect ratcheting, status subresource, strategy, warnings.

Every expectation here was checked against the real 1.37 apiserver (the differential family
`tests/differential/test_generated_taintrules.py` keeps checking it).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.fielderrors import FieldPath, invalid, not_supported, required, too_long
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.registry import rules_for
from webhook.rules.taints import devicetaintrule as dtr

DEFAULT = FeatureGates.defaults()
TAINT = FieldPath.root("spec").child("taint")
SEL = FieldPath.root("spec").child("deviceSelector")
KEY_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
           "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
           "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
EFFECTS = ("NoExecute", "NoSchedule", "None")


def rule(name: str = "maintenance", selector: Any = "default", status: Any = None, **taint: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": {"key": "example.com/maintenance", "effect": "NoSchedule", **taint}}
    if selector == "default":
        spec["deviceSelector"] = {"driver": "gpu.example.com"}
    elif selector is not None:
        spec["deviceSelector"] = selector
    out = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].update(resourceVersion="7", uid="0f5e1c9a-6b1e-4a53-9d3c-1b2a3c4d5e6f", generation=1)
    return out


def test_the_registry_knows_the_kind() -> None:
    r = rules_for("resource.k8s.io", "DeviceTaintRule")
    assert r is dtr.RULES
    assert (r.plural, r.namespaced, r.versions, r.feasibility) == ("devicetaintrules", False, ("v1", "v1beta2"), False)


def test_the_issue_example_gets_the_apiservers_exact_causes() -> None:
    """`driver: "BAD"` is a valid driver name: upstream lower-cases driver names before checking."""
    obj = rule(selector={"driver": "BAD"}, key="bad key!!", effect="Bogus")
    assert dtr.validate(obj, RuleContext(DEFAULT)) == [
        invalid(TAINT.child("key"), "bad key!!", KEY_MSG),
        not_supported(TAINT.child("effect"), "Bogus", EFFECTS),
    ]


@pytest.mark.parametrize(("obj", "want"), [
    pytest.param(rule(), [], id="valid-no-schedule"),
    pytest.param(rule(effect="None", value="planned"), [], id="valid-none-with-value"),
    pytest.param(rule(effect="NoExecute", timeAdded="2024-01-01T00:00:00Z"), [], id="valid-no-execute-time-added"),
    pytest.param(rule(selector={}), [], id="empty-selector-selects-every-device"),
    pytest.param(rule(selector=None), [], id="no-selector"),
    pytest.param(rule(selector={"driver": "gpu.example.com", "pool": "node-1/gpus", "device": "gpu-0"}), [],
                 id="driver-pool-device"),
    pytest.param(rule(selector={"driver": None, "pool": None, "device": None}), [], id="null-parts-are-unset"),
    pytest.param(rule(effect=""), [required(TAINT.child("effect"))], id="effect-required"),
    pytest.param(rule(effect="PreferNoSchedule"), [not_supported(TAINT.child("effect"), "PreferNoSchedule", EFFECTS)],
                 id="prefer-no-schedule-is-for-nodes"),
    pytest.param(rule(key=""), [invalid(TAINT.child("key"), "", "name part must be non-empty"),
                                invalid(TAINT.child("key"), "", KEY_MSG)], id="key-empty-twice-invalid"),
    pytest.param(rule(value="v v"), [invalid(TAINT.child("value"), "v v", (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"))], id="bad-value"),
    pytest.param(rule(selector={"driver": "", "pool": ""}),
                 [required(SEL.child("driver")), required(SEL.child("pool"))], id="empty-driver-and-pool-required"),
    pytest.param(rule(selector={"driver": "a" * 64}), [too_long(SEL.child("driver"), 63)], id="driver-too-long"),
])
def test_devicetaintrule_create(obj: dict[str, Any], want: list[Any]) -> None:
    assert dtr.validate(obj, RuleContext(DEFAULT)) == want


@pytest.mark.parametrize(("obj", "want"), [
    pytest.param({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "x"}},
                 {("spec.taint.key", T.INVALID), ("spec.taint.effect", T.REQUIRED)}, id="no-spec"),
    pytest.param(rule(selector={"device": "", "pool": "Bad_Pool"}),
                 {("spec.deviceSelector.device", T.INVALID), ("spec.deviceSelector.pool", T.INVALID)},
                 id="device-label-and-pool-subdomain"),
    pytest.param(rule(selector={"pool": "a" * 254}),
                 {("spec.deviceSelector.pool", T.TOO_LONG), ("spec.deviceSelector.pool", T.INVALID)},
                 id="pool-too-long-and-invalid"),
    pytest.param(rule("Bad_Name"), {("metadata.name", T.INVALID)}, id="name-is-a-subdomain"),
])
def test_devicetaintrule_create_fields(obj: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert {(e.field, e.type) for e in dtr.validate(obj, RuleContext(DEFAULT))} == want


@pytest.mark.parametrize(("old_effect", "new_effect", "want"), [
    pytest.param("Bogus", "Bogus", set(), id="unchanged-unknown-effect-ratchets"),
    pytest.param("None", "Bogus", {("spec.taint.effect", T.NOT_SUPPORTED)}, id="changed-to-unknown"),
    pytest.param("None", "NoExecute", set(), id="changed-to-known"),
    pytest.param("NoSchedule", "", {("spec.taint.effect", T.REQUIRED)}, id="cleared"),
])
def test_effect_is_checked_only_when_it_changes(old_effect: str, new_effect: str, want: set[tuple[str, T]]) -> None:
    old = stored(rule(effect=old_effect))
    new = stored(rule(effect=new_effect))
    got = dtr.validate_update(new, old, RuleContext(DEFAULT, "UPDATE", old))
    assert {(e.field, e.type) for e in got} == want


def test_key_and_selector_are_checked_again_on_every_update() -> None:
    """Only the effect ratchets: a stored bad key fails the next UPDATE, changed or not."""
    old = stored(rule(key="bad key", selector={"device": "Dev"}))
    got = dtr.validate_update(copy.deepcopy(old), old, RuleContext(DEFAULT, "UPDATE", old))
    assert {(e.field, e.type) for e in got} == {("spec.taint.key", T.INVALID),
                                                ("spec.deviceSelector.device", T.INVALID)}


def test_v1_refuses_an_update_without_resource_version() -> None:
    old = stored(rule())
    new = copy.deepcopy(old)
    del new["metadata"]["resourceVersion"]
    got = dtr.validate_update(new, old, RuleContext(DEFAULT, "UPDATE", old))
    assert [(e.field, e.type) for e in got] == [("metadata.resourceVersion", T.INVALID)]


CONDITION = {"type": "EvictionInProgress", "status": "False", "reason": "NoEffect", "message": "",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}


@pytest.mark.parametrize(("conditions", "want"), [
    pytest.param([CONDITION], set(), id="valid"),
    pytest.param([CONDITION, {**CONDITION, "status": "Bad", "reason": "", "lastTransitionTime": None}],
                 {("status.conditions[1]", T.DUPLICATE), ("status.conditions[1].status", T.NOT_SUPPORTED),
                  ("status.conditions[1].lastTransitionTime", T.REQUIRED), ("status.conditions[1].reason", T.REQUIRED)},
                 id="duplicate-type-and-bad-fields"),
    pytest.param([{**CONDITION, "type": f"T{i}"} for i in range(9)], {("status.conditions", T.TOO_MANY)},
                 id="at-most-8"),
])
def test_status_update(conditions: list[Any], want: set[tuple[str, T]]) -> None:
    old = stored(rule())
    new = stored(rule(status={"conditions": conditions}))
    ctx = RuleContext(DEFAULT, "UPDATE", old, subresource="status")
    assert {(e.field, e.type) for e in dtr.validate_update(new, old, ctx)} == want


def test_status_update_keeps_the_stored_spec_and_skips_its_rules() -> None:
    old = stored(rule(effect="Bogus"))
    new = stored(rule(effect="NoExecute", status={"conditions": [CONDITION]}))
    ctx = RuleContext(DEFAULT, "UPDATE", old, subresource="status")
    assert dtr.mutate(new, ctx).ops == [{"op": "replace", "path": "/spec", "value": old["spec"]}]
    assert dtr.validate_update(new, old, ctx) == []


@pytest.mark.parametrize(("op", "old", "obj", "want"), [
    pytest.param("CREATE", None, rule(status={"conditions": [CONDITION]}), [{"op": "remove", "path": "/status"}],
                 id="create-wipes-status"),
    pytest.param("CREATE", None, rule(), [], id="create-without-status"),
    pytest.param("UPDATE", stored(rule(status={"conditions": [CONDITION]})), stored(rule()),
                 [{"op": "add", "path": "/status", "value": {"conditions": [CONDITION]}}], id="update-keeps-status"),
])
def test_strategy_as_patch(op: str, old: Any, obj: dict[str, Any], want: list[Any]) -> None:
    assert dtr.mutate(obj, RuleContext(DEFAULT, op, old)).ops == want


@pytest.mark.parametrize(("obj", "gates", "want"), [
    pytest.param(rule(), "", [], id="nothing-to-say"),
    pytest.param(rule(selector=None), "", [dtr.NO_SELECTOR_WARNING], id="no-selector-selects-nothing"),
    pytest.param(rule(), "DRADeviceTaintRules=false",
                 [dtr.GATE_OFF_WARNING.format(gate="DRADeviceTaintRules")], id="rules-gate-off"),
    pytest.param(rule(), "DRADeviceTaints=false,DRADeviceTaintRules=false",
                 [dtr.GATE_OFF_WARNING.format(gate="DRADeviceTaints")], id="taints-gate-off"),
])
def test_warnings(obj: dict[str, Any], gates: str, want: list[str]) -> None:
    assert dtr.warnings(obj, RuleContext(FeatureGates.parse(gates))) == want


def test_gates_off_change_no_verdict() -> None:
    """The apiserver serves and validates DeviceTaintRules the same with both gates off."""
    off = RuleContext(FeatureGates.parse("DRADeviceTaints=false,DRADeviceTaintRules=false"))
    bad = rule(key="bad key!!", effect="Bogus")
    assert dtr.validate(bad, off) == dtr.validate(bad, RuleContext(DEFAULT))
    assert dtr.mutate(rule(), off).ops == []
