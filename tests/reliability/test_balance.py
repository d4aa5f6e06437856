"""Balanced accepts: keep-alive connections spread over the workers (webhook/server/balance.py).

Before the connection board, whichever worker woke first took each new connection, and a few
long-lived connections (the apiserver's) often all landed on one worker. The server tests use
a real 2-worker server; the board's own rules are checked on a board made here.
"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from bench.servers import connection_spread
from tests.reliability.conftest import start_server
from webhook.server.balance import BOARD_STALE_SECONDS, ConnectionBoard

pytestmark = pytest.mark.integration


def _workers(srv: Any) -> list[int]:
    with open(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children") as f:
        return [int(x) for x in f.read().split()]


def _until(pred: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


def test_four_keepalive_connections_split_two_and_two(tmp_path, rel_certs):
    srv = start_server(rel_certs, tmp_path)
    conns: list[http.client.HTTPSConnection] = []
    try:
        seen: set[int] = set()

        def both_answer() -> bool:  # each worker's loop runs (and so posts on the board)
            c = http.client.HTTPSConnection("127.0.0.1", srv.port, context=srv.ssl_context(), timeout=10)
            c.request("GET", "/configz", headers={"Connection": "close"})
            seen.add(int(json.loads(c.getresponse().read())["pid"]))
            c.close()
            return len(seen) == 2

        _until(both_answer, "both workers answer")
        _until(lambda: connection_spread(srv.port, _workers(srv)) == [0, 0], "warm-up connections closed")
        for _ in range(4):  # one after the other, each kept alive after one request
            c = http.client.HTTPSConnection("127.0.0.1", srv.port, context=srv.ssl_context(), timeout=10)
            c.request("GET", "/healthz")
            r = c.getresponse()
            r.read()
            assert r.status == 200
            conns.append(c)
        assert connection_spread(srv.port, _workers(srv)) == [2, 2]
    finally:
        for c in conns:
            c.close()
        assert srv.stop() == 0


@pytest.mark.parametrize(("posted", "mine", "want"), [
    pytest.param({}, 0, None, id="alone-no-sibling"),
    pytest.param({101: 3}, 0, 3, id="one-sibling"),
    pytest.param({101: 3, 102: 1}, 0, 1, id="fewest-of-two-siblings"),
])
def test_fewest_elsewhere_is_the_least_loaded_live_sibling(posted, mine, want):
    board = ConnectionBoard(slots=4)
    now = 1000.0
    slot = board.claim(100, now)
    assert slot is not None
    assert board.post(slot, 100, mine, now)
    for pid, n in posted.items():
        s = board.claim(pid, now)
        assert s is not None and board.post(s, pid, n, now)
    assert board.fewest_elsewhere(slot, now) == want


def test_a_silent_sibling_is_ignored_and_its_slot_reused():
    board = ConnectionBoard(slots=2)
    mine = board.claim(100, 0.0)
    other = board.claim(101, 0.0)
    assert mine is not None and other is not None and mine != other
    assert board.claim(102, 1.0) is None  # full while both are live
    later = BOARD_STALE_SECONDS + 1.0
    board.post(mine, 100, 5, later)
    assert board.fewest_elsewhere(mine, later) is None  # 101 went silent
    assert board.claim(102, later) == other
    assert not board.post(other, 101, 0, later)  # 101 lost its slot and must claim again


def test_a_released_or_exited_worker_leaves_the_board():
    board = ConnectionBoard(slots=3)
    a, b, c = (board.claim(pid, 0.0) for pid in (100, 101, 102))
    assert a is not None and b is not None and c is not None
    board.post(b, 101, 0, 0.0)
    board.post(c, 102, 1, 0.0)
    board.release(b, 101)
    assert board.fewest_elsewhere(a, 0.0) == 1
    board.release_pid(102)
    assert board.fewest_elsewhere(a, 0.0) is None
