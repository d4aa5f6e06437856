"""The plain-claim shortcut (`webhook.rules.claims.plain`) is sound: every spec it lets through
gets no error from the full rules (both passes, merged), whatever the gates; and it does let the
common claims through (else it would only cost time).

Specs come from the bench claim with every field replaced by values of other types and bad
values (and removed), one at a time, from the claims under examples/, and from the differential
generator's claims (edges everywhere: none of them plain so far, so they only guard soundness).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from bench import gen
from tests.differential.gen_claims import build_claim
from tests.strategies import SEEDS, broken_variants, replaced
from webhook.fielderrors import FieldPath
from webhook.gates import FeatureGates
from webhook.rules.claims.plain import is_plain_claim_spec
from webhook.rules.claims.spec import all_rules, validate_claim_spec
from webhook.rules.context import RuleContext

SPEC = FieldPath.root("spec")
GATES = {
    "defaults": "",
    "bench": gen.GATES,
    "consumable-off-list-types-on": "DRAConsumableCapacity=false,DRAListTypeAttributes=true",
}
BAD = [None, 0, 7, -1, 2**40, 1.5, True, "", "x", "All", "ExactCount", "Bad_Name", "a" * 70, "x/y/z",
       "a.b/c", "gpu.example.com/UUID", "example.com/" + "a" * 40, "-1", "1Gi", "1.5.6", "device.", "true",
       [], [1], ["mig"], ["mig", "mig"], ["nic/x"], {}, {"x": 1}, {"cel": {"expression": "1"}},
       {"cel": {"expression": "device.attributes"}}, {"requests": {"x": "1Gi"}}, {"requests": {"x": 1}}]


def _variants(spec: dict[str, Any]) -> Iterator[Any]:
    yield spec
    yield from broken_variants(spec, BAD)
    for key in ("firstAvailable", "tolerations", "adminAccess", "derivedAttributes", "config"):
        yield replaced(spec, ("devices", "requests", 0, "exactly", key), [])  # keys it leaves to the rules


def _generated() -> list[Any]:
    return [build_claim(random.Random(i), status=False).get("spec") for i in range(600)]


def _examples() -> list[Any]:
    """The fuzzing seeds' claims and templates (those under examples/, most of them plain)."""
    return [o["spec"] if o["kind"] == "ResourceClaim" else o["spec"].get("spec") for o in SEEDS
            if o.get("kind") in ("ResourceClaim", "ResourceClaimTemplate") and isinstance(o.get("spec"), dict)]


SOURCES = {"bench-variants": lambda: list(_variants(gen.claim()["spec"])), "generated": _generated,
           "examples": _examples}


@pytest.mark.parametrize("gates", list(GATES.values()), ids=list(GATES))
@pytest.mark.parametrize("source", list(SOURCES))
def test_a_spec_let_through_has_no_errors(source: str, gates: str) -> None:
    ctx = RuleContext(gates=FeatureGates.parse(gates))
    specs = SOURCES[source]()
    passed = 0
    for spec in specs:
        if is_plain_claim_spec(spec, ctx.gates):
            passed += 1
            assert all_rules(spec, SPEC, ctx) == [], spec
    assert passed > 0 or source == "generated"  # the generator aims at edges: few of its objects are plain


def test_the_bench_claim_is_plain_and_valid() -> None:
    ctx = RuleContext(gates=FeatureGates.parse(gen.GATES))
    spec = gen.claim()["spec"]
    assert is_plain_claim_spec(spec, ctx.gates)
    assert all_rules(spec, SPEC, ctx) == validate_claim_spec(spec, SPEC, ctx) == []


@pytest.mark.parametrize("spec", [
    pytest.param({"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}},
                                           {"name": "a", "exactly": {"deviceClassName": "c"}}]}},
                 id="duplicate-request-name"),
    pytest.param({"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c", "count": 0}}]}},
                 id="zero-count"),
    pytest.param({"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}}],
                              "constraints": [{"requests": ["b"], "matchAttribute": "x.com/y"}]}},
                 id="constraint-names-an-unknown-request"),
    pytest.param({"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c", "selectors": [
        {"cel": {"expression": "device.nope"}}]}}]}}, id="selector-does-not-compile"),
])
def test_an_invalid_spec_is_left_to_the_rules(spec: dict[str, Any]) -> None:
    ctx = RuleContext(gates=FeatureGates.parse(gen.GATES))
    assert not is_plain_claim_spec(spec, ctx.gates)
    assert validate_claim_spec(spec, SPEC, ctx) == all_rules(spec, SPEC, ctx) != []
