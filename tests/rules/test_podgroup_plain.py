"""The plain-PodGroup shortcut (`webhook.rules.scheduling.plain`) is sound: every spec it lets
through gets no error from the declarative field engine, whatever the gates; and it does let the
common PodGroups through (else it would only cost time).

Specs come from the bench PodGroup with every field replaced by values of other types and bad
values (and removed), one at a time, and from the differential generator's PodGroups and the
fuzzing seeds'.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from bench import gen
from tests.differential.gen_common import Chooser
from tests.differential.gen_scheduling import podgroup
from tests.strategies import SEEDS, broken_variants, replaced
from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.declarative import NO_OLD
from webhook.rules.scheduling.plain import is_plain_podgroup_spec
from webhook.rules.scheduling.podgroup import all_spec_rules, validate_spec

GATES = {
    "defaults": "",
    "bench": gen.GATES,
    "preemption-policy-on": "GenericWorkload=true,PodGroupPreemptionPolicy=true",
}
BAD = [None, 0, 1, -1, 2**31, 2**31 - 1, -(2**31) - 1, 1_000_000_001, 1.0, True, "", "x", "Bad_Name", "a" * 70,
       "a.b", "a" * 254, "Never", "PreemptLowerPriority", "Always", [], [1], [{}], {}, {"x": 1},
       {"minCount": 0}, {"minCount": 2}, {"single": {}}, {"all": {}}, {"single": {}, "all": {}},
       {"name": "w", "resourceClaimName": "c"}, {"workloadName": "w", "templateName": "t"}]


def _variants(spec: dict[str, Any]) -> Iterator[Any]:
    yield spec
    full = {**spec, "workloadRef": {"workloadName": "train", "templateName": "workers"},
            "priorityClassName": "high", "priority": 10, "preemptionPolicy": "Never"}
    yield full
    yield from broken_variants(full, BAD)
    for key in ("schedulingConstraints", "parentCompositePodGroupName", "podGroupTemplateRef", "other"):
        yield replaced(full, (key,), {})  # keys it leaves to the engine


def _generated() -> list[Any]:
    return [podgroup(Chooser(rng=random.Random(i))).get("spec") for i in range(600)] \
        + [o.get("spec") for o in SEEDS if o.get("kind") == "PodGroup"]


@pytest.mark.parametrize("gates", list(GATES.values()), ids=list(GATES))
@pytest.mark.parametrize("source", ["bench-variants", "generated"])
def test_a_spec_let_through_has_no_errors(source: str, gates: str) -> None:
    ctx = RuleContext(gates=FeatureGates.parse(gates))
    specs = list(_variants(gen.podgroup()["spec"])) if source == "bench-variants" else _generated()
    passed = 0
    for spec in specs:
        if is_plain_podgroup_spec(spec, ctx.gates):
            passed += 1
            assert all_spec_rules(spec, NO_OLD, ctx) == [], spec
    assert passed > 0 or source == "generated"  # the generator aims at edges: few of its objects are plain


def test_the_bench_podgroup_is_plain_and_valid() -> None:
    ctx = RuleContext(gates=FeatureGates.parse(gen.GATES))
    spec = gen.podgroup()["spec"]
    assert is_plain_podgroup_spec(spec, ctx.gates)
    assert all_spec_rules(spec, NO_OLD, ctx) == validate_spec(spec, NO_OLD, ctx) == []


@pytest.mark.parametrize("spec", [
    pytest.param({"schedulingPolicy": {"gang": {"minCount": 0}}, "disruptionMode": {"single": {}}},
                 id="zero-min-count"),
    pytest.param({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}},
                  "resourceClaims": [{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}]},
                 id="duplicate-claim-name"),
    pytest.param({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}, "preemptionPolicy": "Never"},
                 id="preemption-policy-with-its-gate-off"),
    pytest.param({"schedulingPolicy": {"basic": {}}}, id="no-disruption-mode"),
])
def test_an_invalid_spec_is_left_to_the_engine(spec: dict[str, Any]) -> None:
    ctx = RuleContext(gates=FeatureGates.parse(""))
    assert not is_plain_podgroup_spec(spec, ctx.gates)
    assert validate_spec(spec, NO_OLD, ctx) == all_spec_rules(spec, NO_OLD, ctx) != []
