"""Fixtures of the differential tests: the upstream oracles, started once per session.

`DIFF_SCALE` multiplies the generated case counts (`make differential` sets it); the default is
what `make test` runs. Families add lines to `SUMMARY` (counts a reader should see even when
everything passes: what was compared, what could not be, how long it took); they are printed at
the end of the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.differential.oracle import AllocOracle, ApiOracle, PoolOracle
from tests.differential.profiles import profiles

if TYPE_CHECKING:
    from tests.differential.sched_rig import SchedRig

SUMMARY: list[str] = []


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
def sched_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedRig]:
    """kube-apiserver, kube-scheduler and kube-controller-manager per gate profile of the scheduler
    family (`gen_sched.PROFILES`), on one etcd."""
    import time

    from tests.differential.gen_sched import PROFILES
    from tests.differential.sched_rig import SchedRig

    started = time.perf_counter()
    rig = SchedRig(tmp_path_factory.mktemp("sched-rig"), PROFILES)
    SUMMARY.append(f"scheduler rig: {len(PROFILES)} control planes up in {time.perf_counter() - started:.1f} s")
    yield rig
    rig.stop()


@pytest.fixture(scope="session")
def pool_oracle() -> Iterator[PoolOracle]:
    """Upstream's DRA driver helper, judging pools (`pool-check`)."""
    oracle = PoolOracle().start()
    yield oracle
    oracle.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SUMMARY:
        terminalreporter.section("differential summary")
        for line in SUMMARY:
            terminalreporter.write_line(line)
