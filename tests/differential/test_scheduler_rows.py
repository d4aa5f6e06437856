"""The scheduler rows (`tests/allocator/scheduler_rows.py`) are what kube-scheduler does.

Each row runs on the rig's control plane of its profile; every pod must be bound, or not, as
the row records. So the Go-free table keeps testing what the scheduler does, not what we once saw.
"""

from __future__ import annotations

import pytest

from tests.allocator.scheduler_rows import ROWS
from tests.differential.gen_sched import PROFILES
from tests.differential.sched_rig import SchedRig

pytestmark = pytest.mark.differential


def test_rows_are_what_the_scheduler_does(sched_rig: SchedRig) -> None:
    wrong = []
    for profile in PROFILES:
        rows = [r for r in ROWS if r.profile == profile]
        if not rows:
            continue
        for row, o in zip(rows, sched_rig.run(profile, [r.scenario for r in rows]), strict=True):
            got = {p.name: p.node is not None for p in o.pods}
            if o.error or o.refused or got != row.bound:
                wrong.append(f"{row.id}: recorded {row.bound}, the scheduler: "
                             f"{o.error or o.refused or [(p.name, p.node or p.message) for p in o.pods]}")
    assert not wrong, "\n".join(wrong)
    assert {r.profile for r in ROWS} <= set(PROFILES)
