"""Observability under hostile input: bounded metric labels, capped one-line JSON logs, and a
``dra_webhook_state_ready`` gauge that agrees with /readyz.

Before: the ``kind`` label was copied from the request (3,000 made-up kinds grew /metrics from
2 KB to 4 MB, a scrape took 1 s), a 2 MiB object name gave a 2 MB log line, socket timeouts
logged multi-line tracebacks, and the state gauge read 0 until /readyz had been asked.
"""

from __future__ import annotations

import copy
import json
import random
import string
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.builders import SLICE, review
from tests.reliability.conftest import server_fixture, start_server

pytestmark = pytest.mark.integration

RANDOM_KINDS = 10_000
MAX_LINE = 4096


obs_server = server_fixture("obs")


def _session(srv: Any) -> requests.Session:
    s = requests.Session()
    s.verify = str(srv.certs / "ca.crt")
    s.trust_env = False  # REQUESTS_CA_BUNDLE would override ``verify``
    return s


def _made_up(rnd: random.Random) -> dict[str, Any]:
    doc = review(SLICE)
    word = "".join(rnd.choices(string.ascii_letters, k=24))
    doc["request"]["kind"] = {"group": rnd.choice(["resource.k8s.io", word + ".io"]), "version": "v1",
                              "kind": word}
    doc["request"]["operation"] = rnd.choice(["CREATE", "UPDATE", "DELETE"])
    return doc


def test_metrics_stay_small_after_ten_thousand_made_up_kinds(obs_server):
    def send(seed: int) -> None:
        rnd = random.Random(seed)
        s = _session(obs_server)
        for _ in range(RANDOM_KINDS // 4):
            r = s.post(obs_server.url + "/validate", json=_made_up(rnd), timeout=10)
            assert r.status_code == 200, r.text[:200]

    threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = _session(obs_server)
    s.post(obs_server.url + "/validate", json=review(SLICE), timeout=10)
    started = time.monotonic()
    text = s.get(obs_server.url + "/metrics", timeout=10).text
    took = time.monotonic() - started
    print(f"\n/metrics after {RANDOM_KINDS} made-up kinds: {len(text.encode())} bytes, scrape {took * 1000:.0f} ms")
    assert len(text.encode()) < 100 * 1024
    assert 'kind="other"' in text and 'kind="ResourceSlice"' in text
    other = [line for line in text.splitlines()
             if line.startswith("dra_webhook_admission_requests_total{") and 'kind="other"' in line]
    assert sum(float(line.split()[-1]) for line in other) >= RANDOM_KINDS


def test_state_gauge_agrees_with_readyz_without_asking_readyz(rel_certs, tmp_path):
    srv = start_server(rel_certs, tmp_path, "--workers", "3", wait_ready=False)
    try:
        s = _session(srv)
        deadline = time.monotonic() + 30
        value = None
        while time.monotonic() < deadline:
            try:
                text = s.get(srv.url + "/metrics", timeout=5).text
            except requests.RequestException:
                time.sleep(0.2)
                continue
            lines = [ln for ln in text.splitlines() if ln.startswith("dra_webhook_state_ready")]
            value = float(lines[0].split()[-1]) if lines else None
            if value == 1.0:
                break
            time.sleep(0.2)
        assert value == 1.0, value
        assert s.get(srv.url + "/readyz", timeout=5).json()["checks"]["state"] is True
    finally:
        assert srv.stop() == 0


def _gauge(text: str, name: str) -> float | None:
    lines = [ln for ln in text.splitlines() if ln.startswith(name + " ") or ln.startswith(name + "{")]
    return float(lines[0].split()[-1]) if lines else None


def test_readyz_and_the_state_gauge_are_one_fact_while_workers_sync(rel_certs, tmp_path):
    """Live state from a (fake) apiserver whose Node LISTs take a second, three workers syncing
    one after another; each pair of answers, /readyz first: a 200 means every worker is synced,
    so the gauge read after it says 1. Before, /readyz answered for one worker only (and the
    gauge lagged a second): 200 beside a 0."""
    from tests.state.fakeapi import FakeApiServer, node_obj

    fake = FakeApiServer().start()
    fake.add("Node", node_obj("n1"))
    fake.slow["Node"] = 1.0
    kubeconfig = fake.kubeconfig(tmp_path / "fake.kubeconfig")
    srv = start_server(rel_certs, tmp_path, "--workers", "3", "--kubeconfig", str(kubeconfig), wait_ready=False)
    try:
        deadline = time.monotonic() + 60
        pairs: list[tuple[int, float | None]] = []
        while time.monotonic() < deadline:
            try:
                r = requests.get(srv.url + "/readyz", verify=str(srv.certs / "ca.crt"), timeout=5)
                m = requests.get(srv.url + "/metrics", verify=str(srv.certs / "ca.crt"), timeout=5)
            except requests.RequestException:
                time.sleep(0.05)
                continue
            pairs.append((r.status_code, _gauge(m.text, "dra_webhook_state_ready")))
            if len([p for p in pairs if p[0] == 200]) >= 5:
                break
        assert [p for p in pairs if p[0] == 200 and p[1] != 1.0] == [], pairs
        assert any(p[0] == 503 for p in pairs) and pairs[-1] == (200, 1.0), pairs
    finally:
        assert srv.stop() == 0
        fake.stop()


def test_every_log_line_is_one_capped_json_object(obs_server):
    s = _session(obs_server)
    long_name = "n" * (2 * 1024 * 1024)
    doc = review(SLICE)
    doc["request"]["name"] = long_name
    assert s.post(obs_server.url + "/validate", json=doc, timeout=30).status_code == 200
    bad = review(copy.deepcopy(SLICE))  # review() does not copy its object: SLICE is shared
    bad["request"]["object"]["spec"]["devices"] = [{"name": "x" * 5000}] * 40
    assert s.post(obs_server.url + "/validate", json=bad, timeout=30).json()["response"]["allowed"] is False
    assert s.post(obs_server.url + "/validate", data=b"{nope", timeout=10,
                  headers={"Content-Type": "application/json"}).status_code == 400
    time.sleep(0.5)
    lines = Path(obs_server.log).read_text(errors="replace").splitlines()
    assert len(lines) > 10
    for line in lines:
        assert len(line) <= MAX_LINE, line[:300]
        record = json.loads(line)  # every line, gunicorn's included
        assert {"ts", "level", "logger", "msg"} <= set(record)
    named = [json.loads(ln) for ln in lines if long_name[:200] in ln]
    assert named and all(len(r["object_name"]) < 300 for r in named)


def test_client_socket_errors_are_one_line_without_a_traceback():
    """The formatter turns a client's socket error into one ``error`` field (gunicorn logs a
    timed-out read with ``log.exception``)."""
    import logging

    from webhook.server.logs import JsonFormatter

    try:
        raise TimeoutError("The read operation timed out")
    except TimeoutError:
        import sys
        record = logging.LogRecord("gunicorn.error", logging.ERROR, __file__, 1,
                                   "Socket error processing request.", (), sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line
    out = json.loads(line)
    assert out["error"] == "TimeoutError: The read operation timed out" and "exc" not in out


def test_python_warnings_become_one_json_record_per_kind(caplog):
    """urllib3 asks for ``InsecureRequestWarning`` on every request of a client that skips TLS
    verification; the server logs the first of each kind as JSON (the real server's log, with
    such a client, is read in tests/reliability/test_live_faults.py)."""
    import logging

    from urllib3.exceptions import InsecureRequestWarning

    from webhook.server.logs import JsonFormatter, _log_warning

    with caplog.at_level(logging.WARNING, logger="py.warnings"):
        for _ in range(3):
            _log_warning(InsecureRequestWarning("Unverified HTTPS request"), InsecureRequestWarning,
                         "/x/connectionpool.py", 1097)
        _log_warning(UserWarning("other"), UserWarning, "/x/connectionpool.py", 1097)
    records = [r for r in caplog.records if r.name == "py.warnings"]
    assert [r.getMessage() for r in records] == [
        "InsecureRequestWarning: Unverified HTTPS request (logged once)", "UserWarning: other (logged once)"]
    out = json.loads(JsonFormatter().format(records[0]))
    assert (out["level"], out["category"], out["where"]) == ("warning", "InsecureRequestWarning",
                                                             "/x/connectionpool.py:1097")
