"""The allocator cases once found to disagree with upstream (`upstream_rows.py`), without Go."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.allocator.upstream_rows import ROWS
from webhook.cli.simulate import run_simulate
from webhook.gates import KNOWN, FeatureGates
from webhook.state.base import ClusterSnapshot


def devices(doc: dict[str, Any]) -> list[list[str]] | None:
    if not doc["feasible"]:
        return None
    return [[r["device"] for r in a["results"]] for a in doc["allocations"]]


@pytest.mark.parametrize(("state", "inputs", "gates", "want"), [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_upstream_row(state: list[dict[str, Any]], inputs: list[dict[str, Any]], gates: dict[str, bool],
                      want: list[list[str]] | None) -> None:
    ours = FeatureGates().with_overrides({k: v for k, v in gates.items() if k in KNOWN})
    code, text = run_simulate(json.loads(json.dumps(inputs)), ClusterSnapshot.from_objects(state), ours, None,
                              output="json")
    doc = json.loads(text)
    assert devices(doc) == want, doc["reasons"]
    assert code == (0 if want is not None else 1)
