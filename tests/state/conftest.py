"""Fixtures for the state tests: a fake apiserver per test and LiveStates that are always stopped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import kubernetes.client
import pytest

from tests.state.fakeapi import FakeApiServer
from webhook.state.live import LiveState


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def make_live(fake: FakeApiServer) -> Iterator[Callable[..., LiveState]]:
    """Build (and later stop) LiveStates with fast test timings against the fake apiserver."""
    made: list[tuple[LiveState, kubernetes.client.ApiClient]] = []

    def make(kinds: tuple[str, ...] | None = None, start: bool = True, **kw: Any) -> LiveState:
        cfg = kubernetes.client.Configuration()
        cfg.host = fake.host
        cfg.retries = False
        client = kubernetes.client.ApiClient(cfg)
        opts: dict[str, Any] = {"resync_seconds": 0, "watch_timeout_seconds": 30,
                                "stale_after_seconds": 5.0, "backoff_base_seconds": 0.05,
                                "backoff_cap_seconds": 0.2, "request_timeout_seconds": 2.0,
                                "connect_timeout_seconds": 1.0}
        opts.update(kw)
        live = LiveState(client, kinds, **opts) if kinds is not None else LiveState(client, **opts)
        made.append((live, client))
        return live.start() if start else live

    yield make
    for live, client in made:
        assert live.stop(timeout=5.0), "reflector threads outlived stop()"
        assert not any(t.is_alive() for t in live.threads())
        client.close()
