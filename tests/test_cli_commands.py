"""The CLI for driver CI, beyond review (issue 17, items 3, 6-10): test suites, kubectl-dra,
one-line errors for bad input, the package's own example state, doc promises kept, progress
and shell completion."""

from __future__ import annotations

import contextlib
import copy
import os
import pty
import re
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import SLICE
from webhook.admission.response import sanitize_warnings

ROOT = Path(__file__).resolve().parents[1]
BIN = [sys.executable, "-m", "webhook"]
VENV_BIN = Path(sys.executable).parent


def run(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BIN, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(doc) if isinstance(doc, list) else yaml.safe_dump(doc))
    return path


def suite(tmp: Path, resources: list[str], expect: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    doc = {"apiVersion": "dra-webhook.io/v1alpha1", "kind": "TestSuite", "name": "t", "resources": resources,
           **({"expect": expect} if expect is not None else {}), **extra}
    return write(tmp / "my.dra-test.yaml", doc)


def one_line_exit_2(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert all(w in lines[0] for w in words), lines[0]


# ---------------------------------------------------------------- 3: test suites

def test_the_example_suites_pass_and_report_junit() -> None:
    r = run("test", "examples/driver-ci/", "-o", "junit")
    assert r.returncode == 0, r.stdout
    root = ET.fromstring(r.stdout)
    names = [s.get("name") for s in root.findall("testsuite")]
    assert sorted(names) == ["broken-pool", "seed-slices", "seed-slices-groups-on", "v1beta1-slices"]
    assert root.get("failures") == "0" and int(root.get("tests") or 0) >= 8


def test_an_unmet_expectation_fails_with_what_was_expected(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", SLICE)
    r = run("test", str(suite(tmp_path, ["s.yaml"], [
        {"resource": f"ResourceSlice/{SLICE['metadata']['name']}", "result": "denied",
         "causes": ["spec.driver"], "warnings": ["nope"], "stripped": ["/spec/devices/0/taints"]}])))
    assert r.returncode == 1
    for text in ("expected denied, got allowed", "no cause at spec.driver", "no warning contains 'nope'",
                 "/spec/devices/0/taints is not removed by /mutate"):
        assert text in r.stdout


def test_a_resource_without_expectation_must_be_allowed(tmp_path: Path) -> None:
    bad = copy.deepcopy(SLICE)
    bad["spec"]["driver"] = ""
    write(tmp_path / "dir" / "bad.yaml", bad)
    r = run("test", str(suite(tmp_path, ["dir/"])), "-o", "json")
    assert r.returncode == 1
    doc = yaml.safe_load(r.stdout)
    assert doc["passed"] is False and "expected allowed, got denied" in doc["suites"][0]["cases"][0]["failures"][0]


def test_an_expectation_for_a_missing_resource_fails(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", SLICE)
    r = run("test", str(suite(tmp_path, ["s.yaml"], [{"resource": "ResourceSlice/elsewhere"}])))
    assert r.returncode == 1 and "ResourceSlice/elsewhere" in r.stdout and "no such resource" in r.stdout


def test_feature_gates_of_a_suite_apply(tmp_path: Path) -> None:
    seed = ROOT / "examples/seeds/seed-000-resourceslice-compatibility-groups.yaml"
    shutil.copy(seed, tmp_path / "seed.yaml")
    stripped = {"resource": "ResourceSlice/gpu-devices",
                "stripped": ["/spec/devices/0/consumesCounters/0/compatibilityGroups"]}
    assert run("test", str(suite(tmp_path, ["seed.yaml"], [stripped]))).returncode == 0
    on = suite(tmp_path, ["seed.yaml"], [stripped], featureGates={"DRADeviceCompatibilityGroups": True})
    assert run("test", str(on)).returncode == 1


@pytest.mark.parametrize(("extra", "says"), [
    pytest.param({"resourcez": ["x"]}, "unknown key 'resourcez'", id="unknown-key"),
    pytest.param({"expect": [{"resource": "ResourceSlice/x", "reslt": "denied"}]}, "unknown key 'reslt'",
                 id="unknown-expect-key"),
    pytest.param({"expect": [{"resource": "ResourceSlice/x", "result": "maybe"}]}, "result must be",
                 id="bad-result"),
    pytest.param({"featureGates": {"Bogus": True}}, "unrecognized feature gate", id="unknown-gate"),
])
def test_a_bad_suite_is_exit_2_with_one_line(tmp_path: Path, extra: dict[str, Any], says: str) -> None:
    write(tmp_path / "s.yaml", SLICE)
    doc = {"apiVersion": "dra-webhook.io/v1alpha1", "kind": "TestSuite", "name": "t", "resources": ["s.yaml"],
           **extra}
    one_line_exit_2(run("test", str(write(tmp_path / "x.dra-test.yaml", doc))), says)


# ---------------------------------------------------------------- 6: kubectl plugin

def test_kubectl_dra_is_installed_and_is_the_same_cli(tmp_path: Path) -> None:
    plugin = VENV_BIN / "kubectl-dra"
    assert plugin.is_file(), "pip install did not create the kubectl-dra console script"
    r = subprocess.run([str(plugin), "review", "-f", str(write(tmp_path / "s.yaml", SLICE)), "--no-feasibility"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ResourceSlice" in r.stdout and "ALLOWED" in r.stdout
    h = subprocess.run([str(plugin), "--help"], capture_output=True, text=True, timeout=60)
    assert h.stdout.startswith("usage: kubectl dra ")


def test_kubectl_finds_the_plugin(tmp_path: Path) -> None:
    from tests.rig.cluster import ensure_binaries

    kubectl = ensure_binaries() / "kubectl"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run([str(kubectl), "dra", "review", "-f", str(write(tmp_path / "s.yaml", SLICE)),
                        "--no-feasibility"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert "ALLOWED" in r.stdout


# ---------------------------------------------------------------- 7: bad input, one line, exit 2

@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    for d in (a, b):
        assert run("certs", "--service", "s", "--namespace", "n", "--out", str(d), "--dev").returncode == 0
    return a, b


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["--days", "0"], "--days", id="days-zero"),
    pytest.param(["--days", "-5"], "--days", id="days-negative"),
    pytest.param(["--service", "Bad_Name"], "--service 'Bad_Name' is not a DNS label", id="service-not-label"),
])
def test_certs_bad_flags(tmp_path: Path, args: list[str], says: str) -> None:
    base = {"--service": "svc", "--namespace": "ns", "--out": str(tmp_path / "out")}
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v
    one_line_exit_2(run("certs", *[x for kv in base.items() for x in kv]), says)
    assert not (tmp_path / "out" / "tls.key").exists()


def test_certs_unwritable_out(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    one_line_exit_2(run("certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path / "file" / "sub")),
                    "--out", "cannot write there")


def _serve(pair: tuple[Path, Path], *args: str, cert: Path | None = None, key: Path | None = None,
           bind: str = "127.0.0.1:0") -> subprocess.CompletedProcess[str]:
    a, _ = pair
    return run("serve", "--tls-cert", str(cert or a / "tls.crt"), "--tls-key", str(key or a / "tls.key"),
               "--bind", bind, *args, timeout=30)


def test_serve_missing_kubeconfig(pair: tuple[Path, Path]) -> None:
    one_line_exit_2(_serve(pair, "--kubeconfig", "/nonexistent/kubeconfig"), "--kubeconfig", "no such file")


def test_serve_key_of_another_certificate_names_both_files(pair: tuple[Path, Path]) -> None:
    a, b = pair
    one_line_exit_2(_serve(pair, cert=a / "tls.crt", key=b / "tls.key"), str(a / "tls.crt"), str(b / "tls.key"))


@pytest.mark.parametrize("bind", ["nonsense", "127.0.0.1:99999", ":8443", "host:port"])
def test_serve_bad_bind(pair: tuple[Path, Path], bind: str) -> None:
    one_line_exit_2(_serve(pair, bind=bind), "--bind", "HOST:PORT")


def test_serve_port_in_use_says_so_at_once(pair: tuple[Path, Path]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        one_line_exit_2(_serve(pair, bind=f"127.0.0.1:{port}"), f"--bind 127.0.0.1:{port}", "in use")


def test_simulate_unknown_node() -> None:
    one_line_exit_2(run("simulate", "-f", "examples/feasibility/one-6gi.yaml", "--node", "worker-9"),
                    "--node worker-9", "worker-1")


def test_an_empty_state_directory_is_warned_about(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    r = run("simulate", "--cluster-state", str(tmp_path / "state"), "-f", "examples/feasibility/one-6gi.yaml")
    assert r.returncode == 1 and "warning: cluster state" in r.stderr and "holds no" in r.stderr


# ---------------------------------------------------------------- 8: the example state is package data

@pytest.mark.slow
def test_an_installed_package_brings_its_example_state(tmp_path: Path) -> None:
    wheel_dir, site = tmp_path / "wheel", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheel_dir), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = wheel_dir.glob("dra_webhook-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    claim = write(tmp_path / "claim.yaml", yaml.safe_load((ROOT / "examples/feasibility/one-6gi.yaml").read_text()))
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = "from webhook.state.default import default_state_dir as d; print(d())"
    where = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                           check=True)
    assert where.stdout.strip().startswith(str(site))
    r = run("simulate", "-f", str(claim), "--node", "worker-1", cwd=tmp_path, env=env)
    assert r.returncode == 0 and "feasible: yes, on node worker-1" in r.stdout


# ---------------------------------------------------------------- 9: what the docs promise

def test_documented_alerts_use_metrics_and_label_values_the_code_has() -> None:
    text = (ROOT / "docs/operations.md").read_text()
    alerts = yaml.safe_load(re.search(r"## Alerts \(PromQL\)\n\n```yaml\n(.*?)```", text, re.S).group(1))
    metrics_src = (ROOT / "webhook/server/metrics.py").read_text()
    defined = set(re.findall(r'"(dra_webhook_[a-z_]+)"', metrics_src))
    results = set(re.findall(r'_count\("(\w+)"\)', (ROOT / "webhook/server/live_config.py").read_text()))
    assert results == {"applied", "rejected"}
    for rule in alerts["groups"][0]["rules"]:
        for name in re.findall(r"(dra_webhook_[a-z_]+)", rule["expr"]):
            base = re.sub(r"_(total|bucket|sum|count)$", "", name)
            assert name in defined or base in defined or f"{base}_total" in defined, (rule["alert"], name)
        for value in re.findall(r'result!?="(\w+)"', rule["expr"]):
            assert value in results, (rule["alert"], value)


def test_examples_refer_only_to_claims_and_templates_that_exist() -> None:
    objs = [o for f in sorted((ROOT / "examples").rglob("*.yaml")) for o in yaml.safe_load_all(f.read_text())
            if isinstance(o, dict)]
    have = {(o.get("kind"), (o.get("metadata") or {}).get("name")) for o in objs}
    text = "\n".join(f.read_text() for f in sorted((ROOT / "examples/scheduling").glob("*.yaml")))
    for kind, field in (("ResourceClaimTemplate", "resourceClaimTemplateName"), ("ResourceClaim", "resourceClaimName")):
        for name in re.findall(rf"{field}: ([\w.-]+)", text):
            assert (kind, name) in have, f"{field} {name} exists nowhere in examples/"


def test_compare_gates_on_a_podgroup_shows_the_strip() -> None:
    r = run("simulate", "-f", "examples/scheduling/podgroup-training-worker-0.yaml",
            "-f", "examples/claims/resourceclaimtemplate-shared-gpu.yaml", "--compare-gates",
            "DRAWorkloadResourceClaims", "--feature-gates", "GenericWorkload=true")  # its dependency
    assert "differences: none" not in r.stdout
    assert "feasible: True with gates on, False with gates off" in r.stdout


def test_max_warnings_one_keeps_the_first_warning() -> None:
    got = sanitize_warnings(["first", "second", "third", "fourth"], max_count=1)
    assert got == ["first (and 3 more warnings suppressed)"]
    long = sanitize_warnings(["x" * 200, "y"], max_count=1, max_length=120)
    assert len(long[0]) <= 120 and long[0].endswith("(and 1 more warnings suppressed)")


# ---------------------------------------------------------------- 10: progress and completion

def _stderr_on_a_tty(*args: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    p = subprocess.Popen([*BIN, *args], stdout=subprocess.DEVNULL, stderr=slave, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def test_review_of_many_files_shows_progress_on_a_terminal_only() -> None:
    code, tty = _stderr_on_a_tty("review", "-f", "examples/seeds/", "--no-feasibility")
    # exit 1: the seed's PodGroup uses the v1alpha2 spelling the apiserver refuses to decode
    assert code == 1 and "review: 12/12 " in tty.replace("\x1b[K", "")
    piped = run("review", "-f", "examples/seeds/", "--no-feasibility")
    assert piped.returncode == 1 and piped.stderr == ""


def test_test_shows_progress_on_a_terminal() -> None:
    code, tty = _stderr_on_a_tty("test", "examples/driver-ci/")
    assert code == 0 and "test: 1/4" in tty


@pytest.mark.parametrize(("words", "want"), [
    pytest.param(["re"], "review", id="command"),
    pytest.param(["review", "-o", ""], "text json yaml junit", id="choices"),
    pytest.param(["review", "--st"], "--strict", id="flag"),
    pytest.param(["certs", "--"], "--days", id="certs-flags"),
])
def test_bash_completion_is_generated_from_the_parser(words: list[str], want: str) -> None:
    script = run("completion", "bash").stdout
    line = " ".join(f"'{w}'" for w in ["dra-webhook", *words])
    r = subprocess.run(["bash", "-c", f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _dra_webhook; '
                        'echo "${COMPREPLY[@]}"'], capture_output=True, text=True, timeout=30)
    assert all(w in r.stdout.split() for w in want.split()), r.stdout


def test_zsh_completion_uses_the_same_definitions() -> None:
    r = run("completion", "zsh")
    assert r.returncode == 0 and r.stdout.startswith("#compdef dra-webhook kubectl-dra")
    assert "_dra_webhook()" in r.stdout


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
@pytest.mark.parametrize("fails", [False, True], ids=["returns", "raises"])
def test_simulate_pauses_the_collector_and_restores_it(enabled: bool, fails: bool) -> None:
    import gc

    from webhook.cli.common import collector_paused
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.raises(RuntimeError) if fails else contextlib.nullcontext():
            with collector_paused():
                assert not gc.isenabled()
                if fails:
                    raise RuntimeError("boom")
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()


@pytest.mark.parametrize("extra", [[], ["--compare-gates", "DRAConsumableCapacity"]], ids=["simulate", "compare-gates"])
def test_simulate_allocates_with_the_collector_paused(extra: list[str], monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import gc

    from webhook.cli import main, simulate
    seen: list[bool] = []
    inner = simulate.simulate_objects

    def watched(*a: Any, **kw: Any) -> Any:
        seen.append(gc.isenabled())
        return inner(*a, **kw)

    monkeypatch.setattr(simulate, "simulate_objects", watched)
    was = gc.isenabled()
    assert main(["simulate", "-f", "examples/feasibility/one-6gi.yaml", *extra]) in (0, 1)
    assert seen and not any(seen)
    assert gc.isenabled() == was
    assert "feasible" in capsys.readouterr().out
