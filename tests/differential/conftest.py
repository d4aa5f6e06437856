"""Fixtures of the differential tests: the upstream oracles, started once per session.

`DIFF_SCALE` multiplies the generated case counts (`make differential` sets it); the default is
what `make test` runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.differential.oracle import AllocOracle, ApiOracle, PoolOracle
from tests.differential.profiles import profiles


def scale() -> int:
    try:
        return max(1, int(os.environ.get("DIFF_SCALE", "1")))
    except ValueError:
        pytest.fail(f"DIFF_SCALE must be an integer, got {os.environ['DIFF_SCALE']!r}")


@pytest.fixture(scope="session")
def api_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiOracle]:
    """One kube-apiserver per gate profile (no webhook), on one etcd."""
    oracle = ApiOracle(tmp_path_factory.mktemp("oracle"), profiles())
    yield oracle
    oracle.stop()


@pytest.fixture(scope="session")
def alloc_oracle() -> Iterator[AllocOracle]:
    oracle = AllocOracle().start()
    yield oracle
    oracle.stop()


@pytest.fixture(scope="session")
def pool_oracle() -> Iterator[PoolOracle]:
    """Upstream's DRA driver helper, judging pools (`pool-check`)."""
    oracle = PoolOracle().start()
    yield oracle
    oracle.stop()
