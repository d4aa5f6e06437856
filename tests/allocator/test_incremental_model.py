"""A model that follows its predecessor by one watch event (``Model._carry``: the slice index,
converted slices, pools, search data and node classes taken over) answers as a model built
afresh from the same snapshot: same slices, pools per node, node-class partition and
feasibility warnings, for events that keep or change attribute values, add or remove a slice,
and touch a pool whose slices are on two nodes."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest

from bench import gen
from webhook.allocator import feasibility_warnings, model_for, warm
from webhook.allocator.classes import class_of, node_names, run_end
from webhook.allocator.pools import pools_for
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot
from webhook.state.live import SnapshotStore

GATES = FeatureGates.parse(gen.GATES)
CLAIMS = {"fits": gen.grouped_claim(), "no-match": gen.unmatchable_claim(), "search": gen.infeasible_claim()}


def _cluster() -> list[dict[str, Any]]:
    """Four nodes of two GPUs and a pool whose two slices are on node-0000 and node-0001."""
    objs = gen.cluster(4, gpus=2)
    for i in range(2):
        sl = gen.nic_slice(gen.node_name(i), nics=1)
        sl["metadata"]["name"] = f"spread-{i}"
        sl["spec"]["pool"] = {"name": "spread", "generation": 1, "resourceSliceCount": 2}
        sl["spec"]["devices"][0]["name"] = f"eth-{i}"
        objs.append(sl)
    for i, o in enumerate(objs):
        o["metadata"]["resourceVersion"] = str(i + 1)
    return objs


def _store(objs: list[dict[str, Any]]) -> SnapshotStore:
    store = SnapshotStore()
    kinds: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        kinds.setdefault(o["kind"], []).append(copy.deepcopy(o))
    for i, (kind, items) in enumerate(kinds.items()):
        store.replace(kind, items, str(i + 1))
    return store


def _slice(store: SnapshotStore, name: str) -> dict[str, Any]:
    got = next(o for o in store.snapshot().of("ResourceSlice") if o["metadata"]["name"] == name)
    return copy.deepcopy(got)


def _republished(store: SnapshotStore) -> dict[str, Any]:
    sl = _slice(store, "node-0002-gpu-devices")
    sl["spec"]["pool"]["generation"] = 2
    return {"type": "MODIFIED", "object": sl}


def _attribute_changed(store: SnapshotStore) -> dict[str, Any]:
    sl = _slice(store, "node-0002-gpu-devices")
    sl["spec"]["devices"][3]["attributes"]["profile"] = {"string": "2g.20gb"}
    return {"type": "MODIFIED", "object": sl}


def _uuid_repeated(store: SnapshotStore) -> dict[str, Any]:
    """Node 2's first partition takes node 1's UUID: ``uuid`` stops being identifying."""
    sl = _slice(store, "node-0002-gpu-devices")
    other = _slice(store, "node-0001-gpu-devices")
    sl["spec"]["devices"][1]["attributes"]["uuid"] = other["spec"]["devices"][1]["attributes"]["uuid"]
    return {"type": "MODIFIED", "object": sl}


def _deleted(store: SnapshotStore) -> dict[str, Any]:
    return {"type": "DELETED", "object": _slice(store, "node-0003-nics")}


def _added(store: SnapshotStore) -> dict[str, Any]:
    sl = gen.plain_slice(gen.node_name(1), 4)
    sl["metadata"]["resourceVersion"] = "900"
    return {"type": "ADDED", "object": sl}


def _relabelled(store: SnapshotStore) -> dict[str, Any]:
    """Same pool generation and devices, new metadata: node 2 keeps its class (and the runs through it)."""
    sl = _slice(store, "node-0002-gpu-devices")
    sl["metadata"]["labels"] = {"touched": "yes"}
    sl["metadata"]["resourceVersion"] = "901"
    return {"type": "MODIFIED", "object": sl}


def _capacity_changed(store: SnapshotStore) -> dict[str, Any]:
    """Same attribute values, another capacity: node 2 leaves its class (the runs through it end)."""
    sl = _slice(store, "node-0002-gpu-devices")
    sl["spec"]["devices"][3]["capacity"]["memory"] = {"value": "11Gi"}
    return {"type": "MODIFIED", "object": sl}


def _spread_republished(store: SnapshotStore) -> dict[str, Any]:
    """A pool with a slice on two nodes: node-0001's view of it turns incomplete."""
    sl = _slice(store, "spread-0")
    sl["spec"]["pool"]["generation"] = 2
    return {"type": "MODIFIED", "object": sl}


EVENTS: dict[str, Callable[[SnapshotStore], dict[str, Any]]] = {
    "republish-same-devices": _republished, "attribute-changed": _attribute_changed,
    "identifying-value-repeated": _uuid_repeated, "slice-deleted": _deleted, "slice-added": _added,
    "pool-on-two-nodes": _spread_republished, "capacity-changed": _capacity_changed, "relabelled": _relabelled}


def _view(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """What a model answers: slices, pools per node, the node-class partition, warnings."""
    model = model_for(snapshot, GATES)
    groups: dict[Any, set[str]] = {}
    for n in node_names(model):
        groups.setdefault(class_of(model, n) if class_of(model, n) is not None else n, set()).add(n)
    pools = {n: [(p.driver, p.name, p.incomplete, p.invalid, [d.name for d in p.candidates])
                 for p in pools_for(model, model.node(n))] for n in node_names(model)}
    warns = {k: feasibility_warnings(c, snapshot, GATES, deadline=time.monotonic() + 30, max_steps=10**5)
             for k, c in CLAIMS.items()}
    runs = [run_end(model, i) for i in range(len(node_names(model)))]  # carried over, or checked and kept
    return {"slices": [sl.name for sl in model.slices], "all": [sl.name for sl in model.all_slices],
            "pools": pools, "classes": sorted(sorted(g) for g in groups.values()), "warnings": warns,
            "runs": runs}


@pytest.mark.parametrize("event", list(EVENTS.values()), ids=list(EVENTS))
def test_a_model_after_one_event_answers_as_one_built_afresh(event: Callable[[SnapshotStore], dict[str, Any]]) -> None:
    store = _store(_cluster())
    before = store.snapshot()
    warm(before, GATES)
    _view(before)  # the predecessor's classes, pools and search data, as a serving process has them
    after = store.apply_event("ResourceSlice", event(store))
    assert after.change is not None and after.change.base is before.of("ResourceSlice")
    carried = _view(after)
    fresh = ClusterSnapshot(after.objects, after.source, after.synced_at, after.version + 10**6)
    assert carried == _view(fresh)


def test_a_slice_event_takes_the_converted_slices_over() -> None:
    store = _store(_cluster())
    before = store.snapshot()
    warm(before, GATES)
    prev = model_for(before, GATES)
    after = store.apply_event("ResourceSlice", _republished(store))
    model = model_for(after, GATES)
    assert model._all is not None and model._kept is not None  # spliced, not built again
    kept = {id(sl) for sl in prev.all_slices}
    assert sum(id(sl) not in kept for sl in model.all_slices) == 1
    assert "from" in model.class_data or "identifying" in model.class_data


def test_events_in_a_row_keep_answering_as_models_built_afresh() -> None:
    """Each model follows the one before (its node classes, runs and shared maps carried twice
    or more), with a check after every event, as a serving process sees them."""
    store = _store(_cluster())
    warm(store.snapshot(), GATES)
    _view(store.snapshot())
    for make in (_relabelled, _capacity_changed, _relabelled, _republished, _added, _deleted, _relabelled):
        after = store.apply_event("ResourceSlice", make(store))
        fresh = ClusterSnapshot(after.objects, after.source, after.synced_at, after.version + 10**6)
        assert _view(after) == _view(fresh), make.__name__
