"""The compacted state is equal to what was decoded, shares what repeats, and tells 1, 1.0 and True apart."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import gen
from webhook.state.compact import RECENT, Compactor, compact_all
from webhook.state.live import SnapshotStore


def _walk(v: Any) -> list[Any]:
    out = [v]
    if isinstance(v, dict):
        for x in v.values():
            out += _walk(x)
    elif isinstance(v, list):
        for x in v:
            out += _walk(x)
    return out


def test_compacted_cluster_is_equal_and_shares_repeated_parts() -> None:
    objs = gen.cluster(4)
    want = json.loads(json.dumps(objs))
    got = compact_all(copy.deepcopy(objs))
    assert got == want
    assert json.dumps(got) == json.dumps(want)  # same key order too
    slices = [o for o in got if o["kind"] == "ResourceSlice" and "devices" in o["spec"]]
    caps = [d["capacity"] for sl in slices for d in sl["spec"]["devices"] if d["name"] == "gpu-0"]
    # The capacity map nests three levels: it is shared from its fifth occurrence on (node 0's
    # gpu-4), so every later node's gpu-0 holds the same one.
    assert len(caps) == 4 and all(c is caps[1] for c in caps[1:])
    tops = [o for o in got if o["kind"] == "ResourceSlice"]
    assert len({id(o) for o in tops}) == len(tops)  # each object keeps its own top-level dict


@pytest.mark.parametrize("values", [[1, 1.0, True], [0, False, 0.0], ["1", 1]], ids=["one", "zero", "str-int"])
def test_equal_python_values_of_other_json_types_stay_apart(values: list[Any]) -> None:
    c = Compactor()
    got = [c.object({"kind": "Node", "v": {"x": v}, "l": [v]}) for v in values]
    for v, o in zip(values, got, strict=True):
        assert type(o["v"]["x"]) is type(v) and type(o["l"][0]) is type(v)


def test_table_is_bounded_and_starts_afresh() -> None:
    c = Compactor(max_entries=8)
    first = [c.object({"kind": "Node", "a": {"v": str(i)}}) for i in range(40)]
    assert len(c._table) <= 9
    assert [o["a"]["v"] for o in first] == [str(i) for i in range(40)]


def test_store_compacts_slices_and_keeps_objects_unchanged_on_resync() -> None:
    store = SnapshotStore()
    objs = [o for o in gen.cluster(2) if o["kind"] == "ResourceSlice"]
    for i, o in enumerate(objs):
        o["metadata"]["resourceVersion"] = str(i + 1)
    store.replace("ResourceSlice", copy.deepcopy(objs), "10")
    first = store.snapshot().of("ResourceSlice")
    assert list(first) == sorted(objs, key=lambda o: o["metadata"]["name"])
    changed = copy.deepcopy(objs)
    changed[0]["metadata"]["resourceVersion"] = "99"
    store.replace("ResourceSlice", changed, "11")
    second = {o["metadata"]["name"]: o for o in store.snapshot().of("ResourceSlice")}
    kept = {o["metadata"]["name"]: o for o in first}
    for name, o in second.items():
        same_rv = o["metadata"]["resourceVersion"] == kept[name]["metadata"]["resourceVersion"]
        assert (o is kept[name]) == same_rv, name  # unchanged objects are kept as stored


@pytest.mark.parametrize(("between", "shares_first"), [(0, True), (100, True), (3 * RECENT, False)],
                         ids=["next-object", "a-hundred-later", "past-the-window"])
def test_a_structure_seen_again_soon_shares_its_first_instance(between: int, shares_first: bool) -> None:
    """The partitions of one GPU repeat its UUID one device after the other: the first copy is the
    one kept; past the window of recent first sightings the second sighting makes a second copy
    (the bitmap remembers it from there)."""
    c = Compactor()
    first = c.object({"kind": "Node", "parent": {"string": "uuid-1"}})
    for i in range(between):
        c.object({"kind": "Node", "other": {"string": f"unique-{i}"}})
    again = c.object({"kind": "Node", "parent": {"string": "uuid-1"}})
    third = c.object({"kind": "Node", "parent": {"string": "uuid-1"}})
    assert (again["parent"] is first["parent"]) is shares_first
    assert third["parent"] is again["parent"]
