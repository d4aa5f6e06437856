""""Device already in use" explanations: the search notes one for every device it passes that is
in use (by the cluster, an earlier claim of a per-pod check or another claim of the same joint
search) and that the request would otherwise select, but builds the reason only when asked
(``Search.reasons``): most are dropped once the search gets further. Runs of such devices are
passed at once (``Search._pass_in_use``). Built late, they must read and count as if built at
once, and the decisions, steps and explanations equal passing them one by one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, dev, device_class, node, req, result, rslice
from tests.allocator.test_per_pod_reuse import _cases as per_pod_cases
from tests.allocator.test_per_pod_reuse import _shown
from webhook.allocator import JOINT, PER_CLAIM, Call, Limits, allocate, model_for
from webhook.allocator.search import Search
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

A = f'device.attributes["{DRV}"].type == "a"'
TWO = "node-1: claim default/two request req-0: "


def _state(types: str, held: str | None = None) -> list[dict[str, Any]]:
    objs = [node("node-1"), device_class(),
            rslice("s", [dev(f"{t}-{i}", attrs={"type": t}) for i, t in enumerate(types)])]
    if held is not None:
        objs.append(claim("old", req(), allocation=[result(held)]))
    return objs


@pytest.mark.parametrize(("types", "held", "claims", "mode", "want"), [
    pytest.param("aab", None, [claim("one", req(count=2)), claim("two", req(selectors=[A]))], PER_CLAIM,
                 [f"{TWO}device a-0 already in use", f"{TWO}device a-1 already in use",
                  f"{TWO}request selector #0 false"], id="taken-by-an-earlier-pod"),
    pytest.param("aab", "a-0", [claim("one", req()), claim("two", req(count=2, selectors=[A]))], PER_CLAIM,
                 [f"{TWO}device a-0 already in use", f"{TWO}device a-1 already in use",
                  f"{TWO}request selector #0 false"], id="taken-by-the-cluster-and-an-earlier-pod"),
    pytest.param("aba", "a-2", [claim("one", req(count=2)), claim("two", req(selectors=[A]))], PER_CLAIM,
                 [f"{TWO}device a-0 already in use", f"{TWO}device a-2 already in use"],
                 id="a-run-of-held-devices-names-only-those-selected"),
    pytest.param("aa", None, [claim("one", req(count=2)), claim("two", req())], JOINT,
                 [f"{TWO}device a-0 already in use", f"{TWO}device a-1 already in use"],
                 id="taken-by-another-claim-of-the-search"),
    pytest.param("aab", None, [claim("one", req(count=2)), claim("two", req(selectors=[A]))], JOINT,
                 [], id="dropped-when-the-search-gets-further"),
    pytest.param("ab", "b-1", [claim("two", req(selectors=[A]), req("req-1", selectors=[A]))], JOINT,
                 ["node-1: claim default/two request req-1: device a-0 already in use"],
                 id="taken-by-the-claim-itself-and-one-it-would-not-select-unnamed"),
])
def test_in_use_reasons(types: str, held: str | None, claims: list[dict[str, Any]], mode: str,
                        want: list[str]) -> None:
    model = model_for(ClusterSnapshot.from_objects(_state(types, held)), FeatureGates())
    out = allocate(claims, model, Call(mode=mode))
    assert out.feasible == (not want)
    assert out.reason_texts() == want


@pytest.mark.parametrize(("seed", "admin"), [(0, 0.25), (1, 0.25), (2, 0.25), (3, 0.25),
                                             # a run that pruning splits, at the furthest point
                                             (8, 0.0), (39, 0.0)])
@pytest.mark.parametrize("steps", [10**6, 40])
@pytest.mark.parametrize("mode", [JOINT, PER_CLAIM])
def test_runs_of_devices_in_use_decide_and_explain_as_one_by_one(seed: int, admin: float, steps: int, mode: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Later claims pass runs of devices that earlier claims of the search picked (joint), that
    # earlier pods took or that the cluster holds (per-pod), with pruning asked in between.
    cases = per_pod_cases(seed, admin=admin)
    runs = [_shown(allocate(c, m, Call(mode=mode, limits=Limits(steps)))) for m, c in cases]
    monkeypatch.setattr(Search, "runs", False)
    assert [_shown(allocate(c, m, Call(mode=mode, limits=Limits(steps)))) for m, c in cases] == runs
