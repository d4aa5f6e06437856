"""``place(..., sweep=True)`` (what ``capacity`` uses) places every replica where the full
placement does: each replica's node is searched from the node of the replica before it on, and a
replica that fits nowhere from there is asked of every node, so its answer is the same too."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.allocator.builders import counters, dev
from tests.workloads.builders import claim, deployment, device_class, node, req, rslice, template
from webhook.allocator import model_for
from webhook.allocator.reasons import full
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.workloads import Lookup, Placement, place, workload_of
from webhook.workloads import placement as place_module
from webhook.workloads.nodeuse import clear_caches

ONE = {"gpu": ("template", "one")}
TWO = {"gpu": ("template", "two")}
TAINT = {"taints": [{"key": "k", "effect": "NoSchedule"}]}


def gpus(sizes: dict[str, int], **node_kw: dict[str, Any]) -> list[dict[str, Any]]:
    """A node per entry with that many GPUs of its own, and templates for one and two GPUs."""
    out: list[dict[str, Any]] = [device_class(), template("one"), template("two", req(count=2))]
    for n, k in sizes.items():
        out += [node(n, **node_kw.get(n, {})), rslice(f"{n}-s", [dev(f"g{i}") for i in range(k)], node_name=n, pool=n)]
    return out


def partitions(names: list[str]) -> list[dict[str, Any]]:
    """Per node, four 4Gi partitions of one 8Gi GPU (counters), and a template for one partition."""
    out: list[dict[str, Any]] = [device_class(), template("one")]
    for n in names:
        devs = [dev(f"p{i}", consumesCounters=[counters("mem", memory="4Gi")]) for i in range(4)]
        out += [node(n), rslice(f"{n}-s", devs, node_name=n, pool=n, shared={"mem": {"memory": "8Gi"}})]
    return out


def network() -> list[dict[str, Any]]:
    """Three nodes with one GPU each, and two NICs every node reaches; a shared claim for a NIC."""
    out = gpus({"a": 1, "b": 1, "c": 1})
    out.append(rslice("nics", [dev("nic-0"), dev("nic-1")], node_name=None, pool="net", allNodes=True))
    return out


CASES = [
    pytest.param(gpus({"a": 1, "b": 3, "c": 0, "d": 2}), deployment("d", 8, claims=ONE), [], id="uneven-nodes"),
    pytest.param(gpus({"a": 3, "b": 3, "c": 3}), deployment("d", 5, claims=TWO), [], id="two-of-three-per-node"),
    pytest.param(gpus({"a": 4, "b": 4, "c": 4}, b=TAINT), deployment("d", 12, claims=ONE), [], id="tainted-middle"),
    pytest.param(gpus({"a": 4, "b": 4, "c": 4}, a={"cpu": "3"}), deployment("d", 12, claims=ONE, cpu="2"), [],
                 id="cpu-runs-out-on-one"),
    pytest.param(gpus({"a": 4, "b": 4}, a={"pods": "1"}), deployment("d", 9, claims=ONE), [], id="pod-limit"),
    pytest.param(gpus({"a": 2, "b": 2, "c": 2}, b={"labels": {"zone": "x"}}),
                 deployment("d", 5, claims=ONE, nodeSelector={"zone": "x"}), [], id="node-selector"),
    pytest.param(partitions(["a", "b", "c"]), deployment("d", 8, claims=ONE), [], id="counters"),
    pytest.param(network(), deployment("d", 4, claims={**ONE, "nic": ("claim", "nic")}), [claim("nic", req())],
                 id="shared-network-claim"),
    pytest.param(gpus({"a": 2, "b": 2}), deployment("d", 3, cpu="1"), [], id="no-claims"),
]


def placed(state: list[dict[str, Any]], obj: dict[str, Any], extra: list[dict[str, Any]], sweep: bool) -> Placement:
    clear_caches()
    snap = ClusterSnapshot.from_objects(state)
    g = FeatureGates()
    return place([workload_of(obj)], model_for(snap, g), Lookup(snap, extra), g, max_steps=100_000,
                 deadline=time.monotonic() + 60, sweep=sweep)


def answer(p: Placement) -> tuple[Any, ...]:
    failed = p.failed
    return ([x.node for x in p.pods], p.placed, [a["results"] for a in p.allocations],
            full(failed.outcome.summary) if failed and failed.outcome.summary else None,
            sorted(failed.outcome.reason_texts()) if failed else None)


@pytest.mark.parametrize(("state", "obj", "extra"), CASES)
def test_a_sweep_places_as_the_full_placement(state: list[dict[str, Any]], obj: dict[str, Any],
                                              extra: list[dict[str, Any]]) -> None:
    swept, whole = answer(placed(state, obj, extra, True)), answer(placed(state, obj, extra, False))
    assert swept == whole
    assert whole[1] > 0, "some replica placed: the sweep had something to start from"


def test_a_sweep_searches_fewer_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: later replicas do not ask the allocator about the nodes behind them."""
    asked: list[int] = []
    real = place_module.allocate

    def counting(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        asked.append(out.nodes_tried)
        return out
    monkeypatch.setattr(place_module, "allocate", counting)
    state = gpus({f"n{i:02}": 1 for i in range(20)})
    placed(state, deployment("d", 20, claims=ONE), [], False)
    whole, asked[:] = sum(asked), []
    placed(state, deployment("d", 20, claims=ONE), [], True)
    assert sum(asked) < whole / 4, (sum(asked), whole)
