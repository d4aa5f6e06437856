"""Issue 27's done criterion for a driver's publish check: `review --strict` fails each problem the
issue lists (the parts built here: the pool, standard attributes, `null` list items, the earlier
PodGroup spelling, driver config parameters) with a finding or a cause that names the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.cli import main

EX = Path(__file__).resolve().parents[1] / "examples"
POOL = ["-f", str(EX / "driver-ci/broken-pool")]


@pytest.mark.parametrize(("args", "field"), [
    pytest.param(POOL, "spec.pool.resourceSliceCount is 3", id="fewer-slices"),
    pytest.param(POOL, "gpu-node-a-1 spec.devices[0].name", id="duplicate-device"),
    pytest.param(POOL, "gpu-node-a-0 spec.devices[1].consumesCounters[0].counterSet",
                 id="counter-set-nowhere"),
    pytest.param(POOL,
                 "spec.devices[0].attributes[resource.kubernetes.io/numaNode]: -1", id="numa-minus-one"),
    pytest.param(POOL,
                 'spec.devices[0].attributes[resource.kubernetes.io/pcieRoot]: "not-a-pcie-root"', id="pcie-root"),
    pytest.param(["-f", str(EX / "driver-ci/broken/null-device.yaml")], "spec.devices[1].name: Invalid value",
                 id="null-device"),
    pytest.param(["-f", str(EX / "seeds")], 'unknown field "spec.podGroupTemplateRef"', id="podgroup-spelling"),
    pytest.param(["-f", str(EX / "claims/gpu-sharing-bogus.yaml"), "--driver-schemas", str(EX / "driver-schemas")],
                 "spec.devices.config[0].opaque.parameters.sharing.strategy", id="driver-config"),
])
def test_strict_review_fails_the_problem_and_names_the_field(capsys: pytest.CaptureFixture[str], args: list[str],
                                                             field: str) -> None:
    code = main(["review", *args, "--strict", "--no-feasibility"])
    out = capsys.readouterr().out
    assert code == 1
    assert field in out
