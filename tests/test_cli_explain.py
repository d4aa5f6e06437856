"""``dra-webhook explain`` and ``capacity`` on the command line: exit codes, JSON shape, bad
input as one line on stderr (never a traceback)."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_cli_commands import BIN, one_line_exit_2, run
from webhook.cli import main

ROOT = Path(__file__).resolve().parents[1]
PODS = ROOT / "examples" / "pods"


@pytest.mark.parametrize(("args", "code", "headline"), [
    pytest.param(["-f", str(PODS / "gpu-pod.yaml")], 0, "pod default/gpu-pod fits on 1 of 2 nodes", id="fits"),
    pytest.param(["-f", str(PODS / "two-6gi.yaml")], 1, "pod default/two-6gi fits nowhere", id="fits-nowhere"),
    pytest.param(["-f", str(PODS / "gpu-deployment.yaml")], 1, "1 of 3 pods placed", id="workload"),
])
def test_exit_code_and_headline(args: list[str], code: int, headline: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *args]) == code
    assert capsys.readouterr().out.startswith(headline)


def test_json_groups_nodes_with_a_reason_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-f", str(PODS / "two-6gi.yaml"), "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False
    assert [(g["nodes"], g["reason"]["code"]) for g in doc["nodes"]] == [
        (["worker-1"], "counter-exhausted"), (["worker-2"], "selector-false")]
    assert doc["nodes"][0]["text"].endswith("counter memory of gpu-1-counters: 2Gi of 8Gi free, the request needs 6Gi")
    assert {k: doc["nodes"][0]["reason"][k] for k in ("need", "free", "total")} == {
        "need": "6Gi", "free": "2Gi", "total": "8Gi"}
    assert doc["members"] == []


@pytest.mark.parametrize(("args", "says"), [
    pytest.param([], "give pod/NAME or -f FILE", id="neither-pod-nor-file"),
    pytest.param(["pod/x", "-f", str(PODS / "gpu-pod.yaml")], "give pod/NAME or -f FILE", id="both"),
    pytest.param(["deployment/x", "--cluster-state", "examples/cluster"], "want pod/NAME", id="not-a-pod"),
    pytest.param(["pod/missing", "--cluster-state", "examples/cluster"], "pod default/missing not found",
                 id="pod-not-in-the-state"),
    pytest.param(["-f", "examples/cluster/claims.yaml"], "nothing to explain", id="no-pod-in-the-file"),
    pytest.param(["-f", "nope.yaml"], "nope.yaml", id="file-missing"),
    pytest.param(["pod/x", "--kubeconfig", "/nonexistent/kubeconfig"], "kubeconfig /nonexistent/kubeconfig",
                 id="kubeconfig-missing"),
    pytest.param(["-f", str(PODS / "gpu-pod.yaml"), "--feature-gates", "NoSuchGate=true"], "NoSuchGate",
                 id="unknown-gate"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    one_line_exit_2(run("explain", *args), says)


def test_both_state_sources_are_a_usage_error() -> None:
    r = run("explain", "pod/x", "--kubeconfig", "k", "--cluster-state", "d")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr


def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    one_line_exit_2(run("explain", "pod/x", "--kubeconfig", str(kubeconfig)), "cannot reach the apiserver")


def test_a_bound_pod_of_a_cluster_state_is_one_line(tmp_path: Path) -> None:
    """A state keeps only what a bound pod uses of its node: explaining it again needs the cluster."""
    state = tmp_path / "state"
    shutil.copytree(ROOT / "examples" / "cluster", state)
    (state / "bound.yaml").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old", "namespace": "default"},
        "spec": {"nodeName": "worker-2", "containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}))
    one_line_exit_2(run("explain", "pod/old", "--cluster-state", str(state)), "bound to node worker-2",
                    "--kubeconfig")


def test_capacity_json_counts_per_node_and_pool(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "-f", str(PODS / "gpu-pod.yaml"), "--add-nodes", "worker-2=2", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] == 5 and doc["capped"] is False
    assert {n["node"]: n["fits"] for n in doc["nodes"]} == {"worker-1": 0, "worker-2": 1, "worker-2-copy-1": 2,
                                                             "worker-2-copy-2": 2}
    pools = {(p["driver"], p["pool"]): p for p in doc["pools"]}
    assert pools[("gpu.example.com", "worker-2-gpus")]["devices"] == {"total": 2, "allocated": 1}
    assert pools[("dra.example.com", "pool")]["counters"] == {
        "gpu-1-counters": {"memory": {"used": "0", "free": "8Gi", "total": "8Gi"}}}


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["--add-nodes", "worker-2"], "want NODE=K", id="add-without-count"),
    pytest.param(["--drain", "nope"], "node nope is not in the cluster state", id="drain-unknown"),
    pytest.param(["--max", "0"], "between 1 and", id="max-zero"),
])
def test_capacity_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    one_line_exit_2(run("capacity", "-f", str(PODS / "gpu-pod.yaml"), *args), says)


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["export", "-o", "out", "--kubeconfig", "/nonexistent/kubeconfig"], "kubeconfig /nonexistent",
                 id="kubeconfig-missing"),
])
def test_state_export_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    one_line_exit_2(run("state", *args), says)


GANG_GATES = "GenericWorkload=true,DRAWorkloadResourceClaims=true"


def test_a_gang_is_a_table_of_members_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-f", str(PODS / "gang.yaml"), "--feature-gates", GANG_GATES]) == 1
    out = capsys.readouterr().out.splitlines()
    table = out[out.index("PodGroup default/trainers:") + 1:]
    assert [line.split()[:2] for line in table] == [
        ["MEMBER", "VERDICT"], ["default/trainer-0", "waits"], ["default/trainer-1", "fits"],
        ["default/trainer-2", "not"]]
    assert table[1].endswith("PodGroup default/trainers needs 2 pods (gang minCount), only 1 fit: none of its "
                             "pods is bound")


def test_a_gang_is_a_list_of_members_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-f", str(PODS / "gang.yaml"), "--feature-gates", GANG_GATES, "-o", "json"]) == 1
    members = json.loads(capsys.readouterr().out)["members"]
    assert [(m["pod"], m["group"], m["verdict"], m["node"], (m["reason"] or {}).get("code")) for m in members] == [
        ("default/trainer-0", "default/trainers", "waits-for-gang", "worker-2", "note"),
        ("default/trainer-1", "default/trainers", "fits-nowhere", None, "pool-incomplete"),
        ("default/trainer-2", "default/trainers", "not-tried", None, "note")]
    assert members[1]["text"] == "worker-1: pool gpu.example.com/gpu-pool incomplete"


def _stderr(args: list[str], tty: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``dra-webhook ARGS`` with stderr on a pseudo-terminal or a pipe."""
    if not tty:
        r = subprocess.run([*BIN, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
        return r.returncode, r.stdout, r.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*BIN, *args], stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL,
                            cwd=ROOT)
    os.close(follower)
    got = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        got += chunk
    os.close(leader)
    out, _ = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), got.decode()


@pytest.mark.parametrize(("args", "tty", "shown"), [
    pytest.param(["explain", "-f", str(PODS / "gpu-deployment.yaml")], True, "explain: 1/3 pod trainer-0",
                 id="explain-on-a-terminal"),
    pytest.param(["capacity", "-f", str(PODS / "gpu-pod.yaml")], True, "capacity: 1/1000 pod gpu-pod-0",
                 id="capacity-on-a-terminal"),
    pytest.param(["explain", "-f", str(PODS / "gpu-deployment.yaml")], False, None, id="explain-on-a-pipe"),
    pytest.param(["capacity", "-f", str(PODS / "gpu-pod.yaml")], False, None, id="capacity-on-a-pipe"),
    pytest.param(["explain", "-f", str(PODS / "gpu-deployment.yaml"), "-o", "json"], True, None,
                 id="explain-json-on-a-terminal"),
    pytest.param(["capacity", "-f", str(PODS / "gpu-pod.yaml"), "-o", "json"], True, None,
                 id="capacity-json-on-a-terminal"),
])
def test_progress_goes_to_a_terminal_only(args: list[str], tty: bool, shown: str | None) -> None:
    code, out, err = _stderr(args, tty)
    assert code in (0, 1)
    if shown is None:
        assert err == ""
    else:
        assert f"\r{shown}" in err and err.endswith("\r\x1b[K")  # drawn, then erased
    assert "\r" not in out and (out.startswith("{") or "-o" not in args)
