"""A review leaves no reference cycles behind: everything it allocates is freed by reference
counting as soon as the answer is sent. Cycles are only freed by the garbage collector, whose
passes over the worker's whole heap (the cluster state included) cost the serving path far more
than the review made them (issue 18: a search and its pruner referring to each other left ~190
objects per claim review, 40-70 µs of collection each)."""

from __future__ import annotations

import gc

import pytest

from bench import gen
from webhook.admission import decode_body
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot, StaticState

REVIEWS = 20


@pytest.fixture(scope="module")
def served() -> tuple[Settings, StaticState]:
    return (Settings(gates=FeatureGates.parse(gen.GATES)),
            StaticState(ClusterSnapshot.from_objects(gen.cluster(2))))


@pytest.mark.parametrize("case", list(gen.b1_objects()))
@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_a_review_leaves_no_reference_cycles(served, case, endpoint):
    settings, state = served
    body = gen.body(gen.b1_objects()[case])
    for _ in range(3):  # caches filled, the allocator model built
        review(decode_body(body), settings, state, endpoint=endpoint)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(REVIEWS):
            review(decode_body(body), settings, state, endpoint=endpoint)
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    assert left == 0, f"{left / REVIEWS:.0f} objects per review were only freed by the garbage collector"
