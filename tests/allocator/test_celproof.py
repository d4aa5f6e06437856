"""``celproof``: what a selector may read, device shapes (one per distinct content the selectors
read), the bulk check of attribute values, and a one-shot call over a compacted state of many
nodes answering as a search of every node (a CEL error on one node of many still fails it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, dev, device_class, node, req, rslice
from webhook.allocator import Call, Code, Limits, allocate, model_for
from webhook.allocator.celproof import device_shapes, reads
from webhook.cel.view import _supported, all_supported
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.state.compact import Compactor

A = f'device.attributes["{DRV}"]'


@pytest.mark.parametrize(("expr", "want"), [
    pytest.param('device.driver == "x"', frozenset(), id="driver-only"),
    pytest.param(f'{A}.model == "a"', frozenset({"model", f"{DRV}/model"}), id="member"),
    pytest.param(f"{A}['model'] == 'a'", frozenset({"model", f"{DRV}/model"}), id="single-quoted-index"),
    pytest.param('device.attributes["other.io"].v.isGreaterThan(semver("1.0.0"))',
                 frozenset({"v", "other.io/v"}), id="method-on-the-value"),
    pytest.param(f'has({A}.model) && {A}.model == "a"', frozenset({"model", f"{DRV}/model"}), id="has-guard"),
    pytest.param(f'device.capacity["{DRV}"].mem.compareTo(quantity("1")) >= 0', frozenset(), id="capacity"),
    pytest.param("device.allowMultipleAllocations", frozenset(), id="allow-multiple"),
    pytest.param(f'{A}.exists(k, k == "model")', None, id="macro-over-the-map"),
    pytest.param(f'size({A}) > 1', None, id="the-map-as-a-whole"),
    pytest.param(f'{A}["mo" + "del"] == "a"', None, id="computed-key"),
    pytest.param('device.attributes["a\\u002eb"].x == 1', None, id="escaped-domain"),
    pytest.param('device["attributes"]["d"].x == 1', None, id="device-indexed"),
    pytest.param('[device].all(d, d.driver == "x")', None, id="device-bound-to-another-name"),
    pytest.param('"attributes" == device.driver', None, id="the-word-in-a-literal"),
])
def test_reads_names_every_attribute_a_selector_may_read(expr: str, want: frozenset[str] | None) -> None:
    assert reads(expr) == want


MODEL_A, MODEL_B = {"string": "a"}, {"string": "b"}
"""Attribute values shared by identity, as a compacted state shares equal values."""
CAPS = {"mem": {"value": "4"}}


def _model(*devices: dict[str, Any]) -> Any:
    objs = [device_class(), node("n0"), rslice("s0", list(devices), node_name="n0")]
    return model_for(ClusterSnapshot.from_objects(objs), FeatureGates())


def _dev(name: str, model: dict[str, Any], uuid: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": model, "uuid": {"string": uuid}}, **kw}


MODEL_NAMES = frozenset({"model", f"{DRV}/model"})


@pytest.mark.parametrize(("devices", "names", "want"), [
    pytest.param([_dev("a", MODEL_A, "1"), _dev("b", MODEL_A, "2")], MODEL_NAMES, 1,
                 id="unread-values-differ-one-shape"),
    pytest.param([_dev("a", MODEL_A, "1"), _dev("b", MODEL_B, "2")], MODEL_NAMES, 2,
                 id="read-values-differ-two-shapes"),
    pytest.param([_dev("a", MODEL_A, "1"), _dev("b", {"string": "a"}, "2")], MODEL_NAMES, 2,
                 id="equal-values-not-shared-two-shapes"),
    pytest.param([_dev("a", MODEL_A, "1"), _dev("b", MODEL_B, "2")], frozenset(), 1,
                 id="nothing-read-one-shape"),
    pytest.param([_dev("a", MODEL_A, "1", capacity=CAPS), _dev("b", MODEL_A, "2")], frozenset(), 2,
                 id="capacity-differs-two-shapes"),
    pytest.param([_dev("a", MODEL_A, "1", allowMultipleAllocations=True), _dev("b", MODEL_A, "2")], frozenset(), 2,
                 id="allow-multiple-differs-two-shapes"),
    pytest.param([{"name": "a", "attributes": {"model": MODEL_A, f"{DRV}/model": MODEL_B}},
                  {"name": "b", "attributes": {f"{DRV}/model": MODEL_B, "model": MODEL_A}}], MODEL_NAMES, 2,
                 id="both-spellings-in-another-order-two-shapes"),
    pytest.param([_dev("a", MODEL_A, "1"), _dev("b", MODEL_A, "2", attributes={"model": MODEL_A, "x": {}})],
                 MODEL_NAMES, None, id="unsupported-value-no-shapes"),
    pytest.param([_dev("a", MODEL_A, "1"),
                  _dev("b", MODEL_A, "2", attributes={"model": MODEL_A, "x": {"ints": ["a"]}})],
                 MODEL_NAMES, None, id="unconvertible-list-value-no-shapes"),
])
def test_device_shapes_never_share_what_a_selector_reads(devices: list[dict[str, Any]], names: frozenset[str],
                                                         want: int | None) -> None:
    got = device_shapes(_model(*devices), names)
    assert (None if got is None else len(got)) == want


@pytest.mark.parametrize("values", [
    pytest.param([], id="empty"),
    pytest.param([{"string": "a"}, {"int": 1}, {"bool": True}], id="plain"),
    pytest.param([{"version": "1.2.3"}, {"string": "a"}], id="version"),
    pytest.param([{"version": "1.2"}], id="bad-version"),
    pytest.param([{"int": True}], id="bool-as-int"),
    pytest.param([{"bool": 1}], id="int-as-bool"),
    pytest.param([{"string": 1}], id="int-as-string"),
    pytest.param([{}], id="no-value"),
    pytest.param([{"string": "a", "int": 1}], id="two-values"),
    pytest.param([{"strings": ["a"]}], id="list"),
    pytest.param([{"versions": ["1.0.0", "x"]}], id="bad-version-list"),
    pytest.param(["a"], id="not-a-map"),
])
def test_all_supported_agrees_with_each_value(values: list[Any]) -> None:
    assert all_supported(values) is all(_supported(v) for v in values)


NODES = 30
ATTR = f'{A}.model == "a"'


def _compacted(bad: int | None, later: dict[str, Any]) -> list[dict[str, Any]]:
    """``NODES`` nodes of two devices each (own UUIDs), compacted as a loaded state is; node
    ``bad``'s second device gets ``later`` as its attributes."""
    objs: list[dict[str, Any]] = [device_class()]
    for i in range(NODES):
        devs = [dev(f"d{j}", attrs={"model": "a", "uuid": f"u-{i}-{j}"}) for j in range(2)]
        if i == bad:
            devs[1]["attributes"] = later
        objs += [node(f"n{i:02d}"), rslice(f"s{i}", devs, node_name=f"n{i:02d}", pool=f"p{i}")]
    c = Compactor()
    return [c.object(o) for o in objs]


@pytest.mark.parametrize(("bad", "later", "selector", "error"), [
    pytest.param(None, {}, ATTR, None, id="all-fit"),
    pytest.param(27, {"uuid": {"string": "x"}}, ATTR, "no such key", id="missing-attribute-on-one-late-node"),
    pytest.param(27, {"model": {"int": 3}}, ATTR, "no matching overload", id="other-type-on-one-late-node"),
    pytest.param(27, {"model": {"string": "b"}}, ATTR, None, id="other-value-on-one-late-node"),
    pytest.param(1, {"model": {"string": "a"}, "odd": {}}, ATTR, "unsupported attribute value",
                 id="unsupported-value-on-an-early-node"),
])
def test_a_one_shot_call_over_many_nodes_answers_as_every_node(bad: int | None, later: dict[str, Any],
                                                               selector: str, error: str | None) -> None:
    """Both devices of a node fit (count 2): the first node fits, and only a later node's error
    can change the answer."""
    model = model_for(ClusterSnapshot.from_objects(_compacted(bad, later)), FeatureGates())
    raws = [claim("c", req(count=2, selectors=[selector]))]
    every = allocate(raws, model, Call(limits=Limits(100_000)))
    one = allocate(raws, model, Call(limits=Limits(100_000), one_shot=True))
    assert (one.feasible, one.node, one.kind, one.message) == (every.feasible, every.node, every.kind, every.message)
    if error is None:
        assert one.feasible and one.node == "n00"
    else:
        assert not one.feasible and one.summary is not None and one.summary.code == Code.FATAL
        assert one.summary.node == f"n{bad:02d}" and error in one.message


def test_a_compacted_state_of_many_nodes_has_one_shape() -> None:
    model = model_for(ClusterSnapshot.from_objects(_compacted(None, {})), FeatureGates())
    got = device_shapes(model, MODEL_NAMES)
    assert got is not None and len(got) == 1


@pytest.mark.parametrize(("multi", "want"), [pytest.param(True, 2, id="named-two-shapes"),
                                             pytest.param(False, 1, id="not-named-one-shape")])
def test_allow_multiple_allocations_makes_shapes_only_when_a_selector_names_it(multi: bool, want: int) -> None:
    model = _model(_dev("a", MODEL_A, "1", allowMultipleAllocations=True), _dev("b", MODEL_A, "2"))
    got = device_shapes(model, frozenset(), multi)
    assert got is not None and len(got) == want
