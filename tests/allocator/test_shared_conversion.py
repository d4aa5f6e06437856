"""Devices that share a raw capacity map or counter list (a compacted state) share its conversion
(``webhook/allocator/devices.py``: ``_caps``, ``_consumes``): each device still gets what its own
driver and its own parts say."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.allocator.builders import counters, dev, node, rslice
from webhook.allocator import model_for
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

GATES = FeatureGates.parse("DRADeviceCompatibilityGroups=true")


def _devices(objs: list[dict[str, Any]]) -> dict[str, Any]:
    model = model_for(ClusterSnapshot.from_objects(objs, source="test"), GATES)
    return {f"{d.slice.driver}/{d.name}": d for sl in model.all_slices for d in sl.devices}


def test_one_capacity_map_is_qualified_per_driver() -> None:
    cap = {"memory": {"value": "1Gi"}, "b.example.com/memory": {"value": "2Gi"}}
    objs = [node("node-1"),
            rslice("a", [dev("d", capacity=cap)], driver="a.example.com", pool="pa"),
            rslice("b", [dev("d", capacity=cap)], driver="b.example.com", pool="pb")]
    got = _devices(objs)
    a, b = got["a.example.com/d"], got["b.example.com/d"]
    assert a.raw_capacity is b.raw_capacity  # one map: the conversion is looked up by identity
    assert {(full, spec.value) for full, _, spec in a.caps} == {
        ("a.example.com/memory", 1 << 30), ("b.example.com/memory", 2 << 30)}
    # For b the explicitly qualified name wins over the bare spelling of the same id.
    assert {(full, spec.value) for full, _, spec in b.caps} == {("b.example.com/memory", 2 << 30)}


@pytest.mark.parametrize("shared", [True, False], ids=["one-list", "equal-copies"])
def test_shared_counter_list_converts_alike(shared: bool) -> None:
    cons = [counters("cs", ["g1"], mem="1Gi")]
    devices = [dev(f"d{i}", consumesCounters=cons if shared else copy.deepcopy(cons)) for i in range(3)]
    devices.append(dev("plain"))
    objs = [node("node-1"), rslice("s", devices, shared={"cs": {"mem": "8Gi"}})]
    got = _devices(objs)
    first = got["driver.example.com/d0"]
    for i in range(3):
        d = got[f"driver.example.com/d{i}"]
        assert d.consumes == (("cs", (("mem", 1 << 30),), frozenset({"g1"})),)
        assert d.has_groups
        if shared:
            assert d.consumes is first.consumes
    assert got["driver.example.com/plain"].consumes == () and not got["driver.example.com/plain"].has_groups


def test_a_new_map_at_an_old_address_is_converted_anew() -> None:
    """The cache keeps the map it converted and compares by identity: a different map never
    takes another's conversion, even if it got the same ``id`` after the first was freed."""
    first = _devices([node("node-1"), rslice("s", [dev("d", capacity={"m": {"value": "1"}})])])
    assert [spec.value for _, _, spec in first["driver.example.com/d"].caps] == [1]
    for value in range(2, 40):
        got = _devices([node("node-1"), rslice("s", [dev("d", capacity={"m": {"value": str(value)}})])])
        assert [spec.value for _, _, spec in got["driver.example.com/d"].caps] == [value]
