"""simulate output (JSON shape, text, exit codes) and agreement with the feasibility warnings."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from webhook.allocator import feasibility_warnings
from webhook.allocator.feasibility import warning_line
from webhook.allocator.reasons import Code, Reason
from webhook.cli.simulate import run_simulate
from webhook.gates import FeatureGates
from webhook.state import from_dir

SNAP = from_dir("examples/cluster")
CG_ON = FeatureGates.parse("DRADeviceCompatibilityGroups=true")


def _claim(name: str, cls: str, count: int = 1, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {
                "deviceClassName": cls, "count": count, **body}}]}}}


TEMPLATE = SNAP.find("ResourceClaimTemplate", "bandwidth-claim-template", "default")
CASES = [
    pytest.param([TEMPLATE], FeatureGates(), True, id="seed-bandwidth-template-feasible"),
    pytest.param([_claim("two-6gi", "resource.example.com", 2,
                         selectors=[{"cel": {"expression": "!has(device.attributes['dra.example.com'].name)"}}])],
                 FeatureGates(), False, id="two-6gi-on-8gi-infeasible"),
    pytest.param([_claim("mig-and-vgpu", "gpu.example.com", 3)], CG_ON, False, id="mig-vgpu-groups-on"),
    pytest.param([_claim("one-gpu", "gpu.example.com", 1)], FeatureGates(), True, id="one-gpu-on-worker-2"),
]


@pytest.mark.parametrize(("objs", "gates", "feasible"), CASES)
def test_simulate_and_warnings_agree(objs: list[dict[str, Any]], gates: FeatureGates, feasible: bool) -> None:
    code, text = run_simulate(objs, SNAP, gates, None, output="json")
    doc = json.loads(text)
    assert set(doc) == {"feasible", "node", "allocations", "reasons", "stats"}
    assert set(doc["stats"]) == {"allocateSeconds"} and 0 < doc["stats"]["allocateSeconds"] < 60
    assert doc["feasible"] is feasible and code == (0 if feasible else 1)
    warns = feasibility_warnings(objs[0], SNAP, gates, deadline=time.monotonic() + 10, max_steps=100_000)
    assert (warns == []) is feasible
    assert all(w.startswith("feasibility: ") and len(w) <= 120 for w in warns)
    if not feasible:
        assert doc["reasons"] and doc["allocations"] == [] and doc["node"] is None


def test_simulate_json_shape_for_the_seed_template() -> None:
    code, text = run_simulate([TEMPLATE], SNAP, FeatureGates(), None, output="json")
    assert code == 0
    doc = json.loads(text)
    assert isinstance(doc.pop("stats")["allocateSeconds"], float)
    assert doc == {"feasible": True, "node": "worker-1", "reasons": [], "allocations": [
        {"claim": "default/bandwidth-claim-template-claim", "results": [
            {"request": "req-0", "driver": "dra.example.com", "pool": "net-pool", "device": "eth1",
             "consumedCapacity": {"bandwidth": "1G"}}]}]}


def test_text_output_names_the_failed_constraint_per_node() -> None:
    code, text = run_simulate([_claim("c", "gpu.example.com", 2)], SNAP, CG_ON, None)
    assert code == 1
    assert "node worker-1:" in text and "compatibility group intersection empty on gpu-0-memory" in text
    assert "node worker-2:" in text


def test_warning_names_the_counter() -> None:
    c = _claim("gpu-claim", "resource.example.com", 2,
               selectors=[{"cel": {"expression": "!has(device.attributes['dra.example.com'].name)"}}])
    warns = feasibility_warnings(c, SNAP, FeatureGates(), deadline=time.monotonic() + 10, max_steps=100_000)
    assert warns[0] == ("feasibility: claim gpu-claim request req-0 (class resource.example.com): counter memory "
                        "of gpu-1-counters exhausted")


def test_budget_cut_short_warning() -> None:
    warns = feasibility_warnings(_claim("c", "gpu.example.com", 2), SNAP, FeatureGates(),
                                 deadline=time.monotonic() + 10, max_steps=1)
    assert len(warns) == 1 and "cut short after" in warns[0]


@pytest.mark.parametrize("obj", [
    pytest.param({"kind": "ResourceClaim", "spec": None}, id="null-spec"),
    pytest.param({"kind": "ResourceClaim", "spec": {"devices": {"requests": [7, None, {"name": []}]}}},
                 id="garbage-requests"),
    pytest.param({"kind": "PodGroup", "metadata": {"name": "pg"}, "spec": {"resourceClaims": "x"}}, id="odd-podgroup"),
])
def test_warnings_never_raise_on_odd_input(obj: dict[str, Any]) -> None:
    warns = feasibility_warnings(obj, SNAP, FeatureGates(), deadline=time.monotonic() + 5, max_steps=1000)
    assert all(w.startswith("feasibility: ") for w in warns)


def test_podgroup_joint_and_per_pod_modes() -> None:
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "default"},
          "spec": {"resourceClaims": [{"name": "a", "resourceClaimTemplateName": "one-gpu"},
                                      {"name": "b", "resourceClaimTemplateName": "bandwidth-claim-template"}]}}
    code, text = run_simulate([pg], SNAP, FeatureGates(), None, output="json")
    assert code == 1  # one GPU free on worker-2, the bandwidth device is on worker-1
    code, text = run_simulate([pg], SNAP, FeatureGates(), None, podgroup_mode="per-pod", output="json")
    assert code == 1
    assert run_simulate([pg], SNAP, FeatureGates(), None, podgroup_mode="bogus")[0] == 2
    assert run_simulate([{"kind": "Pod"}], SNAP, FeatureGates(), None)[0] == 2


_SHORT = Reason(Code.COUNTER_EXHAUSTED, claim="default/c", request="r", counter="memory", counter_set="set-0",
                node="n1", need=6 << 30, free=2 << 30, total=8 << 30)


@pytest.mark.parametrize(("r", "about", "limit", "want"), [
    pytest.param(_SHORT, "", 0, "feasibility: claim c request r: counter memory of set-0: 2Gi of 8Gi free, the "
                 "request needs 6Gi on n1", id="short-names-keep-the-amounts-within-120"),
    pytest.param(_SHORT._replace(claim="default/" + "c" * 40), "", 0,
                 f"feasibility: claim {'c' * 40} request r: counter memory of set-0 exhausted on n1",
                 id="long-names-drop-the-amounts-first"),
    pytest.param(_SHORT._replace(claim="default/" + "c" * 40), "", 10_000,
                 f"feasibility: claim {'c' * 40} request r: counter memory of set-0: 2Gi of 8Gi free, the request "
                 "needs 6Gi on n1", id="offline-keeps-everything"),
    pytest.param(Reason(Code.TOO_FEW, claim="default/" + "c" * 40, request="r", number=2, got=1, free=1, total=2,
                        pool="d/p"), "", 0,
                 f"feasibility: claim {'c' * 40} request r: needs 2 devices, only 1 could be allocated",
                 id="devices-drop-the-counts-first"),
])
def test_warnings_keep_amounts_only_where_they_fit(r: Reason, about: str, limit: int, want: str) -> None:
    got = warning_line(r, about, limit)
    assert got == want
    assert len(got) <= (limit or 120)
