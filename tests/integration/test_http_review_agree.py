"""The real HTTPS server and `dra-webhook review -o json` give the same verdicts and causes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml

from tests.builders import PODGROUP, SLICE
from webhook.admission import decode
from webhook.admission.offline import build_review, with_defaults

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _bad(base, path, value):
    o = copy.deepcopy(base)
    node = o
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return o


CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}

OBJECTS = [
    pytest.param(SLICE, id="valid-slice"),
    pytest.param(_bad(SLICE, ["spec", "devices"], [{"name": "a"}, {"name": "a"}, {"name": "B_"}]),
                 id="slice-duplicate-and-bad-names"),
    pytest.param(_bad(SLICE, ["spec", "driver"], ""), id="slice-empty-driver"),
    pytest.param(_bad(SLICE, ["spec", "allNodes"], True), id="slice-two-node-selections"),
    pytest.param(CLAIM, id="valid-claim"),
    pytest.param(_bad(CLAIM, ["spec", "devices", "requests", 0, "exactly", "count"], -1), id="claim-negative-count"),
    pytest.param(_bad(CLAIM, ["spec", "devices", "requests", 0, "exactly", "selectors"],
                      [{"cel": {"expression": "device.driver =="}}]), id="claim-bad-cel"),
    pytest.param(PODGROUP, id="valid-podgroup"),
    pytest.param(_bad(PODGROUP, ["spec", "schedulingPolicy"], {"basic": {}, "gang": {"minCount": 2}}),
                 id="podgroup-both-policies"),
] + [pytest.param(doc, id=f"{p.stem}-{i}") for p in sorted((ROOT / "examples" / "seeds").glob("*.yaml"))
     for i, doc in enumerate(d for d in yaml.safe_load_all(p.read_text()) if d)]


def _verdict(resp):
    r = resp["response"]
    causes = sorted((c["field"], c["reason"], c["message"]) for c in r.get("status", {}).get("details", {})
                    .get("causes", []))
    # Pool findings differ by design: review judges its files as a driver's whole publish, the
    # server one slice in a live pool (`poollint`, complete); tests/test_pool_findings.py has both.
    warnings = sorted(w for w in r.get("warnings", []) if not w.startswith(("feasibility:", "pool:")))
    return r["allowed"], causes, warnings


@pytest.mark.parametrize("obj", OBJECTS)
def test_server_and_cli_agree(server, state_dir, tmp_path, obj):
    f = tmp_path / "obj.json"
    f.write_text(json.dumps(obj))
    cli = subprocess.run([sys.executable, "-m", "webhook", "review", "-f", str(f), "-o", "json",
                          "--cluster-state", str(state_dir)], capture_output=True, text=True, timeout=60)
    assert cli.returncode in (0, 1), cli.stderr
    cli_resp = json.loads(cli.stdout)
    if (bad := decode.check(obj)) is not None:
        # The apiserver refuses it before any webhook is called (HTTP 400): review says the same,
        # and no server ever gets it to judge.
        assert cli_resp["response"]["status"] == {"metadata": {}, "status": "Failure", "message": bad.message,
                                                  "reason": "BadRequest", "code": 400}
        assert cli.returncode == 1
        return
    body = build_review(with_defaults(obj), None, "CREATE", False)
    http = requests.post(server.url + "/validate", json=body, verify=str(server.certs / "ca.crt"), timeout=10)
    assert http.status_code == 200
    assert _verdict(http.json()) == _verdict(cli_resp)
    assert cli.returncode == (0 if cli_resp["response"]["allowed"] else 1)
