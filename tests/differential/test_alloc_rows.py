"""The allocator regression rows (`tests/allocator/upstream_rows.py`) are upstream's answers.

Each row's state, inputs and gates go to `dra-allocate`; its verdict and devices must be the
row's. So the Go-free table keeps testing what upstream does, not what we once believed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.upstream_rows import ROWS
from tests.differential.oracle import AllocOracle, OracleError


@pytest.mark.parametrize(("state", "inputs", "gates", "want"), [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_row_is_upstreams_answer(alloc_oracle: AllocOracle, state: list[dict[str, Any]],
                                 inputs: list[dict[str, Any]], gates: dict[str, bool],
                                 want: list[list[str]] | None) -> None:
    up = alloc_oracle.allocate({"id": "row", "clusterState": state, "objects": inputs, "featureGates": gates})
    if up.get("error"):
        raise OracleError(up["error"])
    got = [[r["device"] for r in a["results"]] for a in up["allocations"]] if up["feasible"] else None
    assert got == want, up["reasons"]
