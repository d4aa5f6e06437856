"""Table tests for the claim spec rules (RC-REQ, RC-EX, RC-FA, RC-CON, RC-CFG), run against both a
ResourceClaim (``spec.…``) and a ResourceClaimTemplate (``spec.spec.…``) on CREATE."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.claims import resourceclaim, resourceclaimtemplate
from webhook.rules.context import RuleContext

GPU = "gpu.example.com"
UUID = "a671734a-e8e5-11e4-8fde-42010af09327"


def req(name: str = "gpu", **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": GPU, **exactly}}


def sub(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": GPU, **fields}


def sel(expr: str) -> dict[str, Any]:
    return {"cel": {"expression": expr}}


def devices(*requests: Any, constraints: Any = None, config: Any = None) -> dict[str, Any]:
    d: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        d["constraints"] = constraints
    if config is not None:
        d["config"] = config
    return d


def as_claim(dev: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": dev},
    }


def as_template(dev: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"spec": {"devices": dev}},
    }


KINDS = [
    pytest.param((resourceclaim, as_claim, "spec.devices"), id="claim"),
    pytest.param((resourceclaimtemplate, as_template, "spec.spec.devices"), id="template"),
]


def causes(mod: Any, obj: dict[str, Any], gates: str = "") -> set[tuple[str, T]]:
    ctx = RuleContext(FeatureGates.parse(gates) if gates else FeatureGates.defaults())
    obj = mod.apply_defaults(obj)
    obj = apply_patch(obj, mod.mutate(obj, ctx).ops)
    return {(e.field, e.type) for e in mod.validate(obj, ctx)}


R = "{d}.requests"
CASES = [
    # (devices, expected {(relative field, type)}, gates)
    pytest.param(devices(req()), set(), "", id="single-request-valid"),
    pytest.param(
        devices(*[req(f"r{i}") for i in range(33)]),
        {(R, T.TOO_MANY)},
        "",
        id="RC-REQ-1-too-many-requests-short-circuits",
    ),
    pytest.param(
        devices(*[req("Bad_") for _ in range(33)]),
        {(R, T.TOO_MANY)},
        "",
        id="RC-REQ-1-no-item-errors-when-too-many",
    ),
    pytest.param(devices(req("a"), req("a")), {(R + "[1]", T.DUPLICATE)}, "", id="RC-REQ-2-duplicate-name"),
    pytest.param(devices(req("Not_A_Label")), {(R + "[0].name", T.INVALID)}, "", id="RC-REQ-3-bad-name"),
    pytest.param(devices(req("")), {(R + "[0].name", T.INVALID)}, "", id="RC-REQ-3-empty-name-is-invalid"),
    pytest.param(devices({"name": "a"}), {(R + "[0]", T.REQUIRED)}, "", id="RC-REQ-4-neither"),
    pytest.param(
        devices({"name": "a", "firstAvailable": []}),
        {(R + "[0]", T.REQUIRED)},
        "",
        id="RC-REQ-4-empty-first-available-counts-as-unset",
    ),
    pytest.param(
        devices({"name": "a", "exactly": {"deviceClassName": GPU}, "firstAvailable": [sub("s")]}),
        {(R + "[0]", T.INVALID)},
        "",
        id="RC-REQ-5-both",
    ),
    pytest.param(
        devices(req(deviceClassName="")),
        {(R + "[0].exactly.deviceClassName", T.REQUIRED)},
        "",
        id="RC-EX-1-missing-class",
    ),
    pytest.param(
        devices(req(deviceClassName="GPU_class")),
        {(R + "[0].exactly.deviceClassName", T.INVALID)},
        "",
        id="RC-EX-1-bad-class",
    ),
    pytest.param(
        devices(req(allocationMode="Some")),
        {(R + "[0].exactly.allocationMode", T.NOT_SUPPORTED)},
        "",
        id="RC-EX-2-bad-mode",
    ),
    pytest.param(devices(req(count=-1)), {(R + "[0].exactly.count", T.INVALID)}, "", id="RC-EX-3-negative"),
    pytest.param(devices(req(count=0)), set(), "", id="RC-EX-3-zero-defaults-to-one"),
    pytest.param(
        devices(req(allocationMode="All", count=2)),
        {(R + "[0].exactly.count", T.INVALID)},
        "",
        id="RC-EX-4-count-with-all",
    ),
    pytest.param(devices(req(allocationMode="All")), set(), "", id="RC-EX-4-all-without-count"),
    pytest.param(
        devices(req(selectors=[sel("true")] * 33)),
        {(R + "[0].exactly.selectors", T.TOO_MANY)},
        "",
        id="RC-EX-5-too-many-selectors",
    ),
    pytest.param(
        devices(req(selectors=[{}])),
        {(R + "[0].exactly.selectors[0].cel", T.REQUIRED)},
        "",
        id="RC-EX-6-selector-without-cel",
    ),
    pytest.param(
        devices(req(selectors=[sel("device.driver ==")])),
        {(R + "[0].exactly.selectors[0].cel.expression", T.INVALID)},
        "",
        id="RC-EX-6-syntax-error",
    ),
    pytest.param(
        devices(req(selectors=[sel("device.nope == 1")])),
        {(R + "[0].exactly.selectors[0].cel.expression", T.INVALID)},
        "",
        id="RC-EX-6-undefined-field",
    ),
    pytest.param(
        devices(req(selectors=[sel("true || " * 1300 + "true")])),
        {(R + "[0].exactly.selectors[0].cel.expression", T.TOO_LONG)},
        "",
        id="RC-EX-6-too-long",
    ),
    pytest.param(
        devices(
            req(
                selectors=[
                    sel(
                        "["
                        + ",".join(["1"] * 40)
                        + "].all(a, ["
                        + ",".join(["1"] * 40)
                        + "].all(b, ["
                        + ",".join(["1"] * 40)
                        + "].all(c, ["
                        + ",".join(["1"] * 40)
                        + "].all(d, a == b))))"
                    )
                ]
            )
        ),
        {(R + "[0].exactly.selectors[0].cel.expression", T.FORBIDDEN)},
        "",
        id="RC-EX-6-too-costly",
    ),
    pytest.param(
        devices(req(selectors=[sel(f'device.capacity["{GPU}"].memory.compareTo(quantity("16Gi")) >= 0')])),
        set(),
        "",
        id="RC-EX-6-quantity-selector-valid",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])),
        {(R + "[0].exactly.tolerations[0].value", T.INVALID)},
        "",
        id="RC-EX-7-exists-with-value",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "k", "operator": "Maybe"}])),
        {(R + "[0].exactly.tolerations[0].operator", T.NOT_SUPPORTED)},
        "",
        id="RC-EX-7-bad-operator",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "k", "effect": "Evict"}])),
        {(R + "[0].exactly.tolerations[0].effect", T.NOT_SUPPORTED)},
        "",
        id="RC-EX-7-bad-effect",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "bad key", "operator": "Exists"}])),
        {(R + "[0].exactly.tolerations[0].key", T.INVALID)},
        "",
        id="RC-EX-7-bad-key",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "k", "value": "v"}])),
        set(),
        "",
        id="RC-EX-7-operator-defaults-to-equal",
    ),
    pytest.param(
        devices(req(tolerations=[{"key": "k", "operator": "Exists"}])),
        set(),
        "DRADeviceTaints=false,DRADeviceTaintRules=false",
        id="RC-EX-7-taints-off-strips-tolerations",
    ),
    pytest.param(
        devices(req(capacity={"requests": {"bandwidth": "-1", "Not A Qualified/Name": "0"}})),
        set(),
        "",
        id="RC-EX-8-capacity-requests-not-validated",
    ),
    pytest.param(
        devices(req(capacity={"requests": {"bandwidth": "lots"}})),
        {(R + "[0].exactly.capacity.requests[bandwidth]", T.INVALID)},
        "",
        id="RC-EX-8-capacity-quantity-must-decode",
    ),
    pytest.param(
        devices({"name": "a", "firstAvailable": [sub(f"s{i}") for i in range(9)]}),
        {(R + "[0].firstAvailable", T.TOO_MANY)},
        "",
        id="RC-FA-1-too-many-subrequests",
    ),
    pytest.param(
        devices({"name": "a", "firstAvailable": [sub("s"), sub("s")]}),
        {(R + "[0].firstAvailable[1]", T.DUPLICATE)},
        "",
        id="RC-FA-1-duplicate-subrequest",
    ),
    pytest.param(
        devices(
            {"name": "a", "firstAvailable": [sub("Bad", allocationMode="All", count=1, selectors=[sel("1")])]}
        ),
        {
            (R + "[0].firstAvailable[0].name", T.INVALID),
            (R + "[0].firstAvailable[0].count", T.INVALID),
            (R + "[0].firstAvailable[0].selectors[0].cel.expression", T.INVALID),
        },
        "",
        id="RC-FA-2-subrequest-rules",
    ),
    pytest.param(
        devices(req("a"), constraints=[{"matchAttribute": "x.com/y"}] * 33),
        {("{d}.constraints", T.TOO_MANY)},
        "",
        id="RC-CON-1-too-many",
    ),
    pytest.param(
        devices(
            req("a"),
            {"name": "b", "firstAvailable": [sub("s")]},
            constraints=[
                {"requests": ["a", "b", "b/s", "nope", "b/x", "a/b/c", "a"], "matchAttribute": "x.com/y"}
            ],
        ),
        {
            ("{d}.constraints[0].requests[3]", T.INVALID),
            ("{d}.constraints[0].requests[4]", T.INVALID),
            ("{d}.constraints[0].requests[5]", T.INVALID),
            ("{d}.constraints[0].requests[6]", T.DUPLICATE),
        },
        "",
        id="RC-CON-2-request-references",
    ),
    pytest.param(
        devices(req("a"), constraints=[{"matchAttribute": "model"}]),
        {("{d}.constraints[0].matchAttribute", T.INVALID)},
        "",
        id="RC-CON-3-needs-domain",
    ),
    pytest.param(
        devices(req("a"), constraints=[{"distinctAttribute": "/x"}]),
        {("{d}.constraints[0].distinctAttribute", T.INVALID)},
        "",
        id="RC-CON-3-empty-domain",
    ),
    pytest.param(
        devices(req("a"), constraints=[{}]),
        {("{d}.constraints[0]", T.REQUIRED)},
        "",
        id="RC-CON-4-neither-gate-on",
    ),
    pytest.param(
        devices(req("a"), constraints=[{}]),
        {("{d}.constraints[0].matchAttribute", T.REQUIRED)},
        "DRAConsumableCapacity=false",
        id="RC-CON-5-neither-gate-off",
    ),
    pytest.param(
        devices(req("a"), constraints=[{"distinctAttribute": "x.com/y"}]),
        {("{d}.constraints[0].matchAttribute", T.REQUIRED)},
        "DRAConsumableCapacity=false",
        id="RC-CON-5-distinct-stripped-gate-off",
    ),
    pytest.param(
        devices(req("a"), constraints=[{"matchAttribute": "x.com/y", "distinctAttribute": "bad"}]),
        set(),
        "",
        id="RC-CON-6-both-only-match-checked",
    ),
    pytest.param(
        devices(req("a"), config=[{"opaque": {"driver": GPU, "parameters": {"k": 1}}}] * 33),
        {("{d}.config", T.TOO_MANY)},
        "",
        id="RC-CFG-1-too-many",
    ),
    pytest.param(
        devices(
            req("a"),
            config=[
                {"requests": ["zz"]},
                {"opaque": {"driver": "", "parameters": 3}},
                {"opaque": {"driver": GPU}},
                {"opaque": {"driver": GPU, "parameters": {"x": "y" * 10240}}},
            ],
        ),
        {
            ("{d}.config[0].requests[0]", T.INVALID),
            ("{d}.config[0]", T.REQUIRED),
            ("{d}.config[1].opaque.driver", T.REQUIRED),
            ("{d}.config[1].opaque.parameters", T.INVALID),
            ("{d}.config[2].opaque.parameters", T.REQUIRED),
            ("{d}.config[3].opaque.parameters", T.TOO_LONG),
        },
        "",
        id="RC-CFG-1-opaque-rules",
    ),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("dev", "want", "gates"), CASES)
def test_claim_spec_rule(kind: Any, dev: dict[str, Any], want: set[tuple[str, T]], gates: str) -> None:
    mod, build, prefix = kind
    expected = {(f.replace("{d}", prefix).replace(R, prefix + ".requests"), t) for f, t in want}
    expected = {(f.replace("{d}", prefix), t) for f, t in expected}
    assert causes(mod, build(copy.deepcopy(dev)), gates) == expected


def test_messages_match_upstream_wording() -> None:
    obj = as_claim(
        devices(
            {"name": "a"}, req("b", count=-2), constraints=[{"requests": ["zz"], "matchAttribute": "model"}]
        )
    )
    got = {str(e) for e in resourceclaim.validate(obj, RuleContext(FeatureGates.defaults()))}
    assert (
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
        in got
    )
    assert "spec.devices.requests[1].exactly.count: Invalid value: -2: must be greater than zero" in got
    assert any(
        g.startswith(
            'spec.devices.constraints[0].requests[0]: Invalid value: "zz": must be the name '
            "of a request in the claim"
        )
        for g in got
    )
    assert (
        'spec.devices.constraints[0].matchAttribute: Invalid value: "model": a fully qualified name must '
        "be a domain and a name separated by a slash"
    ) in got


def test_compile_error_carries_compiler_message() -> None:
    obj = as_claim(devices(req(selectors=[sel("device.driver == 1")])))
    (err,) = resourceclaim.validate(obj, RuleContext(FeatureGates.defaults()))
    assert "found no matching overload for '_==_' applied to '(string, int)'" in err.detail


@pytest.mark.parametrize(
    "junk",
    [
        None,
        3,
        "x",
        [],
        [None],
        {"devices": None},
        {"devices": {"requests": [None, 3]}},
        {"devices": {"requests": [{"exactly": [], "firstAvailable": "x"}]}},
        {"devices": {"constraints": [3], "config": [None]}},
    ],
    ids=lambda v: f"junk-{type(v).__name__}",
)
def test_wrong_types_never_raise(junk: Any) -> None:
    for mod, build in (
        (resourceclaim, lambda s: {"metadata": {"name": "a"}, "spec": s}),
        (resourceclaimtemplate, lambda s: {"metadata": {"name": "a"}, "spec": {"spec": s}}),
    ):
        obj = mod.apply_defaults(build(junk))
        ctx = RuleContext(FeatureGates.parse(
            "DRAConsumableCapacity=false,DRADeviceTaints=false,DRADeviceTaintRules=false"))
        obj = apply_patch(obj, mod.mutate(obj, ctx).ops)
        assert isinstance(mod.validate(obj, ctx), list)
        assert isinstance(mod.warnings(obj, ctx), list)
