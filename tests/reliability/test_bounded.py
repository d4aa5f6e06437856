"""Bounded work: pathological requests to the real server with ``?timeout=2s`` are answered before
the deadline, with a ``feasibility:`` warning when the check had to stop.

The cluster state has one node with a 128-device slice whose attribute ``x`` takes only 31 values,
and a 31-unit counter set shared by 64 devices. Asking for 32 devices with distinct ``x`` (or 32
devices from the counter set) cannot succeed, but a depth-first search proves that only after
trying every combination: exponential, so only the step budget or the deadline ends it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import post, start_server
from tests.strategies import check_response

pytestmark = pytest.mark.integration

TIMEOUT = 2.0
# The apiserver gives up at TIMEOUT: the answer must come back before it. The server stops its own
# work 0.5 s before that; this margin (loopback, JSON) is what a loaded 2-core CI machine needs.
MARGIN = 0.1
DRIVER = "gpu.example.com"
COUNTED = "cnt.example.com"


def _state_objects() -> list[dict[str, Any]]:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}}
    classes = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": d},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{d}"'}}]}}
               for d in (DRIVER, COUNTED)]
    big = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "big"},
           "spec": {"driver": DRIVER, "nodeName": "worker-1",
                    "pool": {"name": "big", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"gpu-{i}", "attributes": {"x": {"int": i % 31},
                                                                    "model": {"string": "a100"}},
                                 "capacity": {"memory": {"value": "80Gi"}}} for i in range(128)]}}
    counters = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "counters"},
                "spec": {"driver": COUNTED, "nodeName": "worker-1",
                         "pool": {"name": "counted", "generation": 1, "resourceSliceCount": 2},
                         "sharedCounters": [{"name": "units", "counters": {"u": {"value": "31"}}}]}}
    counted = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "counted"},
               "spec": {"driver": COUNTED, "nodeName": "worker-1",
                        "pool": {"name": "counted", "generation": 1, "resourceSliceCount": 2},
                        "devices": [{"name": f"part-{i}", "consumesCounters": [
                            {"counterSet": "units", "counters": {"u": {"value": "1"}}}]} for i in range(64)]}}
    templates = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": f"counted-{i}", "namespace": "default"},
                  "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
                      "deviceClassName": COUNTED, "count": 8, "allocationMode": "ExactCount"}}]}}}}
                 for i in range(4)]
    return [node, *classes, big, counters, counted, *templates]


def _distinct_spec(count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": DRIVER, "count": count,
                                                               "allocationMode": "ExactCount"}}],
                        "constraints": [{"requests": ["r"], "distinctAttribute": f"{DRIVER}/x"}]}}


def _claim(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _review(obj: dict[str, Any], dry_run: bool = True) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": f"uid-{obj['metadata']['name']}",
                        "kind": {"group": group, "version": version, "kind": obj["kind"]},
                        "name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", ""),
                        "operation": "CREATE", "userInfo": {"username": "t"}, "object": obj,
                        "oldObject": None, "dryRun": dry_run}}


# Exponential searches: each must end with the step budget or the deadline.
EXPONENTIAL = [
    pytest.param(_claim("distinct-32", _distinct_spec(32)), id="32-distinct-among-31-values"),
    pytest.param(_claim("counters-32", {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": COUNTED, "count": 32, "allocationMode": "ExactCount"}}]}}),
        id="32-devices-from-a-31-unit-counter-set"),
    pytest.param(_claim("two-requests", {"devices": {
        "requests": [{"name": n, "exactly": {"deviceClassName": DRIVER, "count": 16, "allocationMode": "ExactCount"}}
                     for n in ("a", "b")],
        "constraints": [{"requests": ["a", "b"], "distinctAttribute": f"{DRIVER}/x"}]}}),
        id="two-requests-sharing-a-distinct-constraint"),
    pytest.param({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                  "metadata": {"name": "many-claims", "namespace": "default"},
                  "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"single": {}},
                           "resourceClaims": [{"name": f"c{i}", "resourceClaimTemplateName": f"counted-{i}"}
                                              for i in range(4)]}},
                 id="podgroup-with-four-claims-of-8-counted-devices"),
]


@pytest.fixture(scope="module")
def bounded_server(rel_certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    state = tmp_path_factory.mktemp("bounded-state")
    (state / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                  "items": _state_objects()}))
    srv = start_server(rel_certs, tmp_path_factory.mktemp("bounded-srv"), "--cluster-state", str(state),
                       "--feature-gates", "GenericWorkload=true,DRAWorkloadResourceClaims=true")
    yield srv
    assert srv.stop() == 0


def _timed(srv: Any, obj: dict[str, Any], timeout: float = TIMEOUT,
           endpoint: str = "validate") -> tuple[float, dict[str, Any]]:
    doc = _review(obj)
    started = time.monotonic()
    r = post(srv, f"/{endpoint}?timeout={timeout:g}s", doc, timeout=timeout * 5)
    elapsed = time.monotonic() - started
    assert r.status_code == 200, r.text[:500]
    out = r.json()
    check_response(doc, out, endpoint)
    return elapsed, out["response"]


@pytest.mark.parametrize("obj", EXPONENTIAL)
def test_exponential_search_is_cut_short_before_the_deadline(bounded_server, obj):
    elapsed, resp = _timed(bounded_server, obj)
    assert elapsed < TIMEOUT - MARGIN, f"answered after {elapsed:.2f}s with ?timeout={TIMEOUT}s"
    assert resp["allowed"] is True, resp.get("status")
    feas = [w for w in resp.get("warnings", []) if w.startswith("feasibility:")]
    assert any("cut short" in w for w in feas), (
        f"no 'feasibility: ... cut short' warning; warnings={resp.get('warnings')}")


def test_shorter_timeout_shortens_the_check(bounded_server):
    """A 1 s timeout leaves 0.5 s for the search: the answer comes back sooner, still cut short."""
    elapsed, resp = _timed(bounded_server, _claim("distinct-fast", _distinct_spec(32)), timeout=1.0)
    assert elapsed < 1.0 - MARGIN, f"answered after {elapsed:.2f}s with ?timeout=1s"
    assert any(w.startswith("feasibility:") for w in resp.get("warnings", [])), resp


def test_feasible_claim_against_the_big_slice_gets_no_warning(bounded_server):
    """The control case: the same state answers a satisfiable claim quickly and quietly."""
    elapsed, resp = _timed(bounded_server, _claim("distinct-8", _distinct_spec(8)))
    assert elapsed < TIMEOUT - MARGIN
    assert resp["allowed"] is True
    assert not [w for w in resp.get("warnings", []) if w.startswith("feasibility:")], resp["warnings"]


def _huge_slice(salt: str = "") -> dict[str, Any]:
    """A legal slice at the limits: 128 devices, 32 attributes + capacities each, long names."""
    devices = []
    for i in range(128):
        attrs = {f"vendor.example.com/attr_{j:02d}": {"string": "v" * 60} for j in range(16)}
        caps = {f"cap_{j:02d}": {"value": f"{j + 1}Gi"} for j in range(16)}
        devices.append({"name": f"device-{i:03d}-" + "d" * 40, "attributes": attrs, "capacity": caps})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "huge"},
            "spec": {"driver": DRIVER, "nodeName": "worker-1",
                     "pool": {"name": "huge", "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def _heavy_cel_claim(salt: str = "") -> dict[str, Any]:
    """32 requests whose selectors (two distinct 60-term expressions, 3.5 KB each, far below the
    CEL size and cost limits) are false for every device: each device x expression is evaluated
    once, about 2 x 128 evaluations. Must stay within the request deadline like any other work."""
    def expr(k: int) -> str:
        return " || ".join(f'device.attributes["{DRIVER}"].model == "m{salt}{k}-{j}"' for j in range(60))
    reqs = [{"name": f"r{i}", "exactly": {"deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 1,
                                          "selectors": [{"cel": {"expression": expr(i % 2)}}] * 4}}
            for i in range(32)]
    return _claim("heavy-cel", {"devices": {"requests": reqs}})


@pytest.mark.parametrize("make", [pytest.param(_huge_slice, id="128-device-slice-at-the-limits"),
                                  pytest.param(_heavy_cel_claim, id="32-requests-with-large-cel-selectors")])
@pytest.mark.parametrize("endpoint", ["validate", "mutate"])
def test_huge_but_legal_objects_are_answered_in_time(bounded_server, make, endpoint):
    obj = make(endpoint)  # distinct per endpoint: nothing cached from the other run helps
    body = json.dumps(_review(obj)).encode()
    assert len(body) < 3 * 1024 * 1024
    elapsed, resp = _timed(bounded_server, obj, endpoint=endpoint)
    assert elapsed < TIMEOUT - MARGIN, f"answered after {elapsed:.2f}s with ?timeout={TIMEOUT}s"
    assert resp["allowed"] is True, resp.get("status", {}).get("message", "")[:500]


def _pod_with_claims(n: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "many", "namespace": "default"},
            "spec": {"schedulingGroup": {"podGroupName": "big-group"},
                     "containers": [{"name": "c", "image": "x"}],
                     "resourceClaims": [{"name": f"c{i}", "resourceClaimName": f"x{i}"} for i in range(n)]}}


def test_state_notes_of_a_pod_with_many_claims_are_answered_in_time(rel_certs, tmp_path):
    """The PodGroup claim-sharing note compared every pod claim with every group claim:
    40,000 against 4,000 took 23 s. Now one lookup per claim."""
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "big-group", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "disruptionMode": {"single": {}},
                      "resourceClaims": [{"name": f"g{i}", "resourceClaimName": f"x{i}"} for i in range(4000)]}}
    (tmp_path / "state.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [group]}))
    srv = start_server(rel_certs, tmp_path, "--cluster-state", str(tmp_path),
                       "--feature-gates", "GenericWorkload=true,DRAWorkloadResourceClaims=true")
    try:
        doc = _review(_pod_with_claims(40_000))
        doc["request"]["kind"] = {"group": "", "version": "v1", "kind": "Pod"}
        started = time.monotonic()
        r = post(srv, "/validate?timeout=2s", doc, timeout=60)
        elapsed = time.monotonic() - started
    finally:
        assert srv.stop() == 0
    assert r.status_code == 200, r.text[:300]
    assert elapsed < TIMEOUT, f"answered after {elapsed:.2f}s with ?timeout={TIMEOUT}s"
    notes = [w for w in r.json()["response"].get("warnings", []) if "is not shared" in w]
    assert notes, r.json()["response"].get("warnings")  # every pod claim x{i} is group claim g{i}


@pytest.mark.parametrize("seed", range(20))
def test_the_sharing_note_index_agrees_with_the_plain_comparison(seed):
    """The lookup gives the warnings, in the order, of comparing every pair (the rule as stated)."""
    import random

    from webhook.rules.scheduling import pod as pod_rules
    rnd = random.Random(seed)
    fields = ["resourceClaimName", "resourceClaimTemplateName"]

    def claims(prefix: str) -> list[dict[str, Any]]:
        out = []
        for _ in range(rnd.randint(0, 8)):
            item: dict[str, Any] = {"name": f"{rnd.choice([prefix, 'n'])}{rnd.randint(0, 4)}"}
            for f in rnd.sample(fields, rnd.randint(0, 2)):
                item[f] = rnd.choice([f"v{rnd.randint(0, 3)}", 7, {"x": 1}, None])
            out.append(item)
        return out

    pod = {"spec": {"schedulingGroup": {"podGroupName": "g"}, "resourceClaims": claims("p")}}
    group = {"spec": {"resourceClaims": claims("q")}}
    own = pod_rules._claims(pod["spec"])
    grp = pod_rules._claims(group["spec"])
    want = []
    for name, ref in own.items():  # the rule written out as nested loops
        if name in grp:
            if grp[name] != ref:
                want.append(f'pod claim "{name}" is not shared: PodGroup "g" has it as {pod_rules._show(grp[name])}')
            continue
        want += [f'pod claim "{name}" is not shared: PodGroup names it "{g}"'
                 for g, gref in grp.items() if ref == gref and ref[0] is not None]
    assert pod_rules.podgroup_claim_mismatch_warnings(pod, group) == want
