"""LiveState against a fake apiserver on loopback: sync, watch events, 410 relist, drops, outages."""

from __future__ import annotations

import re
import time

import pytest

from tests.state.fakeapi import FakeApiServer, claim_obj, node_obj, pod_obj, rule_obj, slice_obj, wait_for
from webhook.state.base import KINDS, stale_note
from webhook.state.live import LiveState

RESOURCE_KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "Node")


def names(live: LiveState, kind: str) -> list[str]:
    out = []
    for o in live.snapshot().of(kind):
        meta = o["metadata"]
        out.append(f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"])
    return out


def test_initial_list_makes_state_ready_with_kind_and_api_version_filled_in(fake, make_live):
    fake.add("ResourceSlice", slice_obj("s-b"))
    fake.add("ResourceSlice", slice_obj("s-a"))
    fake.add("Node", node_obj("node-1"))
    fake.add("ResourceClaim", claim_obj("c1", "team-a"))
    live = make_live()
    assert live.wait_ready(5)
    snap = live.snapshot()
    assert names(live, "ResourceSlice") == ["s-a", "s-b"]
    assert names(live, "ResourceClaim") == ["team-a/c1"]
    assert snap.count() == {**{k: 0 for k in KINDS}, "ResourceSlice": 2, "ResourceClaim": 1, "Node": 1}
    s = snap.of("ResourceSlice")[0]
    assert (s["kind"], s["apiVersion"]) == ("ResourceSlice", "resource.k8s.io/v1")
    assert snap.of("Node")[0]["apiVersion"] == "v1"
    d = live.describe()
    assert d["ready"] is True and d["stale"] is False
    assert all(k["synced"] and k["lists"] == 1 for k in d["kinds"].values())
    assert d["kinds"]["ResourceSlice"]["resourceVersion"] == str(fake.rv)


@pytest.mark.parametrize("status", [pytest.param(500, id="server-error"),
                                    pytest.param(403, id="forbidden-rbac"),
                                    pytest.param(429, id="too-many-requests")])
def test_not_ready_until_every_kind_has_listed_after_server_errors(fake, make_live, status):
    fake.fail_next["Node"] = (3, status)
    live = make_live()
    wait_for(lambda: live.describe()["kinds"]["Node"]["consecutive_failures"] >= 2, what="failures")
    assert not live.ready()
    assert live.describe()["kinds"]["Node"]["last_error"].startswith(f"HTTP {status}")
    assert live.wait_ready(5)
    node = live.describe()["kinds"]["Node"]
    assert (node["consecutive_failures"], node["last_error"], node["lists"]) == (0, None, 1)
    assert fake.count("list", "Node") == 4


@pytest.mark.parametrize(("kind", "right"), [pytest.param("Node", "list nodes", id="core-group"),
                                           pytest.param("ResourceSlice", "list resourceslices.resource.k8s.io",
                                                        id="named-group")])
def test_a_refused_right_is_named_in_readiness_and_the_log(fake, make_live, caplog, kind, right):
    fake.fail_next[kind] = (2, 403)
    live = make_live()
    wait_for(lambda: live.describe()["kinds"][kind]["consecutive_failures"] >= 1, what="a refusal")
    assert not live.ready()
    assert live.describe()["kinds"][kind]["denied"] == right
    reason = live.unready_reason()
    assert reason is not None and reason.startswith(f"missing RBAC rights: {right} ("), reason
    logged = [r.getMessage() for r in caplog.records if "cannot " + right in r.getMessage()]
    assert logged and "injected failure" in logged[0] and "get, list and watch" in logged[0], logged
    assert live.wait_ready(5)
    assert live.unready_reason() is None and live.describe()["kinds"][kind]["denied"] is None


@pytest.mark.parametrize(("steps", "kind", "want"), [
    pytest.param([("add", "s2")], "ResourceSlice", ["s1", "s2"], id="added"),
    pytest.param([("modify", "s1")], "ResourceSlice", ["s1"], id="modified"),
    pytest.param([("delete", "s1")], "ResourceSlice", [], id="deleted"),
    pytest.param([("add", "s0"), ("add", "s3"), ("delete", "s1"), ("add", "s1")], "ResourceSlice",
                 ["s0", "s1", "s3"], id="mixed-sequence-stays-sorted"),
    pytest.param([("add", "c2"), ("delete", "c1")], "ResourceClaim", ["default/c2"], id="namespaced-claims"),
    pytest.param([("add", "r2"), ("modify", "r1"), ("delete", "r2")], "DeviceTaintRule", ["r1"],
                 id="device-taint-rules"),
])
def test_watch_events_are_reflected_in_snapshots(fake, make_live, steps, kind, want):
    build = {"ResourceSlice": slice_obj, "ResourceClaim": claim_obj, "DeviceTaintRule": rule_obj}[kind]
    fake.add(kind, build({"ResourceSlice": "s1", "ResourceClaim": "c1", "DeviceTaintRule": "r1"}[kind]))
    live = make_live()
    assert live.wait_ready(5)
    v0 = live.snapshot().version
    for op, name in steps:
        if op == "delete":
            fake.delete(kind, name, "default" if kind == "ResourceClaim" else None)
        else:
            obj = build(name)
            obj["metadata"]["labels"] = {"step": op}
            getattr(fake, op)(kind, obj)
    wait_for(lambda: live.describe()["kinds"][kind]["resourceVersion"] == str(fake.rv), what="last event")
    assert names(live, kind) == want
    assert live.snapshot().version == v0 + len(steps)
    if steps == [("modify", "s1")]:
        assert live.snapshot().of(kind)[0]["metadata"]["labels"] == {"step": "modify"}
    assert live.describe()["kinds"][kind]["lists"] == 1


def test_an_event_reuses_the_tuples_of_unchanged_kinds(fake, make_live):
    fake.add("Node", node_obj("n1"))
    live = make_live()
    assert live.wait_ready(5)
    before = live.snapshot()
    fake.add("ResourceSlice", slice_obj("s1"))
    wait_for(lambda: live.snapshot().version > before.version)
    after = live.snapshot()
    assert after.of("Node") is before.of("Node")
    assert after.of("ResourceSlice") is not before.of("ResourceSlice")


def test_bookmark_advances_resource_version_without_a_new_snapshot(fake, make_live):
    live = make_live()
    assert live.wait_ready(5)
    v = live.snapshot().version
    fake.add("Node", node_obj("n1"))  # moves the global resourceVersion; Node watchers see it
    fake.bookmark("ResourceSlice")
    wait_for(lambda: live.describe()["kinds"]["ResourceSlice"]["resourceVersion"] == str(fake.rv))
    wait_for(lambda: live.snapshot().version == v + 1, what="Node event")
    assert live.snapshot().of("ResourceSlice") == ()


@pytest.mark.parametrize("gone_as_http", [
    pytest.param(False, id="error-event-410"),
    pytest.param(True, id="http-410"),
])
def test_gone_relists_and_state_matches_the_server_afterwards(fake, make_live, gone_as_http):
    fake.gone_as_http = gone_as_http
    for n in ("s1", "s2", "s3"):
        fake.add("ResourceSlice", slice_obj(n))
    live = make_live(kinds=RESOURCE_KINDS)
    assert live.wait_ready(5)
    # Changes the watch never delivers (history compacted), then the stream breaks.
    fake.delete("ResourceSlice", "s2", record=False)
    fake.add("ResourceSlice", slice_obj("s4"), record=False)
    fake.modify("ResourceSlice", {**slice_obj("s1"), "spec": {"driver": "new.example.com"}}, record=False)
    fake.compact()
    fake.drop_watches()
    wait_for(lambda: live.describe()["kinds"]["ResourceSlice"]["lists"] >= 2, what="relist")
    wait_for(lambda: names(live, "ResourceSlice") == fake.names("ResourceSlice"), what="converged")
    assert names(live, "ResourceSlice") == ["s1", "s3", "s4"]
    assert live.snapshot().of("ResourceSlice")[0]["spec"]["driver"] == "new.example.com"
    rs = live.describe()["kinds"]["ResourceSlice"]
    assert rs["relists"] >= 1
    fake.add("ResourceSlice", slice_obj("s5"))  # and the new watch works
    wait_for(lambda: "s5" in names(live, "ResourceSlice"), what="event after relist")


def test_error_event_other_than_gone_relists_after_backoff(fake, make_live):
    live = make_live(kinds=("Node",))
    assert live.wait_ready(5)
    fake.error_next_watch["Node"] = 500
    fake.drop_watches()
    wait_for(lambda: live.describe()["kinds"]["Node"]["lists"] >= 2, what="relist after ERROR event")
    assert live.describe()["kinds"]["Node"]["relists"] >= 1
    fake.add("Node", node_obj("n9"))
    wait_for(lambda: names(live, "Node") == ["n9"])


def test_dropped_connection_rewatches_from_the_last_version_without_relisting(fake, make_live):
    live = make_live(kinds=("ResourceSlice",))
    assert live.wait_ready(5)
    fake.add("ResourceSlice", slice_obj("s1"))
    wait_for(lambda: names(live, "ResourceSlice") == ["s1"])
    rv = str(fake.rv)
    fake.drop_watches()
    wait_for(lambda: fake.count("watch", "ResourceSlice") >= 2, what="rewatch")
    fake.add("ResourceSlice", slice_obj("s2"))
    wait_for(lambda: names(live, "ResourceSlice") == ["s1", "s2"])
    watches = [q for m, k, q in fake.requests if m == "watch" and k == "ResourceSlice"]
    assert watches[1]["resourceVersion"] == rv
    assert watches[1]["allowWatchBookmarks"] == "true"
    assert live.describe()["kinds"]["ResourceSlice"]["lists"] == 1


def test_apiserver_down_keeps_old_state_reports_stale_and_recovers(fake, make_live):
    fake.add("ResourceSlice", slice_obj("s1"))
    # A bound every kind's reconnect fits in at once (their backoffs are jittered apart).
    live = make_live(kinds=RESOURCE_KINDS, stale_after_seconds=2.0)
    assert live.wait_ready(5)
    fake.stop()
    # Each kind's reflector notices the outage on its own schedule: wait until all of them have.
    wait_for(lambda: set(live.health()["stale_kinds"]) == set(RESOURCE_KINDS), timeout=15,
             what="every kind stale")
    snap = live.snapshot()  # answers from memory while the apiserver is down
    assert live.snapshot() is snap  # no rebuild, no request: the same published snapshot
    assert names(live, "ResourceSlice") == ["s1"] and snap.of("ResourceSlice")
    h = live.health()
    assert h["ready"] is True and set(h["stale_kinds"]) == set(RESOURCE_KINDS)
    assert re.fullmatch(r"state is stale \(last sync \d+ s ago\)", h["message"])
    assert (stale_note(live) or "").startswith("state is stale (last sync ")
    wait_for(lambda: live.describe()["kinds"]["Node"]["consecutive_failures"] >= 3, what="backoff retries")
    fake.add("ResourceSlice", slice_obj("s2"))  # changed while we could not see it
    fake.start()
    wait_for(lambda: names(live, "ResourceSlice") == ["s1", "s2"], what="recovered")
    wait_for(lambda: not live.health()["stale"], what="fresh")
    assert live.health()["message"] is None


def test_slow_list_times_out_and_snapshot_still_answers_at_once(fake, make_live):
    fake.slow["Node"] = 1.0
    live = make_live(kinds=("Node", "DeviceClass"), request_timeout_seconds=0.2)
    wait_for(lambda: live.describe()["kinds"]["Node"]["consecutive_failures"] >= 1, what="timeout")
    snap = live.snapshot()  # a list is hanging: still answered from memory
    assert live.snapshot() is snap
    assert not live.ready()
    assert "Timeout" in live.describe()["kinds"]["Node"]["last_error"]
    fake.slow.clear()
    assert live.wait_ready(5)


def test_kind_not_served_counts_as_synced_empty_and_never_stale(fake, make_live):
    fake.not_found |= {"Workload", "PodGroup"}
    live = make_live(kinds=("Workload", "PodGroup"), stale_after_seconds=0.3)
    assert live.wait_ready(5)
    time.sleep(0.4)  # past stale_after_seconds
    d = live.describe()
    for kind in ("Workload", "PodGroup"):
        assert (d["kinds"][kind]["synced"], d["kinds"][kind]["served"], d["kinds"][kind]["objects"]) == \
            (True, False, 0)
    assert live.health()["stale"] is False
    assert fake.count("watch", "Workload") == 0


def test_an_open_watch_that_delivers_nothing_goes_stale_and_a_bookmark_freshens_it(fake, make_live):
    """A hung apiserver keeps the stream open and sends nothing: that is not contact. A healthy
    quiet stream sends bookmarks (the real apiserver's are in tests/reliability/test_live_faults.py)."""
    live = make_live(kinds=("Node",), stale_after_seconds=0.5)
    assert live.wait_ready(5)
    wait_for(lambda: live.describe()["kinds"]["Node"]["connected"], what="watch open")
    wait_for(lambda: live.health()["stale_kinds"] == ["Node"], what="stale with the watch open")
    assert live.describe()["kinds"]["Node"]["connected"] is True
    fake.bookmark("Node")
    wait_for(lambda: not live.health()["stale"], what="fresh after a bookmark")
    assert live.describe()["kinds"]["Node"]["connected"] is True


def test_a_stream_the_server_ends_cleanly_counts_as_contact(fake, make_live):
    """A kind served without the watch cache gets no bookmarks: the watch timeout cycle alone
    keeps it fresh, when the bound exceeds the timeout."""
    live = make_live(kinds=("Node",), watch_timeout_seconds=1, stale_after_seconds=2.5)
    assert live.wait_ready(5)
    wait_for(lambda: fake.count("watch", "Node") >= 4, timeout=15, what="three clean stream ends")
    assert live.health()["stale"] is False


def test_configure_changes_the_bound_and_the_next_watch_timeout(fake, make_live):
    live = make_live(kinds=("Node",), watch_timeout_seconds=1, stale_after_seconds=30)
    assert live.wait_ready(5)
    live.configure(stale_after_seconds=0.2, watch_timeout_seconds=7)
    assert live.stale_after_seconds == 0.2
    wait_for(lambda: any(q.get("timeoutSeconds") == "7" for m, k, q in list(fake.requests) if m == "watch"),
             what="a watch with the new timeout")


def test_paged_list_collects_every_page(fake, make_live):
    for i in range(5):
        fake.add("ResourceSlice", slice_obj(f"s{i}"))
    live = make_live(kinds=("ResourceSlice",), page_size=2)
    assert live.wait_ready(5)
    assert names(live, "ResourceSlice") == [f"s{i}" for i in range(5)]
    assert fake.count("list", "ResourceSlice") == 3


def test_periodic_resync_relists_without_a_new_snapshot_when_nothing_changed(fake, make_live):
    fake.add("Node", node_obj("n1"))
    live = make_live(kinds=("Node",), resync_seconds=1)
    assert live.wait_ready(5)
    v = live.snapshot().version
    wait_for(lambda: live.describe()["kinds"]["Node"]["lists"] >= 2, timeout=5, what="resync")
    assert live.snapshot().version == v
    assert live.describe()["kinds"]["Node"]["relists"] == 0


def test_stop_ends_every_thread_promptly_with_watches_open(fake, make_live):
    live = make_live()
    assert live.wait_ready(5)
    wait_for(lambda: all(k["connected"] for k in live.describe()["kinds"].values()), what="watches open")
    assert len([t for t in live.threads() if t.is_alive()]) == len(KINDS)  # one reflector per kind
    # The watches would stay open for minutes; returning True within the 3 s join timeout shows
    # stop() shut the streams down instead of waiting for them.
    assert live.stop(timeout=3)
    assert not any(t.is_alive() for t in live.threads())


def test_apply_event_without_threads_uses_the_reflector_path(fake, make_live):
    live = make_live(start=False)
    snap = live.apply_event("Node", {"type": "ADDED", "object": {"metadata": {"name": "n1",
                                                                               "resourceVersion": "7"}}})
    assert snap is live.snapshot() and snap.version == 1
    assert snap.of("Node")[0]["kind"] == "Node"
    assert live.describe()["kinds"]["Node"]["resourceVersion"] == "7"
    assert live.ready() is False and live.threads() == []


def test_fake_server_restarts_on_the_same_port():
    srv = FakeApiServer().start()
    port = srv.port
    srv.stop()
    srv.start()
    try:
        assert srv.port == port
    finally:
        srv.stop()


def test_pods_are_listed_and_watched_without_terminal_ones_and_trimmed(fake, make_live):
    fake.add("Pod", pod_obj("running", node="node-1"))
    fake.add("Pod", pod_obj("pending"))
    fake.add("Pod", pod_obj("done", node="node-1", phase="Succeeded"))
    live = make_live()
    assert live.wait_ready(5)
    assert names(live, "Pod") == ["default/pending", "default/running"]
    lists = [q for mode, kind, q in fake.requests if kind == "Pod"]
    assert lists and all(q.get("fieldSelector") == "status.phase!=Succeeded,status.phase!=Failed" for q in lists)
    running = next(o for o in live.snapshot().of("Pod") if o["metadata"]["name"] == "running")
    assert running["spec"] == {"nodeName": "node-1",
                               "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    assert "annotations" not in running["metadata"] and running["status"] == {"phase": "Pending"}
    pending = next(o for o in live.snapshot().of("Pod") if o["metadata"]["name"] == "pending")
    assert pending["spec"]["tolerations"] == [{"operator": "Exists"}]  # what the filters read of a pending pod
    fake.modify("Pod", pod_obj("running", node="node-1", phase="Succeeded"))
    wait_for(lambda: names(live, "Pod") == ["default/pending"], what="the finished pod to leave the state")


def test_the_live_state_watches_exactly_the_state_kinds():
    """One table per fact: every state kind is listed and watched, and nothing else is; kinds we
    have rules for take their group, version and plural from the registry."""
    from webhook.rules.registry import by_kind
    from webhook.state.reflector import KIND_APIS

    assert set(KIND_APIS) == set(KINDS)
    for kind, api in KIND_APIS.items():
        rules = by_kind(kind)
        if rules is not None:
            assert (api.api_version, api.path.rsplit("/", 1)[1], api.namespaced) == (
                rules.api_version(), rules.plural, rules.namespaced), kind


@pytest.mark.parametrize(("contacts", "want_stale"), [
    pytest.param({}, False, id="never-synced"),
    pytest.param({"Node": (True, True, 5)}, False, id="fresh"),
    pytest.param({"Node": (True, True, 5), "ResourceSlice": (True, True, 90)}, True, id="one-kind-stale"),
    pytest.param({"Node": (True, False, 90)}, False, id="not-served-never-stale"),
    pytest.param({"Node": (False, True, 90)}, False, id="not-synced-not-stale"),
    pytest.param({"Node": (False, True, 200), "ResourceSlice": (True, True, 90)}, True, id="oldest-unsynced-counts"),
])
def test_the_stale_message_is_the_health_reports(contacts, want_stale):
    live = LiveState(object(), stale_after_seconds=60)  # never started: statuses set by hand
    now = time.monotonic()
    for kind, (synced, served, age) in contacts.items():
        st = live._status[kind]
        st.synced, st.served, st.last_contact = synced, served, now - age
    message = live.stale_message()
    assert message == live.health()["message"]
    assert (message is not None) == want_stale
    assert stale_note(live) == message
