"""Worker restarts: SIGHUP under load, and workers born later agreeing with the running ones.

Before: SIGHUP (the README's way to re-read the config) deleted the Prometheus multiprocess
directory (every worker leaving ``run()`` removed it), so every review and /metrics answered
HTTP 500 until restart; and a respawned worker ignored the config the others had applied.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.builders import SLICE, review
from tests.integration.test_live_config import _configz_by_pid, _write_atomically
from tests.reliability.conftest import start_server

pytestmark = pytest.mark.integration

HUPS = 10


def _workers(srv: Any) -> set[int]:
    with open(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children") as f:
        return {int(x) for x in f.read().split()}


def test_ten_sighups_under_load_fail_nothing(tmp_path, rel_certs):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("maxWarnings: 9\n")
    srv = start_server(rel_certs, tmp_path, "--config", str(cfg), "--shutdown-delay", "1")
    ca = str(srv.certs / "ca.crt")
    failures: list[str] = []
    done = threading.Event()
    answered = [0]

    def client(i: int) -> None:
        session = requests.Session() if i % 2 == 0 else None  # keep-alive, or a connection each
        body = json.dumps(review(SLICE)).encode()
        while not done.is_set():
            try:
                c = session or requests
                r = c.post(srv.url + "/validate", data=body, verify=ca, timeout=10,
                           headers={"Content-Type": "application/json"})
                m = c.get(srv.url + "/metrics", verify=ca, timeout=10)
                if r.status_code != 200 or m.status_code != 200:
                    failures.append(f"validate {r.status_code}, metrics {m.status_code}")
                answered[0] += 1
            except requests.RequestException as e:
                failures.append(repr(e)[:200])

    not_ready: list[int] = []

    def readiness() -> None:  # a reload is not a shutdown: the pod stays ready throughout
        while not done.is_set():
            try:
                code = requests.get(srv.url + "/readyz", verify=ca, timeout=10).status_code
            except requests.RequestException:
                code = 0
            if code != 200:
                not_ready.append(code)
            time.sleep(0.1)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(4)]
    threads.append(threading.Thread(target=readiness, daemon=True))
    try:
        for t in threads:
            t.start()
        for _ in range(HUPS):
            time.sleep(1.5)
            srv.proc.send_signal(signal.SIGHUP)
        time.sleep(3.0)
        done.set()
        for t in threads:
            t.join(timeout=20)
        metrics = requests.get(srv.url + "/metrics", verify=ca, timeout=10)
        configz = _configz_by_pid(srv)
    finally:
        done.set()
        code = srv.stop()
    assert code == 0
    assert failures == [], failures[:5]
    assert not_ready == []
    assert answered[0] > 100
    assert metrics.status_code == 200 and "dra_webhook_admission_requests_total{" in metrics.text
    assert all(c["settings"]["max_warnings"] == 9 for c in configz.values())
    log = Path(srv.log).read_text()
    assert log.count('"msg": "Hang up: Master"') == HUPS, log[-2000:]
    assert "Traceback" not in log and '"exc"' not in log, log[-3000:]


def test_a_worker_born_later_agrees_with_the_running_ones(tmp_path, rel_certs):
    """v1 applied, v2 applied live, bad v3 refused live; then a worker is killed: its
    replacement must show v2 and v3's error like the others (not v1, not no error)."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text("maxWarnings: 5\n")
    srv = start_server(rel_certs, tmp_path, "--config", str(cfg), "--workers", "3")
    try:
        _write_atomically(cfg, "maxWarnings: 6\n")
        _wait(srv, lambda c: c["settings"]["max_warnings"] == 6)
        _write_atomically(cfg, "maxWarnings: -1\n")
        before = _wait(srv, lambda c: c["configError"] is not None)
        victim = next(iter(_workers(srv)))
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (victim in _workers(srv) or len(_workers(srv)) < 3):
            time.sleep(0.2)
        after = _wait(srv, lambda c: True, want=_workers(srv))
    finally:
        assert srv.stop() == 0
    assert victim not in after
    assert {c["configHash"] for c in after.values()} == {c["configHash"] for c in before.values()}
    assert all(c["settings"]["max_warnings"] == 6 for c in after.values()), after
    errors = {c["configError"] for c in after.values()}
    assert len(errors) == 1 and "max_warnings: must be greater than zero" in errors.pop()


def _wait(srv: Any, pred: Any, want: set[int] | None = None, timeout: float = 20.0) -> dict[int, dict]:
    """/configz of every worker once all of them satisfy ``pred``."""
    deadline = time.monotonic() + timeout
    seen: dict[int, dict] = {}
    while time.monotonic() < deadline:
        seen = {**seen, **_configz_by_pid(srv, rounds=30)}
        live = want or _workers(srv)
        seen = {p: c for p, c in seen.items() if p in live}
        if set(seen) >= live and all(pred(c) for c in seen.values()):
            return seen
        seen = {p: c for p, c in seen.items() if pred(c)}
        time.sleep(0.3)
    raise AssertionError(f"workers did not converge: {json.dumps(seen)[:1500]}")
