"""Pool and standard-attribute findings where users meet them: `review` (a pool given across many
files is one pool; warnings, failures with --strict; every output format), `test` suites
(`poolFindings`) and the server's `/validate` (the pool as the live state plus the slice shows it)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import SLICE, review
from webhook.admission.pipeline import review as run_review
from webhook.config import Settings
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot, StaticState

BROKEN = "examples/driver-ci/broken-pool/"


def run(*args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True, timeout=120,
                          input=input_text)


def slice_of(name: str, *devices: str, count: int = 2, pool: str = "pool") -> dict[str, Any]:
    s = copy.deepcopy(SLICE)
    s["metadata"]["name"] = name
    s["spec"]["pool"] = {"name": pool, "generation": 1, "resourceSliceCount": count}
    s["spec"]["devices"] = [{"name": d} for d in devices]
    return s


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


# ---------------------------------------------------------------- review


def test_a_pool_given_across_many_files_is_one_pool(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", slice_of("a", "gpu-0"))
    b = write(tmp_path / "b.yaml", slice_of("b", "gpu-0"))
    alone = run("review", "-f", a, "--strict")
    assert alone.returncode == 1 and "1 slice(s) at its newest generation" in alone.stdout
    both = run("review", "-f", a, "-f", b, "--strict")
    assert both.returncode == 1
    assert "slice(s) at its newest generation" not in both.stdout
    assert both.stdout.count("device gpu-0 is defined twice (a spec.devices[0].name, b spec.devices[0].name)") == 2


def test_findings_warn_and_fail_only_with_strict() -> None:
    loose, strict = run("review", "-f", BROKEN), run("review", "-f", BROKEN, "--strict")
    assert loose.returncode == 0 and "ALLOWED, 5 findings\n" in loose.stdout
    assert strict.returncode == 1 and "ALLOWED, 5 findings (FAILED, --strict)" in strict.stdout


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_carry_the_findings_as_warnings(output: str) -> None:
    r = run("review", "-f", BROKEN, "-o", output, "--strict")
    doc = json.loads(r.stdout) if output == "json" else yaml.safe_load(r.stdout)
    first = doc["items"][0]["response"]
    assert r.returncode == 1 and first["allowed"] is True
    assert [w.split(":")[0] for w in first["warnings"]] == ["attribute", "attribute", "pool", "pool", "pool"]
    assert any("gpu-node-a-0 spec.devices[1].consumesCounters[0].counterSet" in w for w in first["warnings"])


def test_junit_fails_a_slice_with_findings_under_strict() -> None:
    root = ET.fromstring(run("review", "-f", BROKEN, "-o", "junit", "--strict").stdout)
    cases = root.findall(".//testcase")
    assert [c.find("failure").get("message") for c in cases] == ["5 finding(s) (--strict)", "2 finding(s) (--strict)"]
    assert "attribute: spec.devices[0].attributes[resource.kubernetes.io/numaNode]" in (cases[0].find("failure").text
                                                                                          or "")


def test_a_named_cluster_state_is_part_of_the_pool_and_the_default_one_is_not(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    write(state / "other.yaml", slice_of("b", "gpu-0"))
    mine = write(tmp_path / "a.yaml", slice_of("a", "gpu-1"))
    with_state = run("review", "-f", mine, "--cluster-state", str(state), "--strict")
    assert with_state.returncode == 0, with_state.stdout
    default = run("review", "-f", mine, "--strict")
    assert default.returncode == 1 and "1 slice(s) at its newest generation" in default.stdout


def test_an_update_is_one_slice_of_a_live_pool(tmp_path: Path) -> None:
    new, old = slice_of("a", "gpu-0", count=3), slice_of("a", "gpu-1", count=3)
    r = run("review", "-f", write(tmp_path / "new.yaml", new), "--old-file", write(tmp_path / "old.yaml", old),
            "--strict")
    assert r.returncode == 0, r.stdout


def _pcie_list(name: str) -> dict[str, Any]:
    """A slice whose device sets the standard pcieRoot attribute as a list (its format is one string)."""
    obj = slice_of(name, "gpu-0", count=1)
    obj["spec"]["devices"][0]["attributes"] = {"resource.kubernetes.io/pcieRoot": {"strings": ["pci0000:00"]}}
    return obj


AS_WEBHOOK = [
    pytest.param([slice_of("a", "gpu-0", count=3)], [], id="first-slice-of-a-publish"),
    pytest.param([slice_of("a", "gpu-0"), slice_of("b", "gpu-0")], [], id="two-slices-each-judged-alone"),
    pytest.param([slice_of("b", "gpu-0")], [slice_of("a", "gpu-0")], id="duplicate-with-the-state"),
    pytest.param([_pcie_list("a")], [], id="standard-attribute-worded-for-the-server"),
]


@pytest.mark.parametrize(("objs", "state"), AS_WEBHOOK)
def test_review_as_webhook_warns_exactly_as_validate_does(objs: list[dict[str, Any]], state: list[dict[str, Any]],
                                                          tmp_path: Path) -> None:
    """`review --as-webhook` judges each slice alone against the cluster state, worded for the
    server: the warnings `/validate` sends for each (what kubectl would print)."""
    (tmp_path / "state").mkdir()
    for i, obj in enumerate(state):
        write(tmp_path / "state" / f"{i}.yaml", obj)
    args = ["--cluster-state", str(tmp_path / "state")] if state else []
    r = run("review", "-f", write(tmp_path / "objs.yaml", *objs), "--as-webhook", "--no-feasibility", *args,
            "--feature-gates", LIST_ATTRIBUTES, "-o", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = [item["response"].get("warnings", []) for item in (doc["items"] if doc["kind"] == "List" else [doc])]
    assert got == [validate(obj, state, gates=LIST_ATTRIBUTES) for obj in objs]


def test_a_list_value_of_a_one_string_standard_attribute_is_named_a_list() -> None:
    (got,) = validate(_pcie_list("a"), [], gates=LIST_ATTRIBUTES)
    assert "a list of strings, not a string" in got
    whole = run("review", "-f", "-", "--no-feasibility", "--feature-gates", LIST_ATTRIBUTES,
                input_text=yaml.safe_dump(_pcie_list("a")))
    assert 'a list of strings, not a string; want a string "pci<domain>:<bus>"' in whole.stdout


# ---------------------------------------------------------------- test suites


def test_a_suite_expects_findings_and_fails_on_one_it_does_not_expect(tmp_path: Path) -> None:
    write(tmp_path / "pool.yaml", slice_of("a", "gpu-0"), slice_of("b", "gpu-0"))
    suite = {"apiVersion": "dra-webhook.io/v1alpha1", "kind": "TestSuite", "name": "s", "resources": ["pool.yaml"],
             "expect": [{"resource": "ResourceSlice/a", "poolFindings": ["device gpu-0 is defined twice"]},
                        {"resource": "ResourceSlice/b", "poolFindings": ["device gpu-9"]}]}
    (tmp_path / "s.dra-test.yaml").write_text(yaml.safe_dump(suite))
    r = run("test", str(tmp_path))
    assert r.returncode == 1
    assert "ResourceSlice/a" not in r.stdout  # met
    assert "no pool finding contains 'device gpu-9'" in r.stdout
    assert "a finding the suite does not expect: pool: gpu.example.com/pool: device gpu-0 is defined twice" in r.stdout


# ---------------------------------------------------------------- the server


LIST_ATTRIBUTES = "DRAListTypeAttributes=true"


def validate(obj: dict[str, Any], state: list[dict[str, Any]], op: str = "CREATE", gates: str = "") -> list[str]:
    settings = Settings(feasibility=False, gates=FeatureGates.parse(gates))
    resp, _ = run_review(review(obj, op=op, old=copy.deepcopy(obj) if op == "UPDATE" else None),
                         settings, StaticState(ClusterSnapshot.from_objects(state)), endpoint="validate")
    assert resp["response"]["allowed"] is True
    return list(resp["response"].get("warnings", []))


@pytest.mark.parametrize(("obj", "state", "want"), [
    pytest.param(slice_of("a", "gpu-0", count=3), [], [], id="first-slice-of-a-publish"),
    pytest.param(slice_of("b", "gpu-0"), [slice_of("a", "gpu-0")],
                 ["pool: gpu.example.com/pool: device gpu-0 is defined twice (a, b)"], id="duplicate-with-the-state"),
    pytest.param(slice_of("a", "gpu-0", count=1), [slice_of("a", "gpu-0", count=1), slice_of("b", "gpu-1", count=1)],
                 ["pool: gpu.example.com/pool: 2 slice(s) at its newest generation but "
                  "spec.pool.resourceSliceCount is 1 (a, b)"], id="more-slices-than-the-count"),
    pytest.param(slice_of("c", "gpu-2", pool="other"), [slice_of("a", "gpu-0"), slice_of("b", "gpu-0")], [],
                 id="other-pools-problems-are-not-this-slices"),
])
def test_validate_warns_about_the_pool_the_slice_joins(obj: dict[str, Any], state: list[dict[str, Any]],
                                                        want: list[str]) -> None:
    got = validate(obj, state)
    assert got == want
    assert all(len(w) <= 120 for w in got)


def test_validate_words_standard_attributes_within_the_warning_limit() -> None:
    obj = slice_of("a", "gpu-0", count=1)
    obj["spec"]["devices"][0]["attributes"] = {"resource.kubernetes.io/numaNode": {"int": -1}}
    (got,) = validate(obj, [])
    assert got.startswith("attribute: spec.devices[0].attributes[resource.kubernetes.io/numaNode]: -1 is not")
    assert len(got) <= 120
