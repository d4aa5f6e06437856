"""`explain`, `capacity` and `state export` judged by the real kube-scheduler (issue 26).

One sandbox with the scheduler and the controller manager (`Sandbox(control_plane=True)`):
examples/cluster/ plus a rack of five test nodes, three alike (each with three devices of its own
driver) and two that a node filter keeps some pods off (one tainted, one with one CPU). Pods are
created for real and the scheduler decides; our commands run as a user would run them, with the
sandbox's kubeconfig:

- a pod the scheduler leaves Pending fits nowhere for `explain`, whose "0/N nodes are
  available" count is the scheduler's (node-level reasons included), and the scheduler's own
  FailedScheduling message is shown beside it;
- a pod the scheduler binds fits, for `explain`, on the node it was bound to;
- `capacity` says N more fit: N+1 replicas of a Deployment bind exactly N and leave one Pending
  (a shape where any placement order gives the same count: identical nodes, two of three devices
  per pod);
- `state export` then `--cluster-state DIR` answers as the live cluster does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import REPO
from tests.rig.sandbox import Sandbox

pytestmark = pytest.mark.e2e

PODS = REPO / "examples" / "pods"
DECIDED_TIMEOUT = 60.0
RACK = "rack.example.com"
RACK_CPU_POOR = "rack-4"
RACK_TAINTED = "rack-3"
RACK_ALIKE = ["rack-0", "rack-1", "rack-2"]
TAINT = {"key": "example.com/reserved", "value": "true", "effect": "NoSchedule"}
CAPACITY_NS = "capacity"


def _rack_objects() -> list[dict[str, Any]]:
    """Five nodes of three devices each (driver rack.example.com), and the class for them."""
    objs: list[dict[str, Any]] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": RACK},
                                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{RACK}"'}}]}}]
    for name in [*RACK_ALIKE, RACK_TAINTED, RACK_CPU_POOR]:
        cpu = "1" if name == RACK_CPU_POOR else "16"
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
        if name == RACK_TAINTED:
            node["spec"] = {"taints": [TAINT]}
        objs.append(node)
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"{name}-devices"},
                     "spec": {"nodeName": name, "driver": RACK,
                              "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                              "devices": [{"name": f"dev-{i}"} for i in range(3)]}})
    return objs


def _rack_workload(replicas: int) -> list[dict[str, Any]]:
    """A Deployment whose pods each ask for 2 CPUs and two rack devices (a template)."""
    tpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": "two-rack", "namespace": CAPACITY_NS},
           "spec": {"spec": {"devices": {"requests": [
               {"name": "devs", "exactly": {"deviceClassName": RACK, "count": 2}}]}}}}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "rack-job", "namespace": CAPACITY_NS},
              "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "rack-job"}},
                       "template": {"metadata": {"labels": {"app": "rack-job"}}, "spec": {
                           "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                           "resources": {"requests": {"cpu": "2"}, "claims": [{"name": "devs"}]}}],
                           "resourceClaims": [{"name": "devs", "resourceClaimTemplateName": "two-rack"}]}}}}
    return [tpl, deploy]


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """The sandbox with the scheduler; examples/cluster/ and the rack loaded."""
    box = Sandbox(tmp_path_factory.mktemp("explain-sandbox"), control_plane=True)
    try:
        rack = tmp_path_factory.mktemp("rack") / "rack.yaml"
        rack.write_text(yaml.safe_dump_all(_rack_objects()))
        box.load(rack)
        box.must("create", "namespace", CAPACITY_NS)
        box.kubectl("create", "serviceaccount", "default", "-n", CAPACITY_NS)
        yield box
    finally:
        box.stop()


def dra(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m webhook ARGS` against the sandbox (its admin kubeconfig), as a user runs it."""
    return subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def live(sb: Sandbox) -> list[str]:
    return ["--kubeconfig", str(sb.api.kubeconfig())]


def pod(sb: Sandbox, name: str, ns: str = "default") -> dict[str, Any]:
    return json.loads(sb.must("get", "pod", name, "-n", ns, "-o", "json"))


def scheduled(p: dict[str, Any]) -> str | None:
    """"True" (bound), "False" (the scheduler gave up on it for now) or None (not decided yet)."""
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return str(c.get("status"))
    return None


def wait_for(what: str, check: Callable[[], Any], timeout: float = DECIDED_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.5)


def wait_decided(sb: Sandbox, name: str, status: str) -> dict[str, Any]:
    """The pod once its PodScheduled condition is ``status`` ("True" bound, "False" Pending)."""
    def check() -> dict[str, Any] | None:
        got = pod(sb, name)
        return got if scheduled(got) == status else None
    return wait_for(f"{name} PodScheduled={status}", check)


def scheduler_message(sb: Sandbox, name: str, ns: str = "default") -> str:
    """The text of the scheduler's FailedScheduling event for the pod (once it is written)."""
    def got() -> str:
        doc = json.loads(sb.must("get", "events", "-n", ns, "-o", "json",
                                 "--field-selector", f"involvedObject.name={name},reason=FailedScheduling"))
        return doc["items"][-1]["message"] if doc["items"] else ""
    return wait_for(f"a FailedScheduling event for {name}", got)


def available_count(message: str) -> str:
    """"0/N nodes are available: ..." up to its first period (the scheduler then adds its
    preemption sentence)."""
    head = message.split(". ", 1)[0].rstrip(".")
    assert re.match(r"^0/\d+ nodes are available: ", head), message
    return head


@pytest.fixture(scope="module")
def pending(sb: Sandbox) -> dict[str, Any]:
    """examples/pods/two-6gi.yaml created; the scheduler left it Pending."""
    sb.must("apply", "-f", str(PODS / "two-6gi.yaml"))
    return wait_decided(sb, "two-6gi", "False")


@pytest.fixture(scope="module")
def bound(sb: Sandbox) -> dict[str, Any]:
    """examples/pods/two-gpus.yaml created; the scheduler bound it."""
    sb.must("apply", "-f", str(PODS / "two-gpus.yaml"))
    return wait_decided(sb, "two-gpus", "True")


def test_a_pending_pod_fits_nowhere_and_the_scheduler_counts_agree(sb: Sandbox, pending: dict[str, Any]):
    theirs = scheduler_message(sb, "two-6gi")
    r = dra("explain", "pod/two-6gi", "-n", "default", *live(sb), "-o", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["fits"] is False
    assert doc["scheduler"] == theirs
    assert available_count(doc["summary"]) == available_count(theirs)
    grouped = {n: g["reason"]["code"] for g in doc["nodes"] for n in g["nodes"]}
    assert grouped[RACK_TAINTED] == "node-taint-not-tolerated"
    assert sorted(grouped) == sorted(["worker-1", "worker-2", *RACK_ALIKE, RACK_TAINTED, RACK_CPU_POOR])


def test_a_pending_pod_in_text_names_node_classes_and_the_scheduler(sb: Sandbox, pending: dict[str, Any]):
    theirs = scheduler_message(sb, "two-6gi")
    r = dra("explain", "pod/two-6gi", *live(sb))
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "pod default/two-6gi fits nowhere"
    assert f"  scheduler: {theirs}" in lines, r.stdout
    # The rack's identical nodes (and the CPU-poor one: this pod asks no CPU) are one class.
    assert any(line.startswith(f"4 nodes like {RACK_ALIKE[0]}") for line in lines), r.stdout
    assert any(line.startswith(RACK_TAINTED) and "taint" in line for line in lines), r.stdout


@pytest.mark.parametrize(("node", "code", "amounts"), [
    pytest.param("worker-1", "counter-exhausted", {"need": "6Gi", "free": "2Gi", "total": "8Gi"},
                 id="counter-with-amounts"),
    pytest.param("worker-2", "selector-false", {}, id="selector-without-amounts"),
])
def test_a_pending_pods_device_reasons_carry_their_amounts_live(sb: Sandbox, pending: dict[str, Any], node: str,
                                                               code: str, amounts: dict[str, str]):
    r = dra("explain", "pod/two-6gi", *live(sb), "-o", "json")
    assert r.returncode == 1, r.stderr
    (group,) = [g for g in json.loads(r.stdout)["nodes"] if node in g["nodes"]]
    assert group["reason"]["code"] == code
    assert {k: group["reason"][k] for k in ("need", "free", "total") if k in group["reason"]} == amounts
    if amounts:
        assert group["text"].endswith(f"{amounts['free']} of {amounts['total']} free, the request needs "
                                      f"{amounts['need']}")


def test_a_bound_pod_fits_on_its_node(sb: Sandbox, bound: dict[str, Any]):
    node = bound["spec"]["nodeName"]
    r = dra("explain", "pod/two-gpus", *live(sb), "-o", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["fits"] is True
    fitting = [n for g in doc["nodes"] if g["fits"] for n in g["nodes"]]
    assert node in fitting, (node, doc["nodes"])


def test_capacity_is_what_the_scheduler_binds(sb: Sandbox, tmp_path: Path):
    spec = tmp_path / "rack-job.yaml"
    spec.write_text(yaml.safe_dump_all(_rack_workload(1)))
    r = dra("capacity", "-f", str(spec), *live(sb), "-o", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    n = doc["fits"]
    assert not doc["capped"]
    assert {x["node"]: x["fits"] for x in doc["nodes"] if x["node"].startswith("rack-")} == {
        **dict.fromkeys(RACK_ALIKE, 1), RACK_TAINTED: 0, RACK_CPU_POOR: 0}
    spec.write_text(yaml.safe_dump_all(_rack_workload(n + 1)))
    sb.must("apply", "-f", str(spec))

    def decided() -> list[dict[str, Any]] | None:
        pods = json.loads(sb.must("get", "pods", "-n", CAPACITY_NS, "-l", "app=rack-job", "-o", "json"))["items"]
        done = len(pods) == n + 1 and all(scheduled(p) in ("True", "False") for p in pods)
        return pods if done else None
    pods = wait_for(f"{n + 1} pods of rack-job decided by the scheduler", decided)
    bound_to = sorted(p["spec"]["nodeName"] for p in pods if scheduled(p) == "True")
    assert bound_to == RACK_ALIKE[:n] and len(bound_to) == n
    (left,) = [p for p in pods if scheduled(p) == "False"]
    assert [c.get("reason") for c in left["status"]["conditions"] if c["type"] == "PodScheduled"] == ["Unschedulable"]
    again = dra("capacity", "-f", str(spec), *live(sb), "-o", "json")
    assert json.loads(again.stdout)["fits"] == 0, again.stdout
    # The replica left Pending: our count is the scheduler's, three node-level kinds included.
    name = left["metadata"]["name"]
    theirs = scheduler_message(sb, name, CAPACITY_NS)
    r = dra("explain", f"pod/{name}", "-n", CAPACITY_NS, *live(sb), "-o", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert available_count(doc["summary"]) == available_count(theirs)
    assert "Insufficient cpu" in doc["summary"] and "untolerated taint" in doc["summary"], doc["summary"]


@pytest.fixture(scope="module")
def exported(sb: Sandbox, pending: dict[str, Any], bound: dict[str, Any],
             tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`state export` of the sandbox once both example pods are decided."""
    out = tmp_path_factory.mktemp("exported")
    r = dra("state", "export", *live(sb), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()), "files written"
    return out


@pytest.mark.parametrize("cmd", [
    pytest.param(["explain", "-f", str(PODS / "two-6gi.yaml")], id="explain-pending"),
    pytest.param(["explain", "-f", str(PODS / "gpu-pod.yaml")], id="explain-fits"),
    pytest.param(["explain", "-f", str(PODS / "gpu-deployment.yaml")], id="explain-workload"),
    pytest.param(["capacity", "-f", str(PODS / "gpu-pod.yaml")], id="capacity"),
])
def test_an_exported_state_answers_as_the_live_cluster(sb: Sandbox, exported: Path, cmd: list[str]):
    out = exported
    on_live = dra(*cmd, *live(sb), "-o", "json")
    offline = dra(*cmd, "--cluster-state", str(out), "-o", "json")
    assert on_live.returncode in (0, 1), on_live.stderr
    assert (offline.returncode, offline.stdout) == (on_live.returncode, on_live.stdout)


@pytest.mark.parametrize("name", ["gpu-deployment.yaml", "two-6gi.yaml", "gpu-pod.yaml"])
def test_simulate_on_an_exported_state_places_as_explain_on_the_live_cluster(sb: Sandbox, exported: Path, name: str):
    on_live = dra("explain", "-f", str(PODS / name), *live(sb), "-o", "json")
    offline = dra("simulate", "-f", str(PODS / name), "--cluster-state", str(exported), "-o", "json")
    assert on_live.returncode == offline.returncode, on_live.stderr + offline.stderr
    ex, sim = json.loads(on_live.stdout), json.loads(offline.stdout)
    assert sim["feasible"] is ex["fits"]
    placed = [p for p in sim.get("pods") or [] if p.get("node")]
    assert len(placed) == ex["placed"], (sim, ex)


def test_a_pending_pod_of_an_exported_state_is_explained_as_the_live_pod(sb: Sandbox, exported: Path):
    on_live = dra("explain", "pod/two-6gi", *live(sb), "-o", "json")
    offline = dra("explain", "pod/two-6gi", "--cluster-state", str(exported), "-o", "json")
    assert (on_live.returncode, offline.returncode) == (1, 1), on_live.stderr + offline.stderr
    doc = json.loads(on_live.stdout)
    assert "scheduler" in doc
    del doc["scheduler"]  # the scheduler's event is the live cluster's alone
    assert json.loads(offline.stdout) == doc


def test_a_bound_pod_of_an_exported_state_is_sent_to_the_live_cluster(sb: Sandbox, exported: Path):
    """A state keeps a bound pod's requests only: its claims are not there to be judged again."""
    r = dra("explain", "pod/two-gpus", "--cluster-state", str(exported))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "is bound to node" in r.stderr and "--kubeconfig" in r.stderr, r.stderr
