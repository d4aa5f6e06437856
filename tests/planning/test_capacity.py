"""``webhook.planning.capacity`` and ``whatif``: how many more copies fit, per node, with the
limit said when hit; pool use; nodes added and drained."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import pytest

from tests.allocator.builders import counters, dev
from tests.planning.test_explain import ONE, bound, gpu_nodes
from tests.workloads.builders import claim, deployment, device_class, node, pod, req, rslice, template
from webhook import BadInput
from webhook.allocator import model_for
from webhook.gates import FeatureGates
from webhook.planning import Budget, Capacity, add_nodes, capacity, drain, parse_add, pool_use
from webhook.state.base import ClusterSnapshot


def count(state: list[dict[str, Any]], *objs: dict[str, Any], limit: int = 100,
          snap: ClusterSnapshot | None = None) -> Capacity:
    return capacity(list(objs), snap or ClusterSnapshot.from_objects(state), FeatureGates(),
                    Budget(100_000, time.monotonic() + 60), limit)


@pytest.mark.parametrize(("state", "obj", "fits", "per_node"), [
    pytest.param(gpu_nodes("a", "b"), pod("p", claims=ONE), 4, {"a": 2, "b": 2}, id="two-gpus-per-node"),
    pytest.param(gpu_nodes("a", "b"), pod("p", claims={"gpu": ("template", "two")}), 0, {"a": 0, "b": 0},
                 id="template-missing"),
    pytest.param(gpu_nodes("a", "b", b={"taints": [{"key": "k", "effect": "NoSchedule"}]}), pod("p", claims=ONE), 2,
                 {"a": 2, "b": 0}, id="taint-keeps-pods-off"),
    pytest.param(gpu_nodes("a", "b", b={"taints": [{"key": "k", "effect": "NoSchedule"}]}), claim("c", req()), 4,
                 {"a": 2, "b": 2}, id="a-claim-ignores-taints"),
    pytest.param(gpu_nodes("a", "b"), pod("p", claims=ONE, cpu="3"), 4, {"a": 2, "b": 2}, id="cpu-is-not-short"),
    pytest.param(gpu_nodes("a", "b"), pod("p", claims=ONE, cpu="5"), 2, {"a": 1, "b": 1}, id="cpu-runs-out-first"),
    pytest.param([*gpu_nodes("a"), bound("old", "a", cpu="8")], pod("p", claims=ONE, cpu="1"), 0, {"a": 0},
                 id="node-full-of-bound-pods"),
    pytest.param(gpu_nodes("a", "b"), deployment("d", 3, claims=ONE), 4, {"a": 2, "b": 2}, id="workload-pods"),
])
def test_how_many_more_fit(state: list[dict[str, Any]], obj: dict[str, Any], fits: int,
                           per_node: dict[str, int]) -> None:
    got = count(state, obj)
    assert (got.fits, got.per_node, got.capped) == (fits, per_node, False)
    assert (got.stopped is None) is False


def test_the_limit_is_said_when_hit() -> None:
    got = count(gpu_nodes("a", "b"), pod("p", claims=ONE), limit=3)
    assert (got.fits, got.capped, got.limit) == (3, True, 3)


@pytest.mark.parametrize("limit", [0, 2_001])
def test_a_limit_out_of_range_is_bad_input(limit: int) -> None:
    with pytest.raises(BadInput, match="limit"):
        count(gpu_nodes("a"), pod("p", claims=ONE), limit=limit)


def test_nothing_countable_is_bad_input() -> None:
    with pytest.raises(BadInput, match="capacity takes"):
        count(gpu_nodes("a"), node("x"))


def test_pool_use_counts_allocated_devices_and_counters() -> None:
    held = claim("h", req())
    held["status"] = {"allocation": {"devices": {"results": [
        {"request": "req-0", "driver": "driver.example.com", "pool": "a", "device": "p0"}]}}}
    state = [device_class(), template("one"), node("a"), held,
             rslice("s", [dev("p0", consumesCounters=[counters("cs", mem="6Gi")]),
                          dev("p1", consumesCounters=[counters("cs", mem="2Gi")])],
                    node_name="a", pool="a", shared={"cs": {"mem": "8Gi"}})]
    got = count(state, pod("p", claims=ONE), snap=None)
    (pool,) = got.pools
    assert (pool.driver, pool.pool, pool.devices, pool.allocated) == ("driver.example.com", "a", 2, 1)
    assert pool.counters == {"cs": {"mem": (Fraction(6 * 2**30), Fraction(8 * 2**30))}}
    assert got.fits == 1


def test_pool_use_is_per_state_and_per_use() -> None:
    """What does not change with use is read once per model: another state, or the same state
    with more devices held, gets its own answer."""
    one, two = (ClusterSnapshot.from_objects(gpu_nodes(*names)) for names in (["a"], ["a", "b"]))
    gates = FeatureGates()
    for _ in range(2):
        assert [(p.pool, p.devices, p.allocated) for p in pool_use(model_for(one, gates))] == [("a", 2, 0)]
        assert [(p.pool, p.allocated) for p in pool_use(model_for(two, gates))] == [("a", 0), ("b", 0)]
    model = model_for(two, gates)
    held = model.allocated.copy()
    held.add_results([{"request": "r", "driver": "driver.example.com", "pool": "b", "device": "g1"},
                      {"request": "r", "driver": "driver.example.com", "pool": "b", "device": "nope"}], gates)
    assert [(p.pool, p.allocated) for p in pool_use(model, held)] == [("a", 0), ("b", 1)]
    assert [(p.pool, p.allocated) for p in pool_use(model)] == [("a", 0), ("b", 0)]


def test_added_nodes_copy_the_node_and_its_slices() -> None:
    snap = add_nodes(ClusterSnapshot.from_objects(gpu_nodes("a")), "a", 2)
    assert sorted(n["metadata"]["name"] for n in snap.of("Node")) == ["a", "a-copy-1", "a-copy-2"]
    assert sorted((s["spec"]["nodeName"], s["spec"]["pool"]["name"]) for s in snap.of("ResourceSlice")) == [
        ("a", "a"), ("a-copy-1", "a-copy-1"), ("a-copy-2", "a-copy-2")]
    assert count([], pod("p", claims=ONE), snap=snap).fits == 6


def test_drain_removes_the_node_its_slices_and_pods() -> None:
    snap = drain(ClusterSnapshot.from_objects([*gpu_nodes("a", "b"), bound("old", "a")]), "a")
    assert [n["metadata"]["name"] for n in snap.of("Node")] == ["b"]
    assert [s["spec"]["nodeName"] for s in snap.of("ResourceSlice")] == ["b"]
    assert snap.of("Pod") == ()


@pytest.mark.parametrize(("call", "says"), [
    pytest.param(lambda s: drain(s, "zz"), "node zz is not in the cluster state", id="drain-unknown"),
    pytest.param(lambda s: add_nodes(s, "zz", 1), "node zz is not in the cluster state", id="add-unknown"),
    pytest.param(lambda s: add_nodes(s, "a", 0), "between 1 and", id="add-zero"),
    pytest.param(lambda s: parse_add("a"), "want NODE=K", id="no-count"),
    pytest.param(lambda s: parse_add("a=x"), "want NODE=K", id="count-not-a-number"),
])
def test_bad_what_if_is_bad_input(call: Any, says: str) -> None:
    with pytest.raises(BadInput, match=says):
        call(ClusterSnapshot.from_objects(gpu_nodes("a")))
