"""A running server re-reads its --config file in every worker, and refuses a bad new one."""

from __future__ import annotations

import os
import time

import pytest
import requests

from tests.integration.conftest import start_server

pytestmark = pytest.mark.integration

WORKERS = 3


def _configz_by_pid(srv, rounds: int = 60) -> dict[int, dict]:
    """Ask until every worker answered (new connection each time, so the kernel spreads them)."""
    seen: dict[int, dict] = {}
    for _ in range(rounds):
        c = requests.get(srv.url + "/configz", verify=str(srv.certs / "ca.crt"), timeout=5,
                         headers={"Connection": "close"}).json()
        seen[c["pid"]] = c
        if len(seen) >= WORKERS:
            break
    return seen


def _write_atomically(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _wait_all(srv, pred, timeout=15.0) -> dict[int, dict]:
    deadline = time.monotonic() + timeout
    seen: dict[int, dict] = {}
    while time.monotonic() < deadline:
        seen = _configz_by_pid(srv)
        if len(seen) == WORKERS and all(pred(c) for c in seen.values()):
            return seen
        time.sleep(0.3)
    raise AssertionError(f"not every worker converged: {[(p, c['configHash']) for p, c in seen.items()]}")


def test_config_changes_reach_every_worker_and_bad_ones_are_refused(tmp_path, certs_dir, state_dir):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("featureGates:\n  DRADeviceCompatibilityGroups: false\n")
    srv = start_server(certs_dir, tmp_path, "--config", str(cfg), "--cluster-state", str(state_dir),
                       "--workers", str(WORKERS))
    try:
        first = _wait_all(srv, lambda c: c["featureGates"]["DRADeviceCompatibilityGroups"] is False)
        old_hash = next(iter(first.values()))["configHash"]

        _write_atomically(cfg, "featureGates:\n  DRADeviceCompatibilityGroups: true\nmaxWarnings: 7\n")
        seen = _wait_all(srv, lambda c: c["featureGates"]["DRADeviceCompatibilityGroups"] is True)
        new_hash = next(iter(seen.values()))["configHash"]
        assert new_hash != old_hash
        assert all(c["settings"]["max_warnings"] == 7 for c in seen.values())
        metrics = requests.get(srv.url + "/metrics", verify=str(srv.certs / "ca.crt"), timeout=5).text
        assert 'dra_webhook_feature_enabled{name="DRADeviceCompatibilityGroups"} 1.0' in metrics

        _write_atomically(cfg, "featureGates:\n  NoSuchGate: true\n")
        seen = _wait_all(srv, lambda c: c["configError"] is not None)
        assert all(c["configHash"] == new_hash for c in seen.values())
        assert all(c["featureGates"]["DRADeviceCompatibilityGroups"] is True for c in seen.values())
        assert "unrecognized feature gate: NoSuchGate" in next(iter(seen.values()))["configError"]
    finally:
        assert srv.stop() == 0
    log = srv.log.read_text()
    assert "config: reloaded" in log and "config: rejected new" in log
