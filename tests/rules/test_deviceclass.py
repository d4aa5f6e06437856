"""DeviceClass: metadata, selectors (CEL), config, extendedResourceName, stored-selector ratcheting."""

from __future__ import annotations

from typing import Any

import pytest

from webhook import ConfigError
from webhook.fielderrors import ErrorType as T
from webhook.gates import FeatureGates
from webhook.rules.claims import deviceclass as dc
from webhook.rules.context import RuleContext

DEFAULT = FeatureGates.defaults()


def cls(name: str = "gpu.example.com", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


SEL = [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(cls(selectors=SEL), set(), id="valid"),
        pytest.param(cls("Bad_Name"), {("metadata.name", T.INVALID)}, id="bad-name"),
        pytest.param(cls(selectors=SEL * 33), {("spec.selectors", T.TOO_MANY)}, id="too-many-selectors"),
        pytest.param(
            cls(selectors=[{"cel": {"expression": "device.bogus"}}]),
            {("spec.selectors[0].cel.expression", T.INVALID)},
            id="bad-expression",
        ),
        pytest.param(
            cls(config=[{"opaque": {"driver": "gpu.example.com"}}]),
            {("spec.config[0].opaque.parameters", T.REQUIRED)},
            id="config-without-parameters",
        ),
        pytest.param(cls(extendedResourceName="example.com/gpu"), set(), id="extended-resource-name"),
        pytest.param(
            cls(extendedResourceName="a/b/c"),
            {("spec.extendedResourceName", T.INVALID)},
            id="bad-extended-resource-name",
        ),
    ],
)
def test_deviceclass_create(obj: dict[str, Any], want: set[tuple[str, T]]) -> None:
    assert {(e.field, e.type) for e in dc.validate(obj, RuleContext(DEFAULT))} == want


def test_stored_selectors_are_not_recompiled_on_update() -> None:
    bad = [{"cel": {"expression": "device.bogus"}}]
    old = cls(selectors=bad)
    ctx = RuleContext(DEFAULT, "UPDATE", old)
    assert dc.validate_update(cls(selectors=bad), old, ctx) == []
    new = cls(selectors=bad + [{"cel": {"expression": "device.other"}}])
    assert {e.field for e in dc.validate_update(new, old, ctx)} == {"spec.selectors[1].cel.expression"}


def test_extended_resource_name_is_kept_the_gate_is_locked_on() -> None:
    m = dc.mutate(cls(extendedResourceName="example.com/gpu"), RuleContext(FeatureGates()))
    assert m.ops == [] and m.warnings == []
    with pytest.raises(ConfigError, match="locked to true"):
        FeatureGates.parse("DRAExtendedResource=false")
