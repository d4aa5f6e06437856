"""Differential 2, DeviceTaintRule family: generated rules against the real apiserver, CREATE,
UPDATE of the main resource and UPDATE of `/status`. Zero disagreements.

Objects come from `gen_taintrules.py` (fixed seeds; `DIFF_SCALE` multiplies the counts). CREATEs
go through `generated.judge` (each rule in `all-on` and one other profile in turn: no gate
changes what the apiserver accepts, and this keeps checking that). UPDATEs store a valid rule and
dry-run an edit of what upstream stored; `/status` updates store a rule, optionally write a first
status, then dry-run a second.
"""

from __future__ import annotations

import pytest

from tests.differential.compare import compare_status
from tests.differential.conftest import scale
from tests.differential.gen_common import draw_unique, judge_updates, served_rotation
from tests.differential.gen_taintrules import TAINT_RULE_STATUSES, TAINT_RULE_UPDATE_PAIRS, TAINT_RULES
from tests.differential.generated import judge, report
from tests.differential.oracle import ApiOracle
from tests.differential.ours import our_status_verdict, our_verdict
from tests.differential.profiles import profiles

pytestmark = pytest.mark.differential

CREATES = 600
UPDATES = 200
STATUS_UPDATES = 120


def test_generated_taint_rule_creates_agree(api_oracle: ApiOracle) -> None:
    objs = draw_unique(TAINT_RULES, CREATES * scale(), salt=1521)
    assert len(objs) >= CREATES * scale() * 0.95, len(objs)  # a rule has few fields: repeats at large scales
    found, total = judge(api_oracle, "taint-rule", objs)
    assert not found, report(found, total)
    assert total == 2 * len(objs), total
    # Both answers in numbers (a generator that drifted into all-valid or all-invalid rules would
    # compare nothing of interest); we agree with upstream, so our count is upstream's.
    allowed = sum(our_verdict(o, profiles()["all-on"]).allowed for o in objs)
    assert len(objs) // 5 < allowed < len(objs) * 4 // 5, allowed


def test_generated_taint_rule_updates_agree(api_oracle: ApiOracle) -> None:
    pairs = draw_unique(TAINT_RULE_UPDATE_PAIRS, UPDATES * scale(), salt=1522)
    found, total = judge_updates(api_oracle, "taint-rule-update", pairs, served_rotation(False))
    assert not found, report(found, total)
    assert total >= len(pairs), total


def test_generated_taint_rule_status_updates_agree(api_oracle: ApiOracle) -> None:
    profs = profiles()
    names = list(profs)
    triples = draw_unique(TAINT_RULE_STATUSES, STATUS_UPDATES * scale(), salt=1523)
    jobs = [(names[i % len(names)], i, t) for i, t in enumerate(triples)]
    answers = list(api_oracle._pool.map(
        lambda j: api_oracle.status_update(j[0], *j[2], name=f"rule-status-{j[1]}"), jobs))
    found, total, denied = [], 0, 0
    for (p, i, _), (old, new, up) in zip(jobs, answers, strict=True):
        if new is None or old.stored is None or not up.served:
            continue
        total += 1
        denied += not up.allowed
        ours = our_status_verdict(new, profs[p], old.stored)
        if (d := compare_status(f"taint-rule-status#{i}", p, new, ours, up, old.stored)) is not None:
            found.append(d)
    assert not found, report(found, total)
    assert total >= len(triples) * 0.7, total
    assert 0 < denied < total, (denied, total)
