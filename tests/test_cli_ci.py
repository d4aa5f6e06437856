"""``review`` as DRA driver CI uses it: many files, no false passes, strict mode, YAML and JUnit,
and warnings that name what matters (issue 17, items 1, 2, 4 and 5)."""

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

from tests.builders import SLICE

ROOT = Path(__file__).resolve().parents[1]
BIN = [sys.executable, "-m", "webhook"]


def run(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BIN, *args], capture_output=True, text=True, input=stdin, timeout=120, cwd=cwd)


def slice_named(name: str, **spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(SLICE)
    obj["metadata"]["name"] = name
    obj["spec"].update(spec)
    return obj


BAD = slice_named("bad-slice", driver="")  # driver is required


def write(path: Path, *objs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(objs)))
    return path


# ---------------------------------------------------------------- 1: every path, every object

def test_every_file_is_reviewed_and_one_denial_fails_the_run(tmp_path: Path) -> None:
    bad, good = write(tmp_path / "bad.yaml", BAD), write(tmp_path / "good.yaml", slice_named("good"))
    r = run("review", "-f", str(bad), "-f", str(good), "--no-feasibility")
    assert r.returncode == 1, r.stdout
    assert "ResourceSlice bad-slice" in r.stdout and "DENIED" in r.stdout
    assert "ResourceSlice good" in r.stdout


def test_a_shell_glob_after_one_flag_reviews_every_file(tmp_path: Path) -> None:
    files = [str(write(tmp_path / f"s{i}.yaml", slice_named(f"s{i}"))) for i in range(3)]
    r = run("review", "-f", *files, "--no-feasibility")
    assert r.returncode == 0, r.stderr
    assert [line.split()[1] for line in r.stdout.splitlines() if line.startswith("ResourceSlice")] == \
        ["s0", "s1", "s2"]


def test_a_directory_is_read_recursively(tmp_path: Path) -> None:
    write(tmp_path / "a" / "one.yaml", slice_named("one"))
    write(tmp_path / "a" / "b" / "two.yml", slice_named("two"))
    (tmp_path / "a" / "b" / "three.json").write_text(json.dumps(BAD))
    (tmp_path / "a" / "README.md").write_text("not yaml: [")
    r = run("review", "-f", str(tmp_path / "a"), "--no-feasibility")
    assert r.returncode == 1
    names = sorted(line.split()[1] for line in r.stdout.splitlines() if line.startswith("ResourceSlice"))
    assert names == ["bad-slice", "one", "two"]


def test_stdin_and_files_mix(tmp_path: Path) -> None:
    r = run("review", "-f", "-", "-f", str(write(tmp_path / "x.yaml", slice_named("x"))), "--no-feasibility",
            stdin=yaml.safe_dump(slice_named("from-stdin")))
    assert r.returncode == 0 and "from-stdin" in r.stdout and "ResourceSlice x " in r.stdout


def test_json_carries_request_and_response(tmp_path: Path) -> None:
    r = run("review", "-f", str(write(tmp_path / "s.yaml", slice_named("s"))), "-o", "json", "--no-feasibility")
    doc = json.loads(r.stdout)
    assert doc["kind"] == "AdmissionReview"
    assert doc["request"]["object"]["metadata"]["name"] == "s"
    assert doc["request"]["uid"] == doc["response"]["uid"] and doc["response"]["allowed"] is True


def test_json_of_several_objects_is_a_list_of_reviews(tmp_path: Path) -> None:
    r = run("review", "-f", str(write(tmp_path / "s.yaml", slice_named("a"), BAD)), "-o", "json",
            "--no-feasibility")
    doc = json.loads(r.stdout)
    assert doc["kind"] == "List" and [i["response"]["allowed"] for i in doc["items"]] == [True, False]
    assert r.returncode == 1


# ---------------------------------------------------------------- 2: strict mode and hints

TYPO = {**slice_named("typo"), "kind": "ResourceSlise"}
UNSERVED = {**slice_named("old"), "apiVersion": "resource.k8s.io/v1alpha3"}


@pytest.mark.parametrize(("obj", "says"), [
    pytest.param(TYPO, "kind ResourceSlise (resource.k8s.io/v1) is not one dra-webhook checks; "
                       "did you mean ResourceSlice?", id="misspelt-kind"),
    pytest.param(UNSERVED, "ResourceSlice resource.k8s.io/v1alpha3 is not a version dra-webhook checks "
                           "(it validates resource.k8s.io/v1, v1beta2 and v1beta1)", id="unserved-version"),
])
def test_strict_fails_what_was_not_checked_and_plain_mode_notes_it(tmp_path: Path, obj: dict[str, Any],
                                                                    says: str) -> None:
    f = str(write(tmp_path / "x.yaml", obj))
    plain = run("review", "-f", f, "--no-feasibility")
    strict = run("review", "-f", f, "--no-feasibility", "--strict")
    assert plain.returncode == 0 and f"note: {says}" in plain.stdout
    assert strict.returncode == 1 and f"error: {says}" in strict.stdout and "NOT CHECKED" in strict.stdout


def test_a_document_that_is_no_kubernetes_object_is_a_note_or_a_strict_failure(tmp_path: Path) -> None:
    f = tmp_path / "mixed.yaml"
    f.write_text(yaml.safe_dump(slice_named("ok")) + "---\n- just\n- a list\n")
    plain = run("review", "-f", str(f), "--no-feasibility")
    strict = run("review", "-f", str(f), "--no-feasibility", "--strict")
    assert plain.returncode == 0 and "document 2: not a Kubernetes object" in plain.stdout
    assert strict.returncode == 1 and "FAILED (--strict)" in strict.stdout


def test_a_file_without_any_kubernetes_object_is_still_bad_input(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("- just\n- a list\n")
    r = run("review", "-f", str(f))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- 4: yaml and junit

def test_yaml_output_is_the_same_review_as_json(tmp_path: Path) -> None:
    f = str(write(tmp_path / "s.yaml", slice_named("s")))
    as_json = json.loads(run("review", "-f", f, "-o", "json", "--no-feasibility").stdout)
    as_yaml = yaml.safe_load(run("review", "-f", f, "-o", "yaml", "--no-feasibility").stdout)
    for doc in (as_json, as_yaml):
        doc["request"].pop("uid"), doc["response"].pop("uid")
    assert as_yaml == as_json


def test_junit_has_one_testcase_per_object_and_failures_carry_the_causes(tmp_path: Path) -> None:
    f = str(write(tmp_path / "s.yaml", slice_named("good"), BAD))
    r = run("review", "-f", f, "-o", "junit", "--no-feasibility")
    assert r.returncode == 1
    suite = ET.fromstring(r.stdout).find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"ResourceSlice good", "ResourceSlice bad-slice"}
    failure = cases["ResourceSlice bad-slice"].find("failure")
    assert failure is not None and "spec.driver" in (failure.text or "")
    assert cases["ResourceSlice good"].find("failure") is None


# ---------------------------------------------------------------- 5: warnings worth reading

def test_cli_prints_warnings_whole(tmp_path: Path) -> None:
    r = run("review", "-f", str(write(tmp_path / "s.yaml", UNSERVED)), "--no-feasibility")
    note = [w for w in r.stdout.splitlines() if "is not checked" in w]
    assert note and note[0].endswith("(the versions Kubernetes 1.37 can serve)") and len(note[0].strip()) > 120


def server_feasibility(obj: dict[str, Any]) -> list[str]:
    """The feasibility warnings `/validate` sends for ``obj`` against the example state."""
    from webhook.admission.offline import build_review, with_defaults
    from webhook.admission.pipeline import review as pipeline_review
    from webhook.config import Settings
    from webhook.state.default import load_state

    resp, _ = pipeline_review(build_review(with_defaults(obj), None, "CREATE", False), Settings(),
                              load_state(None, None, False), endpoint="validate")
    return [w for w in resp["response"].get("warnings", []) if w.startswith("feasibility:")]


def shown_feasibility(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.strip()[2:] for line in r.stdout.splitlines() if line.strip().startswith("- feasibility:")]


def test_feasibility_warnings_name_claim_request_and_class_and_only_selectable_devices() -> None:
    r = run("review", "-f", "examples/feasibility/two-6gi.yaml")
    warns = shown_feasibility(r)
    assert warns[0] == ("feasibility: no node can allocate claim two-6gi: request req-0 (class resource.example.com): "
                        "counter memory of gpu-1-counters: 2Gi of 8Gi free, the request needs 6Gi on worker-1")
    assert not any("gpu-0" in w or "gpu-pool" in w for w in warns)  # another driver's devices and pool
    served = server_feasibility(yaml.safe_load((ROOT / "examples/feasibility/two-6gi.yaml").read_text()))
    assert served[0] == ("feasibility: claim two-6gi request req-0 (class resource.example.com): counter memory "
                         "of gpu-1-counters exhausted")
    assert all(len(w) <= 120 for w in served)


def test_the_selector_that_selects_nothing_is_named(tmp_path: Path) -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "picky", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                 "deviceClassName": "gpu.example.com",
                 "selectors": [{"cel": {"expression": "true"}},
                               {"cel": {"expression": "device.attributes['gpu.example.com'].model == 'none'"}}]}}]}}}
    r = run("simulate", "-f", str(write(tmp_path / "c.yaml", claim)), "-o", "json")
    assert any("request selector #1 false" in reason for reason in json.loads(r.stdout)["reasons"])


def test_long_names_fit_on_the_server_with_the_key_facts_and_review_prints_them_whole(tmp_path: Path) -> None:
    claim = yaml.safe_load((ROOT / "examples/feasibility/two-6gi.yaml").read_text())
    claim["metadata"]["name"] = "x" * 200
    claim["spec"]["devices"]["requests"][0]["name"] = "the-request"
    served = server_feasibility(claim)
    assert served and all(len(w) <= 120 for w in served)
    assert served[0].endswith("/the-request (resource.example.com): counter memory of gpu-1-counters exhausted")
    assert "claim xxx" in served[0]
    shown = shown_feasibility(run("review", "-f", str(write(tmp_path / "c.yaml", claim))))
    assert f"claim {'x' * 200}: request the-request" in shown[0]


def test_review_prints_a_long_device_class_name_whole_and_the_server_fits_it(tmp_path: Path) -> None:
    cls = "a-device-class-that-nobody-ever-created.example.com"
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "a-claim-with-a-rather-long-name-indeed", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}}
    shown = shown_feasibility(run("review", "-f", str(write(tmp_path / "c.yaml", claim))))
    assert shown == [f"feasibility: no node can allocate claim a-claim-with-a-rather-long-name-indeed: request gpu: "
                     f'could not retrieve device class {cls}: deviceclass.resource.k8s.io "{cls}" not found']
    served = server_feasibility(claim)
    assert served and all(len(w) <= 120 for w in served)
    assert "claim a-claim-with-a-rather-long-name-indeed/gpu: could not retrieve device" in served[0]
    assert served[0].endswith("not found")


def test_the_per_pod_warning_fits() -> None:
    from webhook.allocator.allocation import Allocation
    from webhook.allocator.feasibility import _per_pod_warning
    from webhook.allocator.reasons import Code, Reason

    out = Allocation()
    out.reasons = [Reason(Code.COUNTER_EXHAUSTED, claim="default/training-worker-0-gpus", request="gpu",
                          node="worker-1", device_class="gpu.example.com", counter="memory",
                          counter_set="gpu-0-counters")]
    w = _per_pod_warning("training-worker-0", out)
    assert len(w) <= 120 and w.startswith("feasibility: PodGroup training-worker-0 fits only jointly, not pod by pod")
    assert "counter memory of gpu" in w and "exhausted" in w
