"""ResourceClaim: defaults, strategy as JSON Patch (status wipe, gate strips + in-use on UPDATE),
spec immutability, status-subresource rules (RC-ST-*) and warnings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.claims import resourceclaim as rc
from webhook.rules.context import RuleContext

UUID = "a671734a-e8e5-11e4-8fde-42010af09327"
DEFAULT = FeatureGates.defaults()
CC_OFF = FeatureGates.parse("DRAConsumableCapacity=false")
TAINTS_OFF = FeatureGates.parse("DRADeviceTaints=false,DRADeviceTaintRules=false")


def claim(**exactly: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": "gpu.example.com", **exactly}}]
            }
        },
    }


def allocated(c: dict[str, Any], **result: Any) -> dict[str, Any]:
    c = copy.deepcopy(c)
    c["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "req-0",
                        "driver": "gpu.example.com",
                        "pool": "node-1",
                        "device": "gpu-0",
                        **result,
                    }
                ]
            }
        }
    }
    return c


def run(obj: dict[str, Any], ctx: RuleContext) -> tuple[dict[str, Any], list[str], set[tuple[str, T]]]:
    m = rc.mutate(obj, ctx)
    out = apply_patch(obj, m.ops)
    errs = rc.validate_update(out, ctx.old, ctx) if ctx.is_update() else rc.validate(out, ctx)  # type: ignore[arg-type]
    return out, m.warnings, {(e.field, e.type) for e in errs}


def test_apply_defaults_fills_mode_count_and_operator_everywhere() -> None:
    c = claim(tolerations=[{"key": "k"}])
    c["spec"]["devices"]["requests"].append(
        {
            "name": "r1",
            "firstAvailable": [
                {"name": "s", "deviceClassName": "x", "tolerations": [{"key": "k"}]},
                {"name": "t", "deviceClassName": "x", "allocationMode": "All"},
            ],
        }
    )
    out = rc.apply_defaults(c)
    ex = out["spec"]["devices"]["requests"][0]["exactly"]
    assert (ex["allocationMode"], ex["count"], ex["tolerations"][0]["operator"]) == ("ExactCount", 1, "Equal")
    fa = out["spec"]["devices"]["requests"][1]["firstAvailable"]
    assert (fa[0]["count"], fa[0]["tolerations"][0]["operator"]) == (1, "Equal")
    assert "count" not in fa[1]
    assert "allocationMode" not in c["spec"]["devices"]["requests"][0]["exactly"]  # input untouched


def test_create_wipes_status() -> None:
    out, _, errs = run(allocated(claim(), shareID="bad"), RuleContext(DEFAULT))
    assert "status" not in out and errs == set()


@pytest.mark.parametrize(
    ("gates", "exactly", "removed", "gate"),
    [
        pytest.param(
            CC_OFF,
            {"capacity": {"requests": {"bandwidth": "1G"}}},
            "capacity",
            "DRAConsumableCapacity",
            id="capacity-off-removed",
        ),
        pytest.param(
            TAINTS_OFF,
            {"tolerations": [{"key": "k", "operator": "Exists"}]},
            "tolerations",
            "DRADeviceTaints",
            id="taints-off-removed",
        ),
    ],
)
def test_gate_off_strips_on_create_with_one_warning(
    gates: FeatureGates, exactly: dict[str, Any], removed: str, gate: str
) -> None:
    out, warns, errs = run(claim(**exactly), RuleContext(gates))
    assert removed not in out["spec"]["devices"]["requests"][0]["exactly"]
    assert len(warns) == 1 and gate in warns[0] and len(warns[0]) <= 120
    assert errs == set()


@pytest.mark.parametrize(
    ("gates", "exactly"),
    [
        pytest.param(DEFAULT, {"capacity": {"requests": {"bandwidth": "1G"}}}, id="capacity-on-kept"),
        pytest.param(DEFAULT, {"tolerations": [{"key": "k", "operator": "Exists"}]}, id="taints-on-kept"),
    ],
)
def test_gate_on_keeps_fields(gates: FeatureGates, exactly: dict[str, Any]) -> None:
    m = rc.mutate(claim(**exactly), RuleContext(gates))
    assert m.ops == [] and m.warnings == []


def test_distinct_attribute_stripped_when_capacity_off() -> None:
    c = claim()
    c["spec"]["devices"]["constraints"] = [{"requests": ["req-0"], "distinctAttribute": "x.com/a"}]
    out, warns, errs = run(c, RuleContext(CC_OFF))
    assert out["spec"]["devices"]["constraints"] == [{"requests": ["req-0"]}]
    assert errs == {("spec.devices.constraints[0].matchAttribute", T.REQUIRED)}
    assert "DRAConsumableCapacity" in warns[0]


@pytest.mark.parametrize(
    ("old_exactly", "stripped"),
    [
        pytest.param({"capacity": {"requests": {"bandwidth": "1G"}}}, False, id="old-in-use-kept"),
        pytest.param({}, True, id="old-not-in-use-stripped"),
    ],
)
def test_update_keeps_gated_field_when_old_uses_it(old_exactly: dict[str, Any], stripped: bool) -> None:
    old = claim(**old_exactly)
    new = claim(capacity={"requests": {"bandwidth": "1G"}})
    m = rc.mutate(new, RuleContext(CC_OFF, "UPDATE", old))
    assert bool(m.ops) is stripped


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(claim(count=1), set(), id="unchanged-spec"),
        pytest.param(claim(count=1, selectors=[]), set(), id="empty-list-equals-absent"),
        pytest.param(claim(count=2), {("spec", T.INVALID)}, id="RC-UPD-1-count-changed"),
    ],
)
def test_main_update_spec_is_immutable(new: dict[str, Any], want: set[tuple[str, T]]) -> None:
    old = claim(count=1)
    _, _, errs = run(new, RuleContext(DEFAULT, "UPDATE", old))
    assert errs == want


def test_immutable_message() -> None:
    errs = rc.validate_update(claim(count=3), claim(count=1), RuleContext(DEFAULT, "UPDATE", claim(count=1)))
    assert [e.detail for e in errs] == ["field is immutable"]


def test_main_update_restores_old_status() -> None:
    old = allocated(claim())
    new = claim()
    new["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]}
    out, _, errs = run(new, RuleContext(DEFAULT, "UPDATE", old))
    assert out["status"] == old["status"] and errs == set()


def status_ctx(old: dict[str, Any], gates: FeatureGates = DEFAULT) -> RuleContext:
    return RuleContext(gates, "UPDATE", old, subresource="status")


RES = "status.allocation.devices.results[0]"


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(allocated(claim()), set(), id="first-allocation-valid"),
        pytest.param(allocated(claim(), shareID=UUID), set(), id="RC-ST-5-valid-share-id"),
        pytest.param(
            allocated(claim(), shareID=UUID.upper()),
            {(RES + ".shareID", T.INVALID)},
            id="RC-ST-5-upper-case-share-id",
        ),
        pytest.param(
            allocated(claim(), consumedCapacity={"Any Key": "-5"}), set(), id="RC-ST-6-consumed-not-checked"
        ),
        pytest.param(
            allocated(claim(), request="other", device="GPU_0", pool="a//b", driver=""),
            {
                (RES + ".request", T.INVALID),
                (RES + ".device", T.INVALID),
                (RES + ".pool", T.INVALID),
                (RES + ".driver", T.REQUIRED),
            },
            id="RC-ST-4-result-fields",
        ),
    ],
)
def test_status_first_allocation(new: dict[str, Any], want: set[tuple[str, T]]) -> None:
    _, _, errs = run(new, status_ctx(claim()))
    assert errs == want


def test_status_results_too_many_short_circuits() -> None:
    new = allocated(claim())
    res = new["status"]["allocation"]["devices"]["results"]
    res.extend([dict(res[0], device="BAD")] * 32)
    _, _, errs = run(new, status_ctx(claim()))
    assert errs == {("status.allocation.devices.results", T.TOO_MANY)}


def test_status_reserved_for_rules() -> None:
    new = claim()
    new["status"] = {
        "reservedFor": [
            {"resource": "pods", "name": "p", "uid": "u1"},
            {"resource": "pods", "name": "q", "uid": "u1"},
            {"name": "r"},
        ]
    }
    _, _, errs = run(new, status_ctx(claim()))
    assert errs == {
        ("status.reservedFor[1]", T.DUPLICATE),
        ("status.reservedFor[2].resource", T.REQUIRED),
        ("status.reservedFor[2].uid", T.REQUIRED),
        ("status.reservedFor", T.FORBIDDEN),
    }


def test_status_reserved_for_too_many() -> None:
    new = allocated(claim())
    new["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": f"u{i}"} for i in range(257)]
    _, _, errs = run(new, status_ctx(claim()))
    assert errs == {("status.reservedFor", T.TOO_MANY)}


def test_status_allocation_is_immutable_once_set() -> None:
    old = allocated(claim())
    new = allocated(claim(), device="gpu-1")
    _, _, errs = run(new, status_ctx(old))
    assert errs == {("status.allocation", T.INVALID)}


def test_status_devices_must_be_allocated_and_unique() -> None:
    new = allocated(claim())
    dev = {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}
    new["status"]["devices"] = [dev, dict(dev), dict(dev, device="gpu-9")]
    _, _, errs = run(new, status_ctx(claim()))
    assert errs == {("status.devices[1]", T.DUPLICATE), ("status.devices[2]", T.INVALID)}


def test_status_update_restores_old_spec() -> None:
    old = claim()
    new = allocated(claim(count=5))
    out, _, _ = run(new, status_ctx(old))
    assert out["spec"] == old["spec"]


@pytest.mark.parametrize(
    ("old_result", "stripped"),
    [
        pytest.param({}, True, id="share-id-stripped-gate-off"),
        pytest.param({"shareID": UUID}, False, id="share-id-kept-old-in-use"),
    ],
)
def test_status_share_id_dropped_when_capacity_off(old_result: dict[str, Any], stripped: bool) -> None:
    old = allocated(claim(), **old_result) if old_result else claim()
    new = allocated(claim(), shareID=UUID, consumedCapacity={"bandwidth": "1G"})
    if old_result:
        new = copy.deepcopy(old)
    out, warns, _ = run(new, status_ctx(old, CC_OFF))
    res = out["status"]["allocation"]["devices"]["results"][0]
    assert ("shareID" not in res) is stripped
    assert bool(warns) is stripped


def test_admin_access_warns_that_namespace_is_not_checked() -> None:
    assert any("admin-access" in w for w in rc.warnings(claim(adminAccess=True), RuleContext(DEFAULT)))
    assert rc.warnings(claim(), RuleContext(DEFAULT)) == []


def test_v1beta1_shape_gets_a_hint() -> None:
    c = claim()
    c["spec"]["devices"]["requests"] = [{"name": "a", "deviceClassName": "gpu.example.com"}]
    (w,) = rc.warnings(c, RuleContext(DEFAULT))
    assert w.startswith("spec.devices.requests[0]: v1beta1 request shape")


def test_metadata_rules() -> None:
    c = claim()
    c["metadata"] = {"namespace": "default"}
    assert {(e.field, e.type) for e in rc.validate(c, RuleContext(DEFAULT))} == {
        ("metadata.name", T.REQUIRED)
    }
