"""The command line as a user runs it: exit codes, output formats, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.builders import PODGROUP, SLICE

BIN = [sys.executable, "-m", "webhook"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BIN, *args], capture_output=True, text=True, input=stdin, timeout=60)


def write(tmp: Path, name: str, data) -> Path:
    p = tmp / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump_all(data if isinstance(data, list) else [data]))
    return p


@pytest.mark.parametrize(("content", "reason"), [
    pytest.param("a: [unclosed", "not valid YAML or JSON", id="not-yaml"),
    pytest.param("- just\n- a list\n", "not a Kubernetes object", id="not-an-object"),
    pytest.param("kind: Thing\n", "apiVersion and kind are required", id="no-apiversion"),
    pytest.param("", "no Kubernetes object found", id="empty"),
])
def test_bad_files_exit_2_with_one_line(tmp_path, content, reason):
    r = run("review", "-f", str(write(tmp_path, "x.yaml", content)))
    assert r.returncode == 2
    assert reason in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_missing_file_exits_2(tmp_path):
    r = run("review", "-f", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.parametrize("args", [
    pytest.param(["--feature-gates", "Bogus=true"], id="unknown-gate"),
    pytest.param(["--feature-gates", "GenericWorkload=maybe"], id="bad-value"),
])
def test_bad_gates_exit_2(tmp_path, args):
    r = run("review", "-f", str(write(tmp_path, "s.yaml", SLICE)), *args)
    assert r.returncode == 2 and "feature gate" in r.stderr or "invalid value" in r.stderr


def test_review_json_is_a_full_admission_review(tmp_path):
    r = run("review", "-f", str(write(tmp_path, "s.yaml", SLICE)), "-o", "json", "--no-feasibility")
    out = json.loads(r.stdout)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] and isinstance(out["response"]["allowed"], bool)
    assert r.returncode == (0 if out["response"]["allowed"] else 1)


def test_review_of_several_documents_prints_a_list(tmp_path):
    r = run("review", "-f", str(write(tmp_path, "m.yaml", [SLICE, PODGROUP])), "-o", "json", "--no-feasibility")
    out = json.loads(r.stdout)
    assert out["kind"] == "List" and len(out["items"]) == 2


def test_review_reads_stdin():
    r = run("review", "-f", "-", "-o", "json", "--no-feasibility", stdin=json.dumps(SLICE))
    assert json.loads(r.stdout)["response"]["uid"]


def test_update_needs_old_file(tmp_path):
    r = run("review", "-f", str(write(tmp_path, "s.yaml", SLICE)), "--operation", "UPDATE")
    assert r.returncode == 2 and "--old-file" in r.stderr


def test_unserved_version_passes_with_a_note(tmp_path):
    old = {**SLICE, "apiVersion": "resource.k8s.io/v1alpha3"}
    r = run("review", "-f", str(write(tmp_path, "s.yaml", old)), "--no-feasibility")
    assert r.returncode == 0 and "is not checked" in r.stdout


def test_an_older_served_version_is_converted_judged_and_reported_in_its_own_shape(tmp_path):
    device = {"name": "d", "basic": {"taints": [{"key": "k", "effect": "Bogus"}]}}
    bad = {**SLICE, "apiVersion": "resource.k8s.io/v1beta1", "spec": {**SLICE["spec"], "devices": [device]}}
    r = run("review", "-f", str(write(tmp_path, "s.yaml", bad)), "--no-feasibility", "--strict")
    assert r.returncode == 1, r.stdout
    assert "(resource.k8s.io/v1beta1, CREATE): DENIED" in r.stdout
    assert "spec.devices[0].basic.taints[0].effect: Unsupported value: \"Bogus\"" in r.stdout
    assert "resource.k8s.io/v1beta1 ResourceSlice is deprecated in v1.35+, unavailable in v1.38+" in r.stdout


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_show_the_converted_object_too(tmp_path, output):
    device = {"name": "d", "basic": {"attributes": {"model": {"string": "a100"}}}}
    old = {**SLICE, "apiVersion": "resource.k8s.io/v1beta1", "spec": {**SLICE["spec"], "devices": [device]}}
    r = run("review", "-f", str(write(tmp_path, "s.yaml", old)), "--no-feasibility", "-o", output)
    doc = json.loads(r.stdout) if output == "json" else yaml.safe_load(r.stdout)
    assert r.returncode == 0 and doc["request"]["object"]["spec"]["devices"] == [device]
    assert doc["converted"]["apiVersion"] == "resource.k8s.io/v1"
    assert doc["converted"]["spec"]["devices"] == [{"name": "d", "attributes": {"model": {"string": "a100"}}}]
    plain = run("review", "-f", str(write(tmp_path, "v1.yaml", SLICE)), "--no-feasibility", "-o", output)
    assert "converted" not in (json.loads(plain.stdout) if output == "json" else yaml.safe_load(plain.stdout))


def test_certs_writes_a_verifiable_pair(tmp_path):
    from cryptography import x509
    r = run("certs", "--service", "svc", "--namespace", "ns", "--out", str(tmp_path), "--dev")
    assert r.returncode == 0
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    leaf.verify_directly_issued_by(ca)
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local", "localhost"]
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    import base64
    assert base64.b64decode(r.stdout.strip()) == (tmp_path / "ca.crt").read_bytes()
    # a second run keeps the CA (the caBundle stays valid) and issues a new leaf
    r2 = run("certs", "--service", "svc", "--namespace", "ns", "--out", str(tmp_path))
    assert r2.stdout == r.stdout
    assert x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes()).serial_number != leaf.serial_number


def test_gates_lists_every_gate_with_defaults():
    r = run("gates", "-o", "json", "--feature-gates", "DRADeviceCompatibilityGroups=true")
    rows = {g["name"]: g for g in json.loads(r.stdout)["featureGates"]}
    assert rows["DRADeviceCompatibilityGroups"]["default"] is False
    assert rows["DRADeviceCompatibilityGroups"]["enabled"] is True
    assert rows["GenericWorkload"]["stage"] == "Beta" and rows["GenericWorkload"]["enabled"] is False
    text = run("gates").stdout
    assert "DRAPartitionableDevices" in text and "EFFECT" in text


def test_serve_with_missing_cert_exits_2(tmp_path):
    r = run("serve", "--tls-cert", str(tmp_path / "no.crt"), "--tls-key", str(tmp_path / "no.key"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_environment_sets_gates_and_flags_win():
    import os
    env = {**os.environ, "DRA_WEBHOOK_FEATURE_GATES": "GenericWorkload=true,DRAConsumableCapacity=false"}
    r = subprocess.run([*BIN, "gates", "-o", "json", "--feature-gates", "DRAConsumableCapacity=true"],
                       capture_output=True, text=True, env=env, timeout=60)
    rows = {g["name"]: g["enabled"] for g in json.loads(r.stdout)["featureGates"]}
    assert rows["GenericWorkload"] is True and rows["DRAConsumableCapacity"] is True
