"""Per-pod mode carries one claim's counters and groups into the next claim's search
(``PoolUse.carried``) instead of walking the allocated devices again. What it carries must equal
what a fresh ``PoolUse`` computes from the allocated state with the claim folded in, and no
outcome may change: not the decision, the steps or the explanation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, counters, dev, device_class, node, req, rslice
from tests.allocator.test_per_pod_reuse import _cases as per_pod_cases
from tests.allocator.test_per_pod_reuse import _shown
from webhook.allocator import PER_CLAIM, Call, Limits, allocate, model_for
from webhook.allocator.candidate import status_result
from webhook.allocator.pooluse import PoolUse
from webhook.allocator.search import Search
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot


def _cases(seed: int) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Per-pod reuse's random PodGroups (counters, groups, shared devices, devices in use), a
    quarter of their claims with admin access: later claims meet what earlier ones took."""
    return per_pod_cases(seed, admin=0.25)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("steps", [10**6, 40])
def test_carried_counters_decide_as_fresh_ones(seed: int, steps: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _cases(seed)
    carried = [_shown(allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(steps)))) for m, c in cases]
    monkeypatch.setattr(PoolUse, "carried", lambda self, picks, admin: None)
    assert [_shown(allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(steps)))) for m, c in cases] == carried


def test_carried_counters_and_groups_equal_a_fresh_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {"pools": 0, "fresh": 0}
    init = Search.__init__
    carried = PoolUse.carried

    def check(self: Search, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        f = self.frame
        carry = a[5] if len(a) > 5 else kw.get("carry")
        use = carry.use if carry is not None else None
        if use is None:
            return
        assert f.use is use
        fresh = PoolUse(f.allocated, f.data.consumers)
        for pool in f.pools:
            pk = (pool.driver, pool.name)
            if pk in use.available:
                seen["pools"] += 1
                assert use.available[pk] == fresh._available(pool)
                assert use.overdrawn[pk] == fresh.overdrawn[pk]
            if pk in use.groups:
                assert use.groups[pk] == fresh._group_state(pool)

    def counting(self: PoolUse, picks: Any, admin: Any) -> PoolUse | None:
        got = carried(self, picks, admin)
        seen["fresh"] += got is None
        return got

    monkeypatch.setattr(Search, "__init__", check)
    monkeypatch.setattr(PoolUse, "carried", counting)
    for seed in range(4):
        for m, c in _cases(seed):
            allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(10**6)))
    assert seen["pools"] >= 50 and seen["fresh"] >= 5  # both paths were taken


@pytest.mark.parametrize(("first", "want"), [
    # gpu-0 takes 6Gi of the 8Gi set. Without admin access the next claim's 4Gi no longer fits
    # next to it and takes the other set; with admin access the allocated state leaves the first
    # claim's device out, so the 4Gi device of the same set still fits.
    pytest.param({}, ["gpu-0", "gpu-2"], id="dedicated-pick-counts-for-the-next-claim"),
    pytest.param({"adminAccess": True}, ["gpu-0", "gpu-1"], id="admin-pick-does-not"),
])
def test_the_next_claim_sees_what_the_allocated_state_holds(first: dict[str, Any], want: list[str]) -> None:
    objs = [node("node-1"), device_class(), rslice("s", [
        dev("gpu-0", attrs={"type": "a"}, consumesCounters=[counters("cs0", mem="6Gi")]),
        dev("gpu-1", attrs={"type": "b"}, consumesCounters=[counters("cs0", mem="4Gi")]),
        dev("gpu-2", attrs={"type": "b"}, consumesCounters=[counters("cs1", mem="4Gi")]),
    ], shared={"cs0": {"mem": "8Gi"}, "cs1": {"mem": "8Gi"}})]
    model = model_for(ClusterSnapshot.from_objects(objs), FeatureGates().with_overrides({"DRAAdminAccess": True}))
    claims = [claim("one", req(selectors=[f'device.attributes["{DRV}"].type == "a"'], **first)),
              claim("two", req(selectors=[f'device.attributes["{DRV}"].type == "b"']))]
    out = allocate(claims, model, Call(mode=PER_CLAIM))
    assert out.feasible
    assert [x["device"] for a in out.allocations() for x in a["results"]] == want


def test_folding_a_claims_results_equals_folding_their_status(monkeypatch: pytest.MonkeyPatch) -> None:
    # Per-pod mode folds each claim's results into the allocated state before the next claim:
    # directly when no result is a capacity share, else through ``add_results`` of the status.
    from webhook.allocator import engine
    seen = {"direct": 0, "status": 0}
    fold = engine.fold_results

    def checked(allocated: Any, got: Any, gates: Any) -> None:
        via_status = allocated.copy()
        via_status.add_results([status_result(r) for r in got], gates)
        fold(allocated, got, gates)
        seen["status" if any(r.share_id for r in got) else "direct"] += 1
        assert (allocated.dedicated, allocated.shared, allocated.aggregated) == (
            via_status.dedicated, via_status.shared, via_status.aggregated)

    monkeypatch.setattr(engine, "fold_results", checked)
    for seed in range(4):
        for m, c in _cases(seed):
            allocate(c, m, Call(mode=PER_CLAIM, limits=Limits(10**6)))
    assert seen["direct"] >= 50 and seen["status"] >= 5, seen
