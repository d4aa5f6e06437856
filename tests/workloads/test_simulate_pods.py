"""``dra-webhook simulate`` of Pods and workloads: the DESIGN.md JSON shape (``pods``, ``placed``,
``replicas``), the text, exit codes, lookups in the input files first, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.workloads.builders import claim, deployment, pod, req, template
from tests.workloads.test_place import GPUS, ONE_GPU
from webhook.cli import main
from webhook.cli.simulate import run_simulate
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

SNAP = ClusterSnapshot.from_objects(GPUS)


def simulate(*objs: dict[str, Any], output: str = "json", snap: ClusterSnapshot = SNAP) -> tuple[int, Any]:
    code, text = run_simulate([json.loads(json.dumps(o)) for o in objs], snap, FeatureGates(), None, output=output)
    return code, json.loads(text) if output == "json" else text


def test_a_workload_says_how_many_replicas_fit_and_where() -> None:
    code, doc = simulate(deployment("web", 5, claims=ONE_GPU))
    assert code == 1
    assert list(doc) == ["feasible", "node", "allocations", "reasons", "pods", "placed", "replicas", "stats"]
    assert (doc["feasible"], doc["node"], doc["placed"], doc["replicas"]) == (False, "n1", 3, 5)
    assert doc["pods"] == [{"pod": "default/web-0", "node": "n1", "claims": ["default/web-0-gpu"]},
                           {"pod": "default/web-1", "node": "n1", "claims": ["default/web-1-gpu"]},
                           {"pod": "default/web-2", "node": "n2", "claims": ["default/web-2-gpu"]},
                           {"pod": "default/web-3", "node": None, "claims": ["default/web-3-gpu"]}]
    assert [a["claim"] for a in doc["allocations"]] == ["default/web-0-gpu", "default/web-1-gpu", "default/web-2-gpu"]
    assert doc["reasons"][0] == "pod default/web-3: 0/2 nodes are available: 2 cannot allocate all claims"
    assert isinstance(doc["stats"]["allocateSeconds"], float)


def test_every_replica_placed_exits_0() -> None:
    code, doc = simulate(deployment("web", 3, claims=ONE_GPU))
    assert (code, doc["feasible"], doc["placed"], doc["reasons"]) == (0, True, 3, [])


def test_a_pod_has_pods_but_no_replica_counts() -> None:
    code, doc = simulate(pod("p", claims=ONE_GPU))
    assert code == 0
    assert list(doc) == ["feasible", "node", "allocations", "reasons", "pods", "stats"]
    assert doc["pods"] == [{"pod": "default/p", "node": "n1", "claims": ["default/p-gpu"]}]


def test_text_names_the_count_each_pod_and_the_reasons() -> None:
    code, text = simulate(deployment("web", 4, claims=ONE_GPU), output="text")
    assert code == 1
    lines = text.splitlines()
    assert lines[0].startswith("feasible: no (3 of 4 replicas can be placed now; the 4th: 0/2 nodes are "
                               "available: 2 cannot allocate all claims; ")
    assert lines[1:4] == ["pod default/web-0 -> n1", "  claim default/web-0-gpu: req-0 -> driver.example.com/p1/g0",
                          "pod default/web-1 -> n1"]
    assert "pod default/web-3: not placed" in lines
    assert "  - claim default/web-3-gpu request req-0: device g0 already in use" in lines


def test_claims_and_templates_come_from_the_input_files_first() -> None:
    mine = template("one", req(count=2))  # two devices per pod: only n1 has them
    code, doc = simulate(deployment("web", 2, claims=ONE_GPU), mine)
    assert (code, doc["placed"]) == (1, 1)
    code, doc = simulate(pod("p", claims={"gpu": ("claim", "mine")}), claim("mine", req()))
    assert (code, doc["pods"][0]["claims"]) == (0, ["default/mine"])


def test_a_missing_template_is_an_infeasible_answer_naming_it() -> None:
    code, doc = simulate(pod("p", claims={"gpu": ("template", "nope")}))
    assert code == 1
    assert doc["reasons"] == ["pod default/p: template default/nope not found"]


def test_a_missing_device_class_is_an_infeasible_answer_naming_it() -> None:
    code, doc = simulate(pod("p", claims={"gpu": ("template", "other")}), template("other", req(cls="missing")))
    assert code == 1
    assert any("missing" in r for r in doc["reasons"]), doc["reasons"]


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


BAD = [
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}},
                 "Deployment default/d: no pod template (spec.template.spec)", id="workload-without-a-pod-template"),
    pytest.param({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                  "spec": {"replicas": "many", "template": {"spec": {"containers": []}}}},
                 "StatefulSet default/s: spec.replicas must be a non-negative integer, got 'many'",
                 id="replicas-not-a-count"),
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
                 "unsupported kind 'Service'", id="a-kind-without-pods"),
]


@pytest.mark.parametrize(("doc", "says"), BAD)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any],
                                          says: str) -> None:
    code, out, err = cli(capsys, "-f", write(tmp_path / "x.yaml", doc))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and says in err, err


def test_a_template_that_contains_itself_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "loop.yaml"
    f.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: loop}\nspec:\n  template: &t\n"
                 "    spec:\n      containers: [{name: c, image: x}]\n      again: *t\n")
    for command in ("simulate", "review"):
        code = main([command, "-f", str(f)])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "")
        assert err == f"dra-webhook {command}: {f}: document 1 contains itself (a YAML alias inside its own anchor)\n"


def test_replicas_in_the_millions_stop_at_the_first_that_does_not_fit(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The example nodes take 110 pods each: 220 placed, then every node has too many."""
    d = deployment("many", 5_000_000, cpu="10m")
    code, out, _ = cli(capsys, "-f", write(tmp_path / "d.yaml", d), "-o", "json")
    doc = json.loads(out)
    assert (code, doc["placed"], doc["replicas"], len(doc["pods"])) == (1, 220, 5_000_000, 221)
    assert doc["reasons"][0] == "pod default/many-220: 0/2 nodes are available: 2 Too many pods"


def test_a_pod_naming_a_node_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = pod("pinned", nodeName="nowhere")
    code, out, _ = cli(capsys, "-f", write(tmp_path / "p.yaml", p), "-o", "json")
    doc = json.loads(out)
    assert (code, doc["feasible"], doc["pods"]) == (1, False, [{"pod": "default/pinned", "node": None, "claims": []}])
    assert doc["reasons"][0] == "pod default/pinned: node nowhere (spec.nodeName) is not in the cluster state"


def suite(tmp_path: Path, fits: int, resource: str = "Deployment/default/trainer") -> str:
    examples = Path(__file__).resolve().parents[2] / "examples"
    doc = {"apiVersion": "dra-webhook.io/v1alpha1", "kind": "TestSuite", "name": "pods",
           "clusterState": str(examples / "cluster"),
           "resources": [str(examples / "pods" / "gpu-deployment.yaml"), str(examples / "pods" / "gpu-pod.yaml")],
           "expect": [{"resource": resource, "fits": fits}]}
    (tmp_path / "pods.dra-test.yaml").write_text(yaml.safe_dump(doc))
    return str(tmp_path)


def test_a_test_suite_can_expect_how_many_replicas_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", suite(tmp_path, 1)]) == 0
    capsys.readouterr()
    assert main(["test", suite(tmp_path, 3), "-o", "json"]) == 1
    out = capsys.readouterr().out
    assert "expected 3 replica(s) placed, got 1 of 3: 0/2 nodes are available: 2 cannot allocate all claims" in out


def test_fits_of_a_claim_is_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", suite(tmp_path, 1, resource="Pod/default/gpu-pod")]) == 0
    capsys.readouterr()
    doc = yaml.safe_load((Path(suite(tmp_path, 1)) / "pods.dra-test.yaml").read_text())
    doc["resources"].append(str(Path(__file__).resolve().parents[2] / "examples" / "feasibility" / "one-6gi.yaml"))
    doc["expect"] = [{"resource": "ResourceClaim/default/one-6gi", "fits": 1}]
    (tmp_path / "pods.dra-test.yaml").write_text(yaml.safe_dump(doc))
    assert main(["test", str(tmp_path), "-o", "json"]) == 1
    assert "fits applies to Pods and workloads only" in capsys.readouterr().out
