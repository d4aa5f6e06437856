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


def test_a_reloaded_staleness_bound_and_watch_timeout_reach_every_worker_live_state(tmp_path, certs_dir):
    """The live state follows the config file too: the new bound at once, the new watch timeout
    from each kind's next WATCH (seen by the apiserver, here a fake one)."""
    from tests.state.fakeapi import FakeApiServer

    fake = FakeApiServer().start()
    kubeconfig = fake.kubeconfig(tmp_path / "fake.kubeconfig")
    cfg = tmp_path / "config.yaml"
    cfg.write_text("stateWatchTimeoutSeconds: 20\nstateStaleAfterSeconds: 40\n")
    srv = start_server(certs_dir, tmp_path, "--config", str(cfg), "--kubeconfig", str(kubeconfig),
                       "--workers", str(WORKERS))
    try:
        _wait_all(srv, lambda c: (c["state"]["stale_after_seconds"], c["state"]["watch_timeout_seconds"]) == (40, 20))
        _write_atomically(cfg, "stateWatchTimeoutSeconds: 2\nstateStaleAfterSeconds: 3\n")
        _wait_all(srv, lambda c: (c["state"]["stale_after_seconds"], c["state"]["watch_timeout_seconds"]) == (3, 2))
        deadline = time.monotonic() + 60
        while not any(q.get("timeoutSeconds") == "2" for m, _, q in list(fake.requests) if m == "watch"):
            assert time.monotonic() < deadline, "no WATCH with the new timeout"
            time.sleep(0.2)
    finally:
        assert srv.stop() == 0
        fake.stop()
