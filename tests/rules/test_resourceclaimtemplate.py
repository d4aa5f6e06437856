"""ResourceClaimTemplate: template metadata, spec immutability, strips under spec.spec, the seed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.claims import resourceclaimtemplate as rct
from webhook.rules.context import RuleContext

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEFAULT = FeatureGates.defaults()


def template(meta: Any = None, **exactly: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "spec": {
            "devices": {
                "requests": [
                    {"name": "req-0", "exactly": {"deviceClassName": "resource.example.com", **exactly}}
                ]
            }
        }
    }
    if meta is not None:
        spec["metadata"] = meta
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        pytest.param(
            {"labels": {"app": "x"}, "annotations": {"a.io/b": "c"}}, set(), id="valid-template-meta"
        ),
        pytest.param(
            {"labels": {"bad key!": "x"}}, {("spec.metadata.labels", T.INVALID)}, id="bad-label-key"
        ),
        pytest.param(
            {"labels": {"k": "bad value!"}}, {("spec.metadata.labels", T.INVALID)}, id="bad-label-value"
        ),
        pytest.param(
            {"annotations": {"a/b/c": "x"}},
            {("spec.metadata.annotations", T.INVALID)},
            id="bad-annotation-key",
        ),
        pytest.param({"name": "ignored"}, set(), id="template-name-not-checked"),
        pytest.param("x", {("spec.metadata", T.TYPE_INVALID)}, id="metadata-not-an-object"),
    ],
)
def test_template_metadata(meta: Any, want: set[tuple[str, T]]) -> None:
    assert {(e.field, e.type) for e in rct.validate(template(meta), RuleContext(DEFAULT))} == want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        pytest.param(template(), set(), id="unchanged"),
        pytest.param(
            template({"labels": {"a": "b"}}), {("spec", T.INVALID)}, id="RC-UPD-1-template-meta-changed"
        ),
        pytest.param(template(count=2), {("spec", T.INVALID)}, id="RC-UPD-1-claim-spec-changed"),
        pytest.param(
            template(capacity={"requests": {"bandwidth": "1000M"}}), set(), id="quantity-semantic-equality"
        ),
    ],
)
def test_template_update(new: dict[str, Any], want: set[tuple[str, T]]) -> None:
    old = template(capacity={"requests": {"bandwidth": "1G"}}) if "capacity" in str(new) else template()
    ctx = RuleContext(DEFAULT, "UPDATE", old)
    assert {(e.field, e.type) for e in rct.validate_update(new, old, ctx)} == want


def test_strip_paths_are_under_spec_spec() -> None:
    m = rct.mutate(
        template(capacity={"requests": {"bandwidth": "1G"}}),
        RuleContext(FeatureGates.parse("DRAConsumableCapacity=false")),
    )
    assert m.ops == [{"op": "remove", "path": "/spec/spec/devices/requests/0/exactly/capacity"}]
    assert m.warnings == [
        "DRAConsumableCapacity is off: removed spec.spec.devices.requests[0].exactly.capacity"
    ]


def test_update_in_use_keeps_capacity_with_gate_off() -> None:
    old = template(capacity={"requests": {"bandwidth": "1G"}})
    ctx = RuleContext(FeatureGates.parse("DRAConsumableCapacity=false"), "UPDATE", old)
    assert rct.mutate(copy.deepcopy(old), ctx).ops == []


@pytest.mark.parametrize(
    "path",
    sorted(EXAMPLES.glob("seeds/seed-000-resourceclaimtemplate-*.yaml"))
    + sorted(EXAMPLES.glob("claims/*.yaml")),
    ids=lambda p: p.stem,
)
def test_examples_are_admitted(path: Path) -> None:
    from webhook.rules.claims import resourceclaim

    for doc in yaml.safe_load_all(path.read_text()):
        mod = rct if doc["kind"] == "ResourceClaimTemplate" else resourceclaim
        ctx = RuleContext(DEFAULT)
        obj = mod.apply_defaults(doc)
        m = mod.mutate(obj, ctx)
        assert mod.validate(apply_patch(obj, m.ops), ctx) == []
