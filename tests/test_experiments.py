"""--compare-gates on the seed examples: what changes when a gate flips."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

BIN = [sys.executable, "-m", "webhook"]
SEED_GROUPS = "examples/seeds/seed-000-resourceslice-compatibility-groups.yaml"
EXP = "examples/experiments/compatibility-groups"


def run(*args):
    r = subprocess.run([*BIN, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_review_compare_shows_the_strip_only_with_the_gate_off():
    code, out, _ = run("review", "-f", SEED_GROUPS, "--compare-gates", "DRADeviceCompatibilityGroups",
                       "-o", "json", "--no-feasibility")
    data = json.loads(out)
    assert code == 0 and data["gates"] == ["DRADeviceCompatibilityGroups"]
    on, off = data["on"][1], data["off"][1]
    assert on["object"] == off["object"] == "ResourceSlice gpu-devices"
    assert on["patch"] == [] and on["allowed"] and off["allowed"]
    assert off["patch"] == ["remove /spec/devices/0/consumesCounters/0/compatibilityGroups",
                            "remove /spec/devices/1/consumesCounters/0/compatibilityGroups"]
    assert any("DRADeviceCompatibilityGroups is off" in w for w in off["warnings"])
    assert ("ResourceSlice gpu-devices: stripped/patched only with gates off: "
            "remove /spec/devices/0/consumesCounters/0/compatibilityGroups") in data["differences"]


@pytest.mark.parametrize(("claim", "feasible_on", "on_devices", "off_reason"), [
    pytest.param("claim-two-devices", True, ["gpu-0-mig", "gpu-0-mig-b"], "pool gpu.example.com/gpu-pool incomplete",
                 id="two-mig-fit-only-with-gate-on"),
    pytest.param("claim-mixed", False, [], "pool gpu.example.com/gpu-pool incomplete",
                 id="mixed-pair-never-fits"),
])
def test_simulate_compare_on_the_mig_vgpu_seed(claim, feasible_on, on_devices, off_reason):
    code, out, _ = run("simulate", "--cluster-state", f"{EXP}/state", "-f", f"{EXP}/{claim}.yaml",
                       "--compare-gates", "DRADeviceCompatibilityGroups", "-o", "json")
    data = json.loads(out)
    assert code == 1  # the gate-off side is never feasible
    assert data["on"]["feasible"] is feasible_on and data["off"]["feasible"] is False
    got = [r["device"] for a in data["on"]["allocations"] or [] for r in a["results"]]
    assert got == on_devices
    assert any(off_reason in r for r in data["off"]["reasons"])
    if not feasible_on:
        assert any("compatibility group intersection empty" in r for r in data["on"]["reasons"])


def test_compare_rejects_unknown_and_locked_gates():
    assert run("review", "-f", SEED_GROUPS, "--compare-gates", "Nope")[0] == 2
    code, _, err = run("review", "-f", SEED_GROUPS, "--compare-gates", "DRAPrioritizedList")
    assert code == 2 and "locked" in err


def test_text_output_is_side_by_side():
    _, out, _ = run("simulate", "--cluster-state", f"{EXP}/state", "-f", f"{EXP}/claim-two-devices.yaml",
                    "--compare-gates", "DRADeviceCompatibilityGroups")
    assert "ON" in out and "OFF" in out and "differences:" in out
    assert "feasible: True with gates on, False with gates off" in out


def _denied_copy(tmp_path):
    """The seed with the second slice's driver name made invalid: denied with the gate on and off,
    and the strip still differs."""
    text = Path(SEED_GROUPS).read_text()
    head, sep, tail = text.partition("name: gpu-devices")
    bad = tmp_path / "denied.yaml"
    bad.write_text(head + sep + tail.replace("driver: gpu.example.com", "driver: Not_A_Driver", 1))
    return str(bad)


@pytest.mark.parametrize("denied", [False, True], ids=["all-allowed", "one-object-denied-on-both-sides"])
def test_compare_yaml_is_the_json_document(tmp_path, denied):
    path = _denied_copy(tmp_path) if denied else SEED_GROUPS
    args = ("review", "-f", path, "--compare-gates", "DRADeviceCompatibilityGroups", "--no-feasibility")
    code_json, out_json, _ = run(*args, "-o", "json")
    code_yaml, out_yaml, _ = run(*args, "-o", "yaml")
    assert yaml.safe_load(out_yaml) == json.loads(out_json)
    assert code_yaml == code_json == (1 if denied else 0)


@pytest.mark.parametrize(("denied", "failures"), [
    pytest.param(False, 0, id="all-allowed-no-case-fails"),
    pytest.param(True, 3, id="denied-object-fails-each-of-its-differences"),
])
def test_compare_junit_has_one_testcase_per_difference(tmp_path, denied, failures):
    path = _denied_copy(tmp_path) if denied else SEED_GROUPS
    args = ("review", "-f", path, "--compare-gates", "DRADeviceCompatibilityGroups", "--no-feasibility")
    differences = json.loads(run(*args, "-o", "json")[1])["differences"]
    code, out, _ = run(*args, "-o", "junit")
    cases = ET.fromstring(out).findall(".//testcase")
    assert [f"{c.get('classname')}: {c.get('name')}" for c in cases] == differences
    assert sum(1 for c in cases if c.find("failure") is not None) == failures
    assert code == (1 if failures else 0)


def test_compare_junit_fails_an_object_denied_alike_on_both_sides(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: Bad_Name}\nspec: {}\n")
    code, out, _ = run("review", "-f", str(bad), "--compare-gates", "DRADeviceCompatibilityGroups", "-o", "junit")
    (case,) = ET.fromstring(out).findall(".//testcase")
    assert code == 1 and case.get("name") == "verdict the same"
    assert case.find("failure").get("message") == "denied with gates on and off"
