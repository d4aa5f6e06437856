"""What a pod requests of its node (``webhook/workloads/resources.py``), as upstream's PodRequests."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.workloads import pod_requests
from webhook.workloads.resources import show

GI = 1 << 30


def c(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
      **kw: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "image": "x", "resources": res, **kw}


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": containers, **spec}
    if init is not None:
        s["initContainers"] = init
    return {"kind": "Pod", "spec": s}


SIDECAR = {"restartPolicy": "Always"}


@pytest.mark.parametrize(("p", "want"), [
    pytest.param(pod([c()]), {}, id="nothing-requested"),
    pytest.param(pod([c({"cpu": "500m", "memory": "1Gi"}), c({"cpu": "1"})]), {"cpu": 1500, "memory": GI},
                 id="containers-add-up"),
    pytest.param(pod([c(limits={"cpu": "2"})]), {"cpu": 2000}, id="requests-defaulted-from-limits"),
    pytest.param(pod([c({"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})]), {"cpu": 1000, "memory": GI},
                 id="limits-fill-only-missing-requests"),
    pytest.param(pod([c({"cpu": "1"})], [c({"cpu": "3"}), c({"cpu": "2"})]), {"cpu": 3000},
                 id="init-containers-are-a-floor"),
    pytest.param(pod([c({"cpu": "4"})], [c({"cpu": "3"})]), {"cpu": 4000}, id="init-floor-below-the-sum"),
    pytest.param(pod([c({"cpu": "1"})], [c({"cpu": "1"}, **SIDECAR), c({"cpu": "3"})]), {"cpu": 4000},
                 id="sidecar-adds-to-containers-and-later-init-containers"),
    pytest.param(pod([c({"cpu": "1", "memory": "1Gi"})], resources={"requests": {"cpu": "3"}}),
                 {"cpu": 3000, "memory": GI}, id="pod-level-requests-replace-cpu"),
    pytest.param(pod([c({"example.com/x": "1"})], resources={"requests": {"example.com/x": "5"}}),
                 {"example.com/x": 1}, id="pod-level-ignores-other-resources"),
    pytest.param(pod([c({"cpu": "1"})], overhead={"cpu": "250m"}), {"cpu": 1250}, id="overhead-added"),
    pytest.param(pod([c({"cpu": "oops", "memory": "1Gi"})]), {"memory": GI}, id="unparsable-left-out"),
    pytest.param({"kind": "Pod", "spec": None}, {}, id="no-spec"),
])
def test_pod_requests(p: dict[str, Any], want: dict[str, int]) -> None:
    assert pod_requests(p) == want


@pytest.mark.parametrize(("name", "value", "text"), [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 8 * GI, "8Gi"), ("memory", 1000, "1000"),
    ("pods", 110, "110"),
])
def test_amounts_are_shown_as_quantities(name: str, value: int, text: str) -> None:
    assert show(name, value) == text
