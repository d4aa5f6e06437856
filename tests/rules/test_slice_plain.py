"""The plain-device shortcut (`webhook.rules.slices.plain`) is sound: every device it lets
through gets no error from the full per-device rules (handwritten and declarative), whatever
the flags; and it does let the common devices through (else it would only cost time).

Devices come from the differential generator (edges everywhere) and from every field of the
bench's devices replaced by values of other types and bad values, one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench import gen
from tests.differential.gen_slices import resource_slices
from tests.differential.generated import draw_many
from tests.strategies import broken_variants
from webhook.fielderrors import FieldPath
from webhook.rules.slices import declarative
from webhook.rules.slices.devices import validate_device
from webhook.rules.slices.plain import PlainDevices

PATH = FieldPath.root("spec", "devices").index(0)
FLAGS = [(False, False), (False, True), (True, False), (True, True)]
BAD = [None, 7, -1, 1.5, True, "", "x", "Bad_Name", "a" * 70, "x/y/z", "-1", "0.5m", "1Gi", "100Gi",
       [], [1], {}, {"x": 1}, {"string": "s", "int": 1}, {"version": "1.2"}, {"value": "1"}]


def _bench_devices() -> list[dict[str, Any]]:
    objs = gen.b1_objects()
    return (objs["slice-partitionable-64"]["spec"]["devices"][:9]
            + objs["slice-plain-128"]["spec"]["devices"][:2])


def _variants(dev: dict[str, Any]) -> Iterator[Any]:
    yield dev
    yield from broken_variants(dev, BAD)


def _generated() -> list[Any]:
    return [d for s in draw_many(resource_slices(), 300, 18_0003)
            if isinstance(s, dict) and isinstance(s.get("spec"), dict)
            and isinstance(s["spec"].get("devices"), list) for d in s["spec"]["devices"]]


def _full(dev: Any, per_device: bool, fractional: bool) -> list[Any]:
    hand = validate_device(dev, None, PATH, per_device, fractional) if isinstance(dev, dict) else []
    return hand + declarative.device(dev, PATH)


@pytest.mark.parametrize("source", ["bench-variants", "generated"])
def test_a_device_let_through_has_no_errors(source: str) -> None:
    devices = [v for d in _bench_devices() for v in _variants(d)] if source == "bench-variants" else _generated()
    passed = 0
    for per_device, fractional in FLAGS:
        shortcut = PlainDevices(per_device, fractional)  # one per slice: its memo sees every device
        for dev in devices:
            if shortcut.ok(dev):
                passed += 1
                assert _full(dev, per_device, fractional) == [], dev
    assert passed > 0


def test_the_bench_devices_are_plain() -> None:
    shortcut = PlainDevices(False, True)
    assert all(shortcut.ok(d) for d in _bench_devices())


@pytest.mark.parametrize("capacity", [
    pytest.param({"c": {"value": "1"}}, id="int-text"),
    pytest.param({"c": {"value": 1}}, id="json-number"),
    pytest.param({"c": {"value": 1.0}}, id="json-float"),
    pytest.param({"c": {"value": True}}, id="boolean-not-a-quantity"),
    pytest.param({"c": {"value": [1]}}, id="list"),
])
def test_the_capacity_memo_tells_equal_looking_maps_apart(capacity: dict[str, Any]) -> None:
    """1, 1.0 and True are equal in Python; each map is judged as itself, in any order."""
    maps = [{"c": {"value": 1}}, {"c": {"value": 1.0}}, {"c": {"value": True}}, {"c": {"value": "1"}},
            {"c": {"value": [1]}}, {"c": {"value": (1,)}}, {"c": {"value": float("nan")}}, {"c": {"value": None}}]
    shortcut = PlainDevices(False, False)
    for m in [*maps, capacity, *reversed(maps), capacity]:
        dev = {"name": "d", "capacity": m}
        assert shortcut.ok(dev) == (_full(dev, False, False) == []), m
