"""--compare-gates on the seed examples: what changes when a gate flips."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
