"""The chart mounts drivers' config schemas from ConfigMaps (values `driverSchemas.configMaps`),
rendered with the real Helm engine; the rendered config file and mounts are what the server
loads (checked against a copy of the mounted layout)."""

from __future__ import annotations

import shutil
from pathlib import Path

import helm_python
import pytest
import yaml

from tests.chart.helpers import REPO, Rendered, render
from webhook.config import Settings, parse_config

MOUNT = "/etc/dra-webhook/driver-schemas"
SCHEMAS = {"gpu.example.com": "gpu-config-schemas", "net.example.com": "net-config-schemas"}


def _pod(r: Rendered) -> dict:
    return r.one("Deployment")["spec"]["template"]["spec"]


def test_no_schemas_by_default(default: Rendered) -> None:
    assert "driverSchemas" not in yaml.safe_load(default.one("ConfigMap")["data"]["config.yaml"])
    assert not [v for v in _pod(default)["volumes"] if v["name"].startswith("driver-schemas")]


def test_each_drivers_configmap_is_mounted_in_its_directory() -> None:
    r = render({"driverSchemas": {"configMaps": SCHEMAS}})
    assert yaml.safe_load(r.one("ConfigMap")["data"]["config.yaml"])["driverSchemas"] == MOUNT
    volumes = {v["name"]: v for v in _pod(r)["volumes"]}
    mounts = {m["name"]: m for m in r.container()["volumeMounts"]}
    got = {mounts[n]["mountPath"]: volumes[n]["configMap"]["name"] for n in volumes if n.startswith("driver-schemas")}
    assert got == {f"{MOUNT}/{d}": cm for d, cm in SCHEMAS.items()}
    assert all(mounts[n].get("readOnly") and "subPath" not in mounts[n] for n in mounts if n.startswith("driver"))


def test_the_server_loads_the_rendered_layout(tmp_path: Path) -> None:
    r = render({"driverSchemas": {"configMaps": {"gpu.example.com": "gpu-config-schemas"}}})
    # The kubelet's layout of a ConfigMap volume: the keys are links into a dated directory.
    drv = tmp_path / "gpu.example.com"
    dated = drv / "..2026_01_01_00_00_00.000000001"
    dated.mkdir(parents=True)
    shutil.copy(REPO / "examples/driver-schemas/gpu.example.com/GpuConfig.json", dated / "GpuConfig.json")
    (drv / "..data").symlink_to(dated.name)
    (drv / "GpuConfig.json").symlink_to("..data/GpuConfig.json")
    text = r.one("ConfigMap")["data"]["config.yaml"].replace(MOUNT, str(tmp_path))
    s = parse_config(text, Settings())
    assert s.driver_schemas is not None
    assert s.driver_schemas.public()["schemas"] == ["gpu.example.com/gpu.example.com/v1/GpuConfig"]


@pytest.mark.parametrize(("configmaps", "named"), [
    pytest.param({"Bad_Driver": "x"}, "Bad_Driver", id="driver-not-a-dns-name"),
    pytest.param({"gpu.example.com": ""}, "driverSchemas/configMaps/gpu.example.com", id="empty-configmap-name"),
])
def test_the_values_schema_refuses_bad_driver_schemas(configmaps: dict[str, str], named: str) -> None:
    with pytest.raises(helm_python.HelmValuesError, match=named):
        render({"driverSchemas": {"configMaps": configmaps}})
