"""Device capacity and requestPolicy (docs/rules.md: RS-CAP-*, RP-*), with
DRAFractionalCapacityRange on (exact milli arithmetic) and off (the 1.37 default: integer Value())."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.slices import resourceslice as rs

P = "spec.devices[0].capacity[c].requestPolicy"
R = P + ".validRange"
VV = P + ".validValues"
ON, OFF = "DRAFractionalCapacityRange=true", ""


def slice_with(value: Any, policy: Any, multi: bool | None = True) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "eth1", "capacity": {"c": {"value": value}}}
    if policy is not None:
        device["capacity"]["c"]["requestPolicy"] = policy
    if multi is not None:
        device["allowMultipleAllocations"] = multi
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "net.example.com",
            "nodeName": "n1",
            "pool": {"name": "p", "resourceSliceCount": 1},
            "devices": [device],
        },
    }


def run(obj: dict[str, Any], gates: str) -> list[Any]:
    return rs.validate(obj, RuleContext(FeatureGates.parse(gates)))


def causes(errs: list[Any]) -> set[tuple[str, str]]:
    return {(e.field, e.type.value.removeprefix("FieldValue")) for e in errs}


def rng(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if k != "default"}


# (capacity value, policy, expected with gate on, expected with gate off)
CASES = [
    pytest.param(
        "10G", {"default": "1M", "validRange": {"min": "1M", "step": "8"}}, set(), set(), id="seed-eth1-valid"
    ),
    pytest.param("1", {"default": "1"}, set(), set(), id="RP-2-default-without-policy"),
    pytest.param("1", {}, set(), set(), id="RP-2-empty-policy"),
    pytest.param(
        "10",
        {"default": "1", "validValues": ["1"], "validRange": {"min": "1"}},
        {(P, "Forbidden")},
        {(P, "Forbidden")},
        id="RP-1-both-kinds",
    ),
    pytest.param(
        "10",
        {"validValues": ["1", "2"]},
        {(P + ".default", "Required")},
        {(P + ".default", "Required")},
        id="RP-VV-1-missing-default",
    ),
    pytest.param(
        "10",
        {"default": "1", "validValues": ["2", "1", "3"]},
        {(VV + "[1]", "Invalid")},
        {(VV + "[1]", "Invalid")},
        id="RP-VV-2-not-sorted",
    ),
    pytest.param(
        "100",
        {"default": "1", "validValues": [str(i) for i in range(1, 12)]},
        {(VV, "TooMany"), (VV, "Invalid")},
        {(VV, "TooMany"), (VV, "Invalid")},
        id="RP-VV-3-eleven-values",
    ),
    pytest.param(
        "10",
        {"default": "10", "validValues": ["9.9", "10"]},
        set(),
        {(VV + "[1]", "Duplicate")},
        id="RP-VV-4-rounding-collides-gate-off",
    ),
    pytest.param(
        "2Ki",
        {"default": "1Ki", "validValues": ["1Ki", "1024"]},
        {(VV + "[1]", "Duplicate")},
        {(VV + "[1]", "Duplicate")},
        id="RP-VV-4-equal-values-both-modes",
    ),
    # Found by the differential tests: the keys are upstream's Value() and AsDec().String().
    pytest.param(
        "20E",
        {"default": "9223372036854775808", "validValues": ["9223372036854775808", "10E"]},
        set(),
        set(),
        id="RP-VV-4-above-int64-read-two-ways-gate-off",
    ),
    pytest.param(
        "10",
        {"default": "0", "validValues": ["0", "0m"]},
        set(),
        {(VV + "[1]", "Duplicate")},
        id="RP-VV-4-zero-and-zero-milli-are-two-keys-gate-on",
    ),
    pytest.param(
        "10",
        {"default": "0.5", "validValues": ["0.5", "500m"]},
        set(),
        {(VV + "[1]", "Duplicate")},
        id="RP-VV-4-half-and-500m-are-two-keys-gate-on",
    ),
    pytest.param(
        "10",
        {"default": "-1", "validValues": ["-1.5", "-2", "-1"]},
        {(VV + "[1]", "Invalid")},
        {(VV + "[1]", "Invalid"), (VV + "[1]", "Duplicate")},
        id="RP-VV-4-negative-rounds-away-from-zero-gate-off",
    ),
    pytest.param(
        "20E",
        {"default": "0", "validValues": ["-1.5", "-1.5Gi", "0"]},
        {(VV + "[1]", "Invalid")},
        {(VV + "[1]", "Invalid"), (VV + "[2]", "Duplicate")},
        id="RP-VV-4-compared-with-a-decimal-reads-as-zero-gate-off",
    ),
    pytest.param(
        "20E",
        {"default": "0", "validValues": ["1.0000000001e19", "0"]},
        {(VV + "[1]", "Invalid")},
        {(VV + "[1]", "Invalid")},
        id="RP-VV-4-value-overflow-by-10-to-the-9-wraps-not-zero-gate-off",
    ),
    pytest.param(  # found at DIFF_SCALE=25: 12e19 compared with a decimal reads as 0 (MinInt64 × 12)
        "10Ei",
        {"default": "1", "validValues": ["1", "+00012e19", "-0Ei"]},
        {(VV + "[1]", "Invalid"), (VV + "[2]", "Invalid")},
        {(VV + "[1]", "Invalid"), (VV + "[2]", "Invalid"), (VV + "[2]", "Duplicate")},
        id="RP-VV-4-decimal-scaled-past-int64-reads-zero-gate-off",
    ),
    pytest.param(
        "10",
        {"default": "1", "validValues": ["1", "11"]},
        {(VV + "[1]", "Invalid")},
        {(VV + "[1]", "Invalid")},
        id="RP-VV-5-option-above-capacity",
    ),
    pytest.param(
        "10",
        {"default": "3", "validValues": ["1", "2"]},
        {(VV, "Invalid")},
        {(VV, "Invalid")},
        id="RP-VV-6-default-not-listed",
    ),
    pytest.param(
        "10",
        {"validRange": {"min": "1"}},
        {(P + ".default", "Required")},
        {(P + ".default", "Required")},
        id="RP-R-0-missing-default",
    ),
    pytest.param(
        "10",
        {"default": "1", "validRange": {"max": "5"}},
        {(R + ".min", "Required")},
        {(R + ".min", "Required")},
        id="RP-R-1-missing-min",
    ),
    pytest.param(
        "10",
        {"default": "11", "validRange": {"min": "11"}},
        {(R + ".min", "Invalid")},
        {(R + ".min", "Invalid")},
        id="RP-R-1-min-above-capacity",
    ),
    pytest.param(
        "10",
        {"default": "1", "validRange": {"min": "2"}},
        {(R + ".default", "Invalid")},
        {(R + ".default", "Invalid")},
        id="RP-R-2-default-below-min",
    ),
    pytest.param(
        "10",
        {"default": "5", "validRange": {"min": "5", "max": "4"}},
        {(R + ".max", "Invalid"), (R + ".default", "Invalid")},
        {(R + ".max", "Invalid"), (R + ".default", "Invalid")},
        id="RP-R-3-min-above-max",
    ),
    pytest.param(
        "10",
        {"default": "5", "validRange": {"min": "5", "max": "11"}},
        {(R + ".max", "Invalid")},
        {(R + ".max", "Invalid")},
        id="RP-R-3-max-above-capacity",
    ),
    pytest.param(
        "10",
        {"default": "8", "validRange": {"min": "5", "max": "7"}},
        {(R + ".default", "Invalid")},
        {(R + ".default", "Invalid")},
        id="RP-R-4-default-above-max",
    ),
    pytest.param(
        "10",
        {"default": "1", "validRange": {"min": "1", "step": "0"}},
        {(R + ".step", "Invalid")},
        {(R + ".step", "Invalid")},
        id="RP-R-5-zero-step",
    ),
    pytest.param(
        "10",
        {"default": "1", "validRange": {"min": "1", "step": "-2"}},
        {(R + ".step", "Invalid")},
        {(R + ".step", "Invalid")},
        id="RP-R-5-negative-step",
    ),
    pytest.param(
        "10",
        {"default": "1", "validRange": {"min": "1", "step": "10"}},
        {(R + ".step", "Invalid")},
        {(R + ".step", "Invalid")},
        id="RP-R-6-one-step-above-capacity",
    ),
    pytest.param(
        "100",
        {"default": "4", "validRange": {"min": "1", "max": "9", "step": "2"}},
        {(R + ".step", "Invalid")},
        {(R + ".step", "Invalid")},
        id="RP-R-7-not-multiple-of-step",
    ),
    pytest.param(
        "100",
        {"default": "-2", "validRange": {"min": "-2", "step": "2"}},
        {(R + ".min", "Invalid"), (R + ".default", "Invalid")},
        {(R + ".min", "Invalid"), (R + ".default", "Invalid")},
        id="RP-R-8-negative-with-step",
    ),
    pytest.param(
        "100E",
        {"default": "0", "validRange": {"min": "0", "max": "18446744073709551616", "step": "1"}},
        {(R + ".max", "Invalid")},
        {(R + ".max", "Invalid")},
        id="RP-R-8-above-int64-with-step",
    ),
    pytest.param(
        "100",
        {"default": "-5", "validRange": {"min": "-10"}},
        set(),
        set(),
        id="RP-R-9-negative-without-step",
    ),
    pytest.param(
        "1",
        {"default": "500m", "validRange": {"min": "500m", "step": "100u"}},
        {(R + ".step", "Invalid")},
        set(),
        id="RP-R-10-too-fine-for-milli",
    ),
    pytest.param(
        "100E",
        {"default": "0.5", "validRange": {"min": "0.5", "max": "10E"}},
        {(R + ".max", "Invalid")},
        set(),
        id="RP-R-10-milli-overflow",
    ),
    pytest.param(
        "1",
        {"default": "250m", "validRange": {"min": "200m", "step": "100m"}},
        {(R + ".step", "Invalid")},
        set(),
        id="RP-R-11-misaligned-fraction-gate-off-passes",
    ),
    pytest.param(
        "10",
        {"default": "1500m", "validRange": {"min": "1", "step": "1"}},
        {(R + ".step", "Invalid")},
        set(),
        id="RP-R-11-fractional-default-integer-range",
    ),
    pytest.param(
        "1",
        {"default": "300m", "validRange": {"min": "100m", "max": "900m", "step": "200m"}},
        set(),
        set(),
        id="RP-R-fractional-aligned-valid",
    ),
    pytest.param(
        "NaN",
        None,
        {("spec.devices[0].capacity[c].value", "Invalid")},
        {("spec.devices[0].capacity[c].value", "Invalid")},
        id="capacity-value-unparsable",
    ),
    pytest.param(
        "10",
        {"default": "1_000", "validValues": ["1", " 2 ", "Infinity"]},
        {(P + ".default", "Invalid"), (VV + "[2]", "Invalid")},
        {(P + ".default", "Invalid"), (VV + "[2]", "Invalid")},
        id="policy-quantities-unparsable",
    ),
    pytest.param(
        "-1",
        {"default": "0", "validRange": {"min": "0"}},
        {(R + ".min", "Invalid")},
        {(R + ".min", "Invalid")},
        id="RS-CAP-2-negative-capacity-only-via-comparisons",
    ),
]


@pytest.mark.parametrize("value,policy,on,off", CASES)
def test_request_policy(value: Any, policy: Any, on: set[Any], off: set[Any]) -> None:
    obj = slice_with(value, policy)
    assert causes(run(obj, ON)) == on
    assert causes(run(obj, OFF)) == off


@pytest.mark.parametrize("multi", [None, False], ids=["unset", "false"])
def test_rs_cap_1_policy_needs_multiple_allocations(multi: bool | None) -> None:
    obj = slice_with("10", {"default": "1", "validValues": ["1"]}, multi=multi)
    errs = run(obj, ON)
    assert causes(errs) == {(P, "Forbidden")}
    assert errs[0].body() == "Forbidden: allowMultipleAllocations must be true"


def test_rp_r_7_reports_default_and_max_separately() -> None:
    obj = slice_with("100", {"default": "4", "validRange": {"min": "1", "max": "10", "step": "2"}})
    msgs = [str(e) for e in run(obj, ON)]
    assert msgs == [
        f'{R}.step: Invalid value: "4": value is not a multiple of a given step (2) from (1)',
        f'{R}.step: Invalid value: "10": value is not a multiple of a given step (2) from (1)',
    ]


@pytest.mark.parametrize(
    "policy,expected",
    [
        pytest.param(
            {"default": "1", "validValues": ["1", "11"]},
            f'{VV}[1]: Invalid value: "11": option is larger than capacity value: 10',
            id="option",
        ),
        pytest.param(
            {"default": "1", "validRange": {"min": "1", "step": "10"}},
            f'{R}.step: Invalid value: "10": one step 11 is larger than capacity value: 10',
            id="one-step",
        ),
        pytest.param(
            {"default": "1500m", "validRange": {"min": "1500m", "step": "1u"}},
            f'{R}.step: Invalid value: "1u": value cannot be represented as a milli value',
            id="milli",
        ),
        pytest.param(
            {"default": "3", "validValues": ["1Ki", "1024"]},
            f'{VV}[1]: Duplicate value: "1024"',
            id="duplicate-key",
        ),
    ],
)
def test_messages(policy: dict[str, Any], expected: str) -> None:
    assert expected in [str(e) for e in run(slice_with("10", policy), ON)]
