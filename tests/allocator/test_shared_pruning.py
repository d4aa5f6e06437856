"""Pruning data shared by leaves equal in content (``prune.Pruner.info_for``): the outcome, steps
included, is the same as when every leaf builds its own, also when the step budget cuts the
search short in the middle of it."""

from __future__ import annotations

import json

import pytest

from bench import gen
from webhook.allocator import JOINT, PER_CLAIM, Call, Limits, allocate, model_for
from webhook.allocator.prune import Pruner
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

GATES = FeatureGates.parse(gen.GATES)


def _outcome(claims: list[dict[str, object]], mode: str, steps: int) -> str:
    model = model_for(ClusterSnapshot.from_objects(gen.cluster(3), source="test"), GATES)
    o = allocate(claims, model, Call(mode=mode, limits=Limits(steps)))
    return json.dumps([o.feasible, o.node, o.kind, o.steps, o.message, o.reason_texts(), o.allocations()])


GANGS = {
    "sixteen-pairs": [gen.grouped_claim(f"pair-{i}") for i in range(16)],
    "pairs-and-too-big": [gen.grouped_claim("pair-0"), gen.infeasible_claim("big-0"), gen.grouped_claim("pair-1"),
                          gen.infeasible_claim("big-1")],
    "pairs-and-no-match": [gen.grouped_claim("pair-0"), gen.unmatchable_claim("none-0"),
                           gen.unmatchable_claim("none-1")],
}


@pytest.mark.parametrize("steps", [200_000, 1_000, 400, 150, 70])
@pytest.mark.parametrize("mode", [JOINT, PER_CLAIM])
@pytest.mark.parametrize("gang", list(GANGS))
def test_same_outcome_with_shared_pruning_data_on_and_off(monkeypatch: pytest.MonkeyPatch, gang: str, mode: str,
                                                         steps: int) -> None:
    on = _outcome(GANGS[gang], mode, steps)
    monkeypatch.setattr(Pruner, "share", False)
    assert _outcome(GANGS[gang], mode, steps) == on
