"""Shared fixtures for the reliability tests: the example cluster state and HTTPS helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.conftest import Server, make_certs, start_server  # noqa: F401 - re-exported
from webhook.state.base import StateSource
from webhook.state.default import load_state


def env_int(name: str, default: int) -> int:
    """An example count from the environment (``make fuzz`` raises them)."""
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


@pytest.fixture(scope="session")
def example_state() -> StateSource:
    _warm_up_cel()
    return load_state()


def _warm_up_cel() -> None:
    """The CEL environment raises the recursion limit once per process; do it before hypothesis
    runs (it refuses a limit changed during a test)."""
    try:
        from webhook.cel import compile_result
        compile_result('device.driver == "x"')
    except ImportError:
        pass


@pytest.fixture(scope="session")
def rel_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("relcerts"))


def post(srv: Server, path: str, body: Any, session: requests.Session | None = None,
         timeout: float = 10, **kw: Any) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    client = session or requests
    return client.post(srv.url + path, data=data, verify=str(srv.certs / "ca.crt"),
                       headers={"Content-Type": "application/json"}, timeout=timeout, **kw)


def server_fixture(name: str, *extra: str) -> Any:
    """A module-scoped fixture: one real server (these certificates, ``extra`` flags) per test
    module, stopped cleanly (exit code 0) at the end."""

    @pytest.fixture(scope="module")
    def fixture(rel_certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
        srv = start_server(rel_certs, tmp_path_factory.mktemp(name), *extra)
        yield srv
        assert srv.stop() == 0

    return fixture
