"""``claims.renamed``: a template's parse renamed for another pod's claim is the parse of that claim."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import claim, device_class, first_available, req, rslice
from webhook.allocator import model_for
from webhook.allocator.claims import Claim, Leaf, parse_claim, renamed
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

SEL = 'device.driver == "driver.example.com"'
CLAIMS = {
    "plain": claim("a", req()),
    "count-and-selectors": claim("a", req(count=2, selectors=[SEL, f"!({SEL}) || true"])),
    "two-requests-one-selected": claim("a", req("r0"), req("r1", selectors=[SEL])),
    "first-available": claim("a", first_available("r", req("big", count=4, selectors=[SEL]), req("small"))),
    "constraint": claim("a", req(count=2), constraints=[{"requests": ["req-0"],
                                                         "matchAttribute": "driver.example.com/model"}]),
    "capacity": claim("a", req(capacity={"requests": {"bandwidth": "1G"}})),
    "other-namespace": claim("a", req(selectors=[SEL]), ns="team"),
}


def leaves(c: Claim) -> list[Leaf]:
    return [leaf for r in c.requests for leaf in ((r.leaf,) if r.leaf is not None else r.subrequests)]


def flat(c: Claim) -> Any:
    """Everything of a parse but the compiled CEL programs (shared: compared by identity)."""
    def slots(leaf: Leaf) -> list[Any]:
        return [tuple((s.expr, s.cls, s.index, s.claim, s.request) for s in getattr(leaf, slot))
                if slot in ("selectors", "class_selectors") else getattr(leaf, slot) for slot in Leaf.__slots__]
    cons = [(type(x).__name__, x.attribute, x.requests) for x in c.constraints]
    return (c.label, c.namespace, c.name, cons, c.raw,
            [(r.name, [slots(leaf) for leaf in ((r.leaf,) if r.leaf is not None else r.subrequests)])
             for r in c.requests])


@pytest.mark.parametrize("case", list(CLAIMS), ids=list(CLAIMS))
def test_a_renamed_parse_is_the_parse_of_the_renamed_claim(case: str) -> None:
    g = FeatureGates.parse("DRAConsumableCapacity=true")
    model = model_for(ClusterSnapshot.from_objects([device_class(), rslice("s", [])]), g)
    first = CLAIMS[case]
    second = {**first, "metadata": {"name": "b-0-gpu", "namespace": first["metadata"]["namespace"]}}
    parsed = parse_claim(first, model)
    got = renamed(parsed, second)
    want = parse_claim(second, model)
    assert got.constraints is parsed.constraints
    assert flat(got) == flat(want)
    assert all(s.claim == want.label for leaf in leaves(got) for s in leaf.selectors)
    assert flat(parsed)[0] == f"{first['metadata']['namespace']}/a"  # the first parse is left as it was
    assert all(s.claim == parsed.label for leaf in leaves(parsed) for s in leaf.selectors)
