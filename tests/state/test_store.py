"""SnapshotStore without threads (the path every watch event takes) and the retry backoff."""

from __future__ import annotations

import random
from typing import Any

import pytest

from webhook.state.live import SnapshotStore, object_key
from webhook.state.reflector import backoff_delay


def node(name: str, rv: str = "1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


def claim(name: str, ns: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}


def ev(typ: str, obj: Any) -> dict[str, Any]:
    return {"type": typ, "object": obj}


def keys(store: SnapshotStore, kind: str) -> list[str]:
    return [object_key(o) or "?" for o in store.snapshot().of(kind)]


@pytest.mark.parametrize(("events", "want_keys", "want_version", "want_rv"), [
    pytest.param([ev("ADDED", node("b", "5")), ev("ADDED", node("a", "6"))], ["a", "b"], 2, "6",
                 id="added-sorted-by-key"),
    pytest.param([ev("ADDED", node("a", "5")), ev("MODIFIED", node("a", "6", x="y"))], ["a"], 2, "6",
                 id="modified-replaces"),
    pytest.param([ev("ADDED", node("a", "5")), ev("DELETED", node("a", "6"))], [], 2, "6",
                 id="deleted-removes"),
    pytest.param([ev("DELETED", node("ghost", "5"))], [], 0, "5", id="delete-of-unknown-is-a-no-op"),
    pytest.param([ev("MODIFIED", node("late", "5"))], ["late"], 1, "5", id="modified-of-unknown-upserts"),
    pytest.param([ev("BOOKMARK", {"metadata": {"resourceVersion": "77"}})], [], 0, "77",
                 id="bookmark-only-moves-resource-version"),
    pytest.param([ev("SOMETHING", node("a")), "not-an-event", None, ev("ADDED", {"metadata": {}}),
                  ev("ADDED", "str"), ev("ADDED", {"metadata": {"name": 3}}), ev("BOOKMARK", None)],
                 [], 0, "", id="malformed-events-change-nothing"),
])
def test_apply_event(events, want_keys, want_version, want_rv):
    store = SnapshotStore()
    for e in events:
        store.apply_event("Node", e)
    assert keys(store, "Node") == want_keys
    assert store.snapshot().version == want_version
    assert store.resource_version("Node") == want_rv


def test_modified_object_content_is_the_new_one():
    store = SnapshotStore()
    store.apply_event("Node", ev("ADDED", node("a", "1", zone="x")))
    snap = store.apply_event("Node", ev("MODIFIED", node("a", "2", zone="y")))
    assert snap.of("Node")[0]["metadata"]["labels"] == {"zone": "y"}


def test_namespaced_keys_and_kind_fill_in():
    store = SnapshotStore()
    store.apply_event("ResourceClaim", ev("ADDED", claim("c", "ns-b")))
    store.apply_event("ResourceClaim", ev("ADDED", claim("c", "ns-a")))
    assert keys(store, "ResourceClaim") == ["ns-a/c", "ns-b/c"]
    o = store.snapshot().of("ResourceClaim")[0]
    assert (o["kind"], o["apiVersion"]) == ("ResourceClaim", "resource.k8s.io/v1")


def test_snapshots_are_immutable_and_old_ones_do_not_change():
    store = SnapshotStore()
    s1 = store.apply_event("Node", ev("ADDED", node("a")))
    s2 = store.apply_event("Node", ev("ADDED", node("b")))
    assert [object_key(o) for o in s1.of("Node")] == ["a"]
    assert [object_key(o) for o in s2.of("Node")] == ["a", "b"]
    with pytest.raises(TypeError):
        s2.objects["Node"] = ()  # type: ignore[index]


def test_event_for_one_kind_reuses_other_kinds_tuples():
    store = SnapshotStore()
    s1 = store.replace("ResourceSlice", [{"metadata": {"name": "s", "resourceVersion": "1"}}], "1")
    s2 = store.apply_event("Node", ev("ADDED", node("a")))
    assert s2.of("ResourceSlice") is s1.of("ResourceSlice")
    assert s2.version == s1.version + 1


@pytest.mark.parametrize(("second", "bumps"), [
    pytest.param([node("a", "1"), node("b", "2")], False, id="same-versions-no-new-snapshot"),
    pytest.param([node("a", "1"), node("b", "3")], True, id="changed-version"),
    pytest.param([node("a", "1")], True, id="object-gone"),
    pytest.param([node("a", "1"), node("b", "2"), node("c", "4")], True, id="object-new"),
])
def test_replace_publishes_only_on_change(second, bumps):
    store = SnapshotStore()
    store.replace("Node", [node("b", "2"), node("a", "1")], "10")
    v = store.snapshot().version
    store.replace("Node", second, "11")
    assert (store.snapshot().version > v) is bumps
    assert store.resource_version("Node") == "11"
    assert keys(store, "Node") == sorted(object_key(o) or "" for o in second)


def test_replace_skips_items_without_a_name():
    store = SnapshotStore()
    store.replace("Node", [node("a"), {"metadata": {}}, "junk", None], "3")
    assert keys(store, "Node") == ["a"]


def test_unknown_kind_is_a_key_error():
    with pytest.raises(KeyError):
        SnapshotStore(kinds=("Node",)).apply_event("ResourceSlice", ev("ADDED", node("a")))


def test_one_event_on_a_large_state_touches_only_its_kind():
    store = SnapshotStore()
    store.replace("Node", [node(f"node-{i:03d}", str(i)) for i in range(500)], "500")
    before = store.snapshot()
    after = store.apply_event("Node", ev("MODIFIED", node("node-250", "501", zone="b")))
    assert len(after.of("Node")) == 500 and after.version == before.version + 1
    assert after.of("Node")[250]["metadata"]["labels"] == {"zone": "b"}
    assert before.of("Node")[250]["metadata"]["labels"] == {}


@pytest.mark.parametrize(("failures", "low", "high"), [
    pytest.param(0, 0.0, 0.0, id="no-failure-no-wait"),
    pytest.param(1, 0.25, 0.5, id="first-retry-half-to-full-base"),
    pytest.param(3, 1.0, 2.0, id="doubles"),
    pytest.param(10, 5.0, 10.0, id="capped"),
    pytest.param(10_000, 5.0, 10.0, id="huge-count-capped-without-overflow"),
])
def test_backoff_is_capped_exponential_with_jitter(failures, low, high):
    rng = random.Random(1)
    delays = [backoff_delay(failures, 0.5, 10.0, rng) for _ in range(50)]
    assert all(low <= d <= high for d in delays)
    if high > 0:
        assert len(set(delays)) > 1  # jittered


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_event_streams_match_a_rebuilt_state(seed):
    rng = random.Random(seed)
    store, ref = SnapshotStore(), {}
    for rv in range(1, 400):
        name = f"n{rng.randrange(40):02d}"
        typ = rng.choice(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"])
        obj = node(name, str(rv), gen=str(rv))
        store.apply_event("Node", ev(typ, obj))
        if typ == "DELETED":
            ref.pop(name, None)
        elif typ != "BOOKMARK":
            ref[name] = obj
    assert keys(store, "Node") == sorted(ref)
    assert [o["metadata"]["labels"]["gen"] for o in store.snapshot().of("Node")] == \
        [ref[k]["metadata"]["labels"]["gen"] for k in sorted(ref)]
    store.replace("Node", list(ref.values()), "9999")  # a relist of the same state changes nothing
    assert keys(store, "Node") == sorted(ref)
