"""kube-scheduler filters every candidate node: ``allocate`` searches them all after the first fit
(a fatal error on any one fails the attempt), once per node class, and says how many it could
not reach when the budget ends first."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, dev, device_class, node, req, rslice, searched_nodes
from webhook.allocator import Call, Code, Limits, allocate, engine, model_for
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

MODEL = f'device.attributes["{DRV}"].model == "a"'


def cluster(n: int, broken: int | None = None) -> list[dict[str, Any]]:
    """``n`` identical nodes with one device of model "a"; node ``broken``'s has no model."""
    objs: list[dict[str, Any]] = [device_class()]
    for i in range(n):
        attrs = {} if i == broken else {"model": "a"}
        objs += [node(f"n{i:02d}"), rslice(f"s{i}", [dev("d", attrs=attrs)], node_name=f"n{i:02d}", pool=f"p{i}")]
    return objs


def run(objs: list[dict[str, Any]], max_steps: int = 100_000) -> Any:
    return allocate([claim("c", req(selectors=[MODEL]))], model_for(ClusterSnapshot.from_objects(objs),
                                                                    FeatureGates()), Call(limits=Limits(max_steps)))


@pytest.mark.parametrize("broken", [0, 5, 9], ids=["first", "middle", "last"])
def test_a_fatal_error_on_any_node_fails_the_attempt(broken: int) -> None:
    out = run(cluster(10, broken))
    assert not out.feasible and out.node is None and out.results == []
    assert out.summary.code == Code.FATAL and out.summary.node == f"n{broken:02d}"
    assert "no such key" in out.message


def test_every_node_is_checked_but_each_class_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CHEAP_FIT_STEPS", 0)  # this fit is cheap: keep the classes on
    calls = searched_nodes(monkeypatch)
    out = run(cluster(10))
    assert out.feasible and out.node == "n00" and out.nodes_tried == 10
    assert calls == ["n00"]  # the other nine are of its class: they fit too, with no error
    assert out.reasons == []


@pytest.mark.parametrize("broken", [None, 5], ids=["all-fit", "fatal-later"])
def test_a_cheap_first_fit_searches_every_node_with_the_same_outcome(monkeypatch: pytest.MonkeyPatch,
                                                                       broken: int | None) -> None:
    """A first fit within ``CHEAP_FIT_STEPS`` turns classes off (keying a node would cost more
    than searching it): every node is searched, and the outcome is the one classes give."""
    objs = cluster(10, broken)
    monkeypatch.setattr(engine, "CHEAP_FIT_STEPS", 0)
    with_classes = run(objs)
    monkeypatch.setattr(engine, "CHEAP_FIT_STEPS", 8)
    calls = searched_nodes(monkeypatch)
    out = run(objs)
    assert calls == [f"n{i:02d}" for i in range(10 if broken is None else broken + 1)]
    assert (out.feasible, out.node, out.steps, out.nodes_tried, out.message, out.unchecked) == \
        (with_classes.feasible, with_classes.node, with_classes.steps, with_classes.nodes_tried,
         with_classes.message, with_classes.unchecked)
    assert out.reasons == with_classes.reasons


def test_when_the_budget_ends_after_the_fit_the_answer_stands_and_says_what_was_not_searched() -> None:
    objs = cluster(10)
    whole = run(objs, max_steps=10_000)
    assert whole.feasible and whole.unchecked == 0
    per_node = whole.steps // 10
    out = run(objs, max_steps=3 * per_node)
    assert out.feasible and out.node == "n00" and out.unchecked == 7
