"""Differential 2, metadata: generated ObjectMeta on every kind we validate, CREATE and UPDATE.

Hypothesis draws the objects (fixed seed); the apiserver (server-side dry run, no webhook) and
our pipeline judge each in `all-on` and one other profile in turn; UPDATE pairs store a valid
object and dry-run an edit of what upstream stored. Zero disagreements.
"""

from __future__ import annotations

import pytest

from tests.differential.conftest import scale
from tests.differential.gen_common import draw_unique, judge_updates, rotation_by_kind
from tests.differential.gen_meta import KINDS, META_OBJECTS, META_UPDATE_PAIRS
from tests.differential.generated import judge, report
from tests.differential.oracle import ApiOracle

pytestmark = pytest.mark.differential

CREATES = 2000
UPDATES = 600


def test_generated_metadata_creates_agree(api_oracle: ApiOracle):
    objs = draw_unique(META_OBJECTS, CREATES * scale(), salt=1501)
    assert len(objs) == CREATES * scale()
    assert {o["kind"] for o in objs} == set(KINDS)
    found, total = judge(api_oracle, "meta", objs, rotation_by_kind([o["kind"] for o in objs]))
    assert not found, report(found, total)
    assert total >= len(objs), total


def test_generated_metadata_updates_agree(api_oracle: ApiOracle):
    pairs = draw_unique(META_UPDATE_PAIRS, UPDATES * scale(), salt=1502)
    found, total = judge_updates(api_oracle, "meta-update", pairs, rotation_by_kind([o["kind"] for o, _ in pairs]))
    assert not found, report(found, total)
    assert total >= len(pairs), total
