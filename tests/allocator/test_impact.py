"""The impact preview (``webhook/allocator/impact.py``): which allocated claims a NoExecute
DeviceTaintRule would evict the pods of, which pending claims a rule or a DeviceClass change
makes infeasible, within the budget, in at most three short warnings."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from tests.allocator.builders import claim, dev, device_class, node, req, result, rslice, taint_rule, toleration
from webhook.allocator import Limits
from webhook.allocator.impact import PENDING_MAX, impact_warnings
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

DEFAULT = FeatureGates.defaults()
FAR = 1e18
KEY = "example.com/maintenance"


def state(*extra: dict[str, Any]) -> ClusterSnapshot:
    objs = [node("node-1"), device_class(), rslice("s", [dev("g0"), dev("g1")]), *extra]
    return ClusterSnapshot.from_objects(copy.deepcopy(objs), source="test")


def preview(obj: dict[str, Any], snap: ClusterSnapshot, old: dict[str, Any] | None = None,
            gates: FeatureGates = DEFAULT, max_steps: int = 100_000, deadline: float = FAR) -> list[str]:
    return impact_warnings(obj, old, snap, gates, Limits(max_steps, deadline))


def held(name: str, device: str = "g0", **res: Any) -> dict[str, Any]:
    return claim(name, req(), allocation=[result(device, **res)])


EVICTS = "feasibility: NoExecute would evict the pods of "


@pytest.mark.parametrize(("claims", "want"), [
    pytest.param([held("a")], [EVICTS + "1 allocated claim: default/a"], id="one"),
    pytest.param([held("a"), held("b", "g1")], [EVICTS + "2 allocated claims: default/a, default/b"], id="two"),
    pytest.param([held("a", tolerations=[toleration(effect="NoExecute")])], [], id="tolerated-forever"),
    pytest.param([held("a", tolerations=[toleration(effect="NoExecute", tolerationSeconds=30),
                                         toleration(effect="NoExecute", tolerationSeconds=90)])],
                 [EVICTS + "1 allocated claim: default/a after 30 s"], id="tolerated-for-the-shortest-while"),
    # The eviction controller reads only NoExecute tolerations: one for every effect does not count
    # (allocation takes it, eviction does not).
    pytest.param([held("a", tolerations=[toleration()])], [EVICTS + "1 allocated claim: default/a"],
                 id="effectless-toleration-does-not-protect"),
    pytest.param([held("a", device="g1")], [], id="other-device"),
])
def test_no_execute_evictions(claims: list[dict[str, Any]], want: list[str]) -> None:
    assert preview(taint_rule("r", "NoExecute", device="g0") if len(claims) < 2 else
                   taint_rule("r", "NoExecute"), state(*claims)) == want


@pytest.mark.parametrize(("old_effect", "want"), [
    pytest.param("NoExecute", [], id="already-evicting"),
    pytest.param("None", [EVICTS + "1 allocated claim: default/a"], id="none-to-no-execute"),
])
def test_an_update_reports_only_new_evictions(old_effect: str, want: list[str]) -> None:
    old = taint_rule("r", old_effect)
    assert preview(taint_rule("r", "NoExecute"), state(held("a"), old), old=old) == want


@pytest.mark.parametrize("gates", ["DRADeviceTaintRules=false", "DRADeviceTaints=false,DRADeviceTaintRules=false"])
def test_nothing_happens_while_the_gates_are_off(gates: str) -> None:
    pending = claim("p", req(count=2))
    assert preview(taint_rule("r", "NoExecute"), state(held("a"), pending), gates=FeatureGates.parse(gates)) == []


def test_pending_claims_that_stop_fitting_are_named_with_the_first_reason() -> None:
    snap = state(claim("needs-two", req(count=2)), claim("needs-one", req()),
                 claim("tolerant", req(count=2, tolerations=[toleration()])), claim("hopeless", req(count=3)))
    got = preview(taint_rule("r", device="g0"), snap)
    assert got[0] == "feasibility: 1 pending claim would no longer fit: default/needs-two"
    assert got[1].startswith("feasibility: claim needs-two request req-0 (class cls): ") and len(got) == 2


def test_the_reason_does_not_repeat_the_rule_under_review() -> None:
    got = preview(taint_rule("r"), state(claim("one", req())))
    assert got == ["feasibility: 1 pending claim would no longer fit: default/one",
                   f"feasibility: claim one request req-0 (class cls): taint {KEY}:NoSchedule on g0 not tolerated "
                   "on node-1"]


def test_effect_none_changes_nothing() -> None:
    assert preview(taint_rule("r", "None"), state(held("a"), claim("p", req(count=2)))) == []


def test_a_device_class_change_names_the_pending_claims_of_the_class() -> None:
    narrower = device_class()
    narrower["spec"]["selectors"] = [{"cel": {"expression": 'device.driver == "nothing.example.com"'}}]
    other = device_class("other")
    snap = state(other, claim("two", req(count=2)), claim("other-two", req(count=2, cls="other")))
    got = preview(narrower, snap)
    assert got[0] == "feasibility: 1 pending claim would no longer fit: default/two"
    assert got[1].startswith("feasibility: claim two")
    assert preview(device_class(), snap) == []  # unchanged class: nothing new


def test_many_claims_fit_in_three_short_warnings() -> None:
    pending = [claim(f"claim-with-a-long-name-{i:03d}", req(count=2)) for i in range(30)]
    helds = [claim(f"held-claim-with-a-long-name-{i:03d}", req(), allocation=[result(f"h{i}", pool="held")])
             for i in range(30)]
    held_pool = rslice("held", [dev(f"h{i}") for i in range(30)], pool="held")
    got = preview(taint_rule("r", "NoExecute"), state(held_pool, *pending, *helds))
    assert len(got) == 3 and all(len(w) <= 120 for w in got)
    assert got[0].startswith(EVICTS + "30 allocated claims: default/held-claim") and got[0].endswith(", ...")
    assert got[1].startswith("feasibility: 30 pending claims would no longer fit: default/claim-with")


@pytest.mark.parametrize(("max_steps", "deadline", "want"), [
    pytest.param(1, FAR, "feasibility: impact preview could not decide 5 pending claims (step budget of one check)",
                 id="steps-per-check"),
    pytest.param(100_000, 0.0, "feasibility: impact preview checked 0 of 5 pending claims (deadline)",
                 id="deadline-for-the-whole"),
])
def test_a_preview_out_of_budget_says_so(max_steps: int, deadline: float, want: str) -> None:
    snap = state(*[claim(f"p{i}", req(count=2)) for i in range(5)])
    assert preview(taint_rule("r", device="g0"), snap, max_steps=max_steps, deadline=deadline) == [want]


def test_the_deadline_met_midway_stops_the_preview() -> None:
    """A clock that passes the deadline after the first claim's checks: the rest is not checked."""
    ticks = iter(range(10**6))
    snap = state(*[claim(f"p{i}", req(count=2)) for i in range(5)])
    got = impact_warnings(taint_rule("r", device="g0"), None, snap, DEFAULT,
                          Limits(100_000, 3, clock=lambda: float(next(ticks))))
    assert got[0].startswith("feasibility: ") and got[-1].startswith("feasibility: impact preview checked ")
    assert got[-1].endswith(" of 5 pending claims (deadline)") and "checked 5 of" not in got[-1]


def test_at_most_pending_max_claims_are_checked() -> None:
    snap = state(*[claim(f"p{i}", req(count=3)) for i in range(PENDING_MAX + 5)])  # none fits anyway
    t = time.monotonic()
    got = preview(taint_rule("r", device="g0"), snap)
    assert got == [f"feasibility: impact preview checked {PENDING_MAX} of {PENDING_MAX + 5} pending claims "
                   f"(at most {PENDING_MAX})"]
    assert time.monotonic() - t < 600  # bounded (a generous bound: no timing assertion is meant here)


@pytest.mark.parametrize("obj", [
    pytest.param({"kind": "DeviceTaintRule", "metadata": {"name": "r"}, "spec": "not an object"}, id="spec-string"),
    pytest.param({"kind": "DeviceTaintRule", "metadata": {"name": "r"}, "spec": {"taint": {"effect": "NoExecute"},
                                                                                "deviceSelector": [1]}},
                 id="selector-list"),
    pytest.param({"kind": "DeviceClass", "metadata": {"name": "cls"}, "spec": {"selectors": [{"cel": 5}]}},
                 id="class-odd-selector"),
    pytest.param({"kind": "DeviceTaintRule"}, id="no-name"),
])
def test_odd_objects_never_crash(obj: dict[str, Any]) -> None:
    got = preview(obj, state(held("a"), claim("p", req())))
    assert all(w.startswith("feasibility: ") for w in got)
