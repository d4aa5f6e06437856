"""Differential 2, scheduling: generated PodGroups and Workloads, CREATE and UPDATE.

Hypothesis draws the objects (fixed seeds); the apiserver (server-side dry run, no webhook) and
our pipeline judge each in `all-on` and one other profile that serves scheduling.k8s.io/v1beta1
(GenericWorkload on), in turn. UPDATE pairs store a valid object and dry-run an edit of what
upstream stored. Zero disagreements.
"""

from __future__ import annotations

import json

import pytest

from tests.differential.conftest import scale
from tests.differential.gen_common import draw_unique, judge_updates, served_rotation
from tests.differential.gen_scheduling import (
    PODGROUP_UPDATE_PAIRS,
    PODGROUPS,
    PRIORITY_CLASSES,
    WORKLOAD_UPDATE_PAIRS,
    WORKLOADS,
)
from tests.differential.generated import judge, report
from tests.differential.oracle import ApiOracle, OracleError

pytestmark = pytest.mark.differential

CREATES = 2000
UPDATES = 500


@pytest.fixture(scope="module")
def oracle(api_oracle: ApiOracle) -> ApiOracle:
    """The oracle with the PriorityClasses the generated PodGroups name beyond `prepare`'s
    (created, not applied, so that `prepare`'s apply of value 1000 leaves them as they are)."""
    items = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
              "value": value, **({"preemptionPolicy": policy} if policy else {})}
             for name, (value, policy) in PRIORITY_CLASSES.items()]
    for api in api_oracle.apis.values():
        r = api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        if r.returncode != 0 and "AlreadyExists" not in r.stderr:
            raise OracleError(f"creating PriorityClasses in {api.name}: {r.stderr}")
    return api_oracle


@pytest.mark.parametrize("family, strategy, salt", [("podgroup", PODGROUPS, 1511), ("workload", WORKLOADS, 1512)])
def test_generated_creates_agree(oracle: ApiOracle, family, strategy, salt):
    objs = draw_unique(strategy, CREATES * scale(), salt)
    assert len(objs) == CREATES * scale()
    found, total = judge(oracle, family, objs, served_rotation(True))
    assert not found, report(found, total)
    assert total >= len(objs), total


@pytest.mark.parametrize("family, strategy, salt", [("podgroup-update", PODGROUP_UPDATE_PAIRS, 1513),
                                                    ("workload-update", WORKLOAD_UPDATE_PAIRS, 1514)])
def test_generated_updates_agree(oracle: ApiOracle, family, strategy, salt):
    pairs = draw_unique(strategy, UPDATES * scale(), salt)
    found, total = judge_updates(oracle, family, pairs, served_rotation(True))
    assert not found, report(found, total)
    # Some old objects are not valid in a profile (a gate's field forbidden): most are.
    assert total >= len(pairs), total
