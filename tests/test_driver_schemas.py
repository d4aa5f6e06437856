"""Driver config schemas (`webhook/driverschemas.py`): loading a set (a bad one is one clear
error), judging opaque parameters (denials with causes inside `parameters`, warnings for kinds
without a schema, ratcheting on UPDATE), and where users meet it: `review`/`test`
`--driver-schemas`, the config file's `driverSchemas` (live reload) and `/validate`."""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import review
from webhook import ConfigError
from webhook.admission.pipeline import review as run_review
from webhook.config import Settings, load_config_file
from webhook.driverschemas import check, load_driver_schemas
from webhook.fielderrors import ErrorType, FieldPath
from webhook.rules.kind import OpaqueParameters
from webhook.server.live_config import SettingsHolder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "driver-schemas")
GPU = "gpu.example.com"
AT = FieldPath.root("spec").child("devices", "config").index(0).child("opaque", "parameters")


def params(**extra: Any) -> dict[str, Any]:
    return {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig", **extra}


def write_schema(root: Path, rel: str, schema: Any) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(schema if isinstance(schema, str) else json.dumps(schema))
    return p


SCHEMA = {"type": "object", "properties": {"apiVersion": {"const": "v1"}, "kind": {"const": "K"}}}


# ---------------------------------------------------------------- loading


@pytest.mark.parametrize(("files", "words"), [
    pytest.param({"x.json": SCHEMA}, "a schema belongs in the directory of its driver", id="outside-a-driver-dir"),
    pytest.param({"d.example.com/x.json": "{nope"}, "not readable JSON/YAML", id="not-json"),
    pytest.param({"d.example.com/x.json": {**SCHEMA, "type": 5}}, "not a valid JSON Schema at type", id="bad-type"),
    pytest.param({"d.example.com/x.json": {**SCHEMA, "minimum": "one"}}, "not a valid JSON Schema at minimum",
                 id="bad-keyword-value"),
    pytest.param({"d.example.com/x.yaml": "- a list"}, "not a JSON Schema (a schema is an object)", id="not-an-object"),
    pytest.param({"d.example.com/x.json": {"type": "object"}}, "say which objects it is for: properties.apiVersion",
                 id="no-apiversion-const"),
    pytest.param({"d.example.com/a.json": SCHEMA, "d.example.com/b.yaml": yaml.safe_dump(SCHEMA)},
                 "a second schema for d.example.com/v1/K", id="two-for-one-kind"),
])
def test_a_bad_set_is_one_clear_error(tmp_path: Path, files: dict[str, Any], words: str) -> None:
    for rel, content in files.items():
        write_schema(tmp_path, rel, content)
    with pytest.raises(ConfigError) as info:
        load_driver_schemas(str(tmp_path))
    msg = str(info.value)
    assert words in msg and "\n" not in msg and msg.startswith("driver schemas: ")


def test_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_driver_schemas(str(tmp_path / "nope"))


def test_a_configmap_volumes_bookkeeping_is_skipped(tmp_path: Path) -> None:
    drv = tmp_path / "d.example.com"
    dated = drv / "..2026_01_01_00_00_00.1"
    write_schema(dated, "x.json", SCHEMA)
    (drv / "..data").symlink_to(dated.name)
    (drv / "x.json").symlink_to("..data/x.json")
    assert sorted(load_driver_schemas(str(tmp_path)).validators) == [("d.example.com", "v1", "K")]


def test_the_example_set_loads() -> None:
    s = load_driver_schemas(EXAMPLE)
    assert s.public()["schemas"] == ["gpu.example.com/gpu.example.com/v1/GpuConfig"] and len(s.digest) == 16


# ---------------------------------------------------------------- judging


SETS = load_driver_schemas(EXAMPLE)
SHARING = AT.child("sharing")


@pytest.mark.parametrize(("parameters", "want"), [
    pytest.param(params(sharing={"strategy": "TimeSlicing"}), [], id="valid"),
    pytest.param(params(), [], id="no-sharing"),
    pytest.param(params(sharing={"strategy": "Bogus"}),
                 [(str(SHARING.child("strategy")), ErrorType.NOT_SUPPORTED)], id="enum"),
    pytest.param(params(sharing={}), [(str(SHARING.child("strategy")), ErrorType.REQUIRED)], id="required"),
    pytest.param(params(sharing={"strategy": "SpacePartitioning", "spacePartitioningConfig": {"partitionCount": "2"}}),
                 [(str(SHARING.child("spacePartitioningConfig", "partitionCount")), ErrorType.TYPE_INVALID)],
                 id="type"),
    pytest.param(params(sharing={"strategy": "SpacePartitioning"}),
                 [(str(SHARING.child("spacePartitioningConfig")), ErrorType.REQUIRED)], id="conditional-required"),
    pytest.param(params(color="red"), [(str(AT), ErrorType.INVALID)], id="unknown-member"),
])
def test_parameters_are_judged_with_paths_inside_them(parameters: dict[str, Any],
                                                      want: list[tuple[str, ErrorType]]) -> None:
    errors, notes = check(SETS, [OpaqueParameters(AT, GPU, parameters)])
    assert [(e.field, e.type) for e in errors] == want and notes == []


def test_a_kind_without_a_schema_warns_and_other_drivers_are_not_checked() -> None:
    errors, notes = check(SETS, [OpaqueParameters(AT, GPU, {"apiVersion": "gpu.example.com/v2", "kind": "GpuConfig"}),
                                 OpaqueParameters(AT, "net.example.com", {"anything": True})])
    assert errors == []
    assert notes == [f"driver config: {AT}: gpu.example.com has no schema for apiVersion gpu.example.com/v2 kind "
                     "GpuConfig (it has gpu.example.com/v1/GpuConfig); not checked"]


def test_an_update_that_leaves_parameters_alone_is_not_judged_again() -> None:
    bad = OpaqueParameters(AT, GPU, params(sharing={"strategy": "Bogus"}))
    assert check(SETS, [bad], unchanged=[bad]) == ([], [])
    assert check(SETS, [bad], unchanged=[bad._replace(parameters=params())])[0] != []


# ---------------------------------------------------------------- where users meet it

CLAIM = yaml.safe_load((ROOT / "examples/claims/gpu-pair-same-model.yaml").read_text())
BAD_CLAIM = copy.deepcopy(CLAIM)
BAD_CLAIM["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] = "Bogus"
CAUSE = "spec.devices.config[0].opaque.parameters.sharing.strategy"


def _template(claim: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"}, "spec": {"spec": claim["spec"]}}


def _class(claim: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(claim["spec"]["devices"]["config"][0])
    del cfg["requests"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"config": [cfg]}}


@pytest.mark.parametrize(("obj", "cause"), [
    pytest.param(BAD_CLAIM, CAUSE, id="claim"),
    pytest.param(_template(BAD_CLAIM), "spec.spec.devices.config[0].opaque.parameters.sharing.strategy", id="template"),
    pytest.param(_class(BAD_CLAIM), "spec.config[0].opaque.parameters.sharing.strategy", id="class"),
])
def test_validate_denies_a_violation_in_claims_templates_and_classes(obj: dict[str, Any], cause: str) -> None:
    settings = Settings(feasibility=False, driver_schemas=SETS)
    resp, _ = run_review(review(obj), settings, endpoint="validate")
    r = resp["response"]
    assert r["allowed"] is False and r["status"]["code"] == 422
    assert [c["field"] for c in r["status"]["details"]["causes"]] == [cause]
    ok, _ = run_review(review(obj), Settings(feasibility=False), endpoint="validate")
    assert ok["response"]["allowed"] is True  # without schemas the apiserver's rules alone


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_review_takes_driver_schemas(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(BAD_CLAIM))
    r = run_cli("review", "--driver-schemas", EXAMPLE, "-f", str(bad), "--no-feasibility")
    assert r.returncode == 1 and f"{CAUSE}: Unsupported value: \"Bogus\"" in r.stdout
    assert run_cli("review", "-f", str(bad), "--no-feasibility").returncode == 0


def test_a_bad_schema_is_exit_2_with_one_line(tmp_path: Path) -> None:
    write_schema(tmp_path, "d.example.com/x.json", {**SCHEMA, "type": 5})
    for cmd in (["review", "-f", "examples/claims/gpu-pair-same-model.yaml"], ["test", "examples/driver-ci/"]):
        r = run_cli(*cmd, "--driver-schemas", str(tmp_path))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert "not a valid JSON Schema at type" in r.stderr


def test_test_suites_take_driver_schemas(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(BAD_CLAIM))
    (tmp_path / "s.dra-test.yaml").write_text(yaml.safe_dump({
        "apiVersion": "dra-webhook.io/v1alpha1", "kind": "TestSuite", "name": "s", "resources": ["bad.yaml"],
        "expect": [{"resource": "ResourceClaim/default/gpu-pair", "result": "denied", "causes": [CAUSE]}]}))
    assert run_cli("test", str(tmp_path), "--driver-schemas", EXAMPLE).returncode == 0
    assert run_cli("test", str(tmp_path)).returncode == 1


def test_the_config_file_names_the_set_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"driverSchemas: {EXAMPLE}\n")
    assert load_config_file(str(cfg), Settings()).driver_schemas is not None
    cfg.write_text(f"driverSchemas: {tmp_path / 'nope'}\n")
    with pytest.raises(ConfigError, match="not a directory"):
        load_config_file(str(cfg), Settings())


def test_a_changed_set_is_reloaded_live_and_a_broken_one_keeps_the_old(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    schemas = tmp_path / "schemas"
    f = write_schema(schemas, "d.example.com/x.json", SCHEMA)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"driverSchemas: {schemas}\n")
    holder = SettingsHolder(load_config_file(str(cfg), Settings()), config_path=str(cfg))
    assert holder.check() is False  # the set in force
    write_schema(schemas, "d.example.com/y.json", {**SCHEMA, "properties": {"apiVersion": {"const": "v2"},
                                                                           "kind": {"const": "K"}}})
    _touch_later(f)
    assert holder.check() is True
    assert holder.current.driver_schemas is not None and len(holder.current.driver_schemas.validators) == 2
    write_schema(schemas, "d.example.com/z.json", {**SCHEMA, "type": 5})
    with caplog.at_level(logging.ERROR):
        assert holder.check() is False
    assert len(holder.current.driver_schemas.validators) == 2 and "not a valid JSON Schema" in caplog.text


def _touch_later(path: Path) -> None:
    """A modification time the fingerprint sees as new (file systems with coarse clocks)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    time.sleep(0)


def test_the_server_applies_the_set_and_configz_names_it() -> None:
    from webhook.server.app import create_app
    from webhook.state.base import ClusterSnapshot, StaticState

    app = create_app(Settings(feasibility=False, driver_schemas=SETS), StaticState(ClusterSnapshot.from_objects([])))
    c = app.test_client()
    shown = c.get("/configz").get_json()["settings"]["driverSchemas"]
    assert shown == {"directory": EXAMPLE, "digest": SETS.digest,
                     "schemas": ["gpu.example.com/gpu.example.com/v1/GpuConfig"]}
    r = c.post("/validate", data=json.dumps(review(BAD_CLAIM)), headers={"Content-Type": "application/json"})
    assert [x["field"] for x in r.get_json()["response"]["status"]["details"]["causes"]] == [CAUSE]
