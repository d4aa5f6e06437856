"""Our `simulate` on the scheduler rows (`scheduler_rows.py`): kube-scheduler's verdicts, no Go.

A row waiting for other work is a strict expected failure: it passes the day our answer agrees,
and then fails until its `waiting_for` is cleared.
"""

from __future__ import annotations

import pytest

from tests.allocator.scheduler_rows import ROWS, SchedRow
from tests.differential.sched_ours import Unanswered, our_answer
from webhook.gates import FeatureGates


def _param(row: SchedRow) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=row.waiting_for)] if row.waiting_for else []
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_our_verdict_is_the_schedulers(row: SchedRow) -> None:
    s = row.scenario
    ours = our_answer(s, s.cluster, FeatureGates().with_overrides(row.gates))
    assert not isinstance(ours, Unanswered), ours.why
    assert {p: ours.nodes[p] is not None for p in s.pods} == row.bound, f"{row.why}\nours: {ours.doc}"


def test_rows_are_isolated_and_named_once() -> None:
    keys = [r.scenario.key for r in ROWS]
    assert len(set(keys)) == len(keys) and len({r.id for r in ROWS}) == len(ROWS)
    assert all(set(r.bound) == set(r.scenario.pods) for r in ROWS)
