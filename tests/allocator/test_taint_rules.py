"""DeviceTaintRules in the allocator (``webhook/allocator/taints.py``): which devices a rule
taints, under which gates, what the reasons say, and that node classes stay sound when a rule
taints one node's devices and not another's. (Verdicts against upstream: the taint rows of
``upstream_rows.py`` and the generated allocator family.)"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import gen
from tests.allocator.builders import DRV, claim, dev, device_class, node, req, rslice, taint_rule, toleration
from webhook.allocator import Call, Limits, allocate, engine, model_for
from webhook.allocator.classes import class_of
from webhook.allocator.feasibility import feasibility_warnings
from webhook.allocator.taints import Taint, TaintRules, Toleration, selects, tolerates, untolerated
from webhook.cli.simulate import run_simulate
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

DEFAULT = FeatureGates.defaults()
KEY = "example.com/maintenance"


def snap(*objs: dict[str, Any]) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(copy.deepcopy(list(objs)), source="test")


@pytest.mark.parametrize(("selector", "want"), [
    pytest.param({}, True, id="empty-selects-everything"),
    pytest.param(None, False, id="none-selects-nothing"),
    pytest.param({"driver": DRV}, True, id="driver"),
    pytest.param({"driver": DRV.upper()}, False, id="driver-compared-exactly"),
    pytest.param({"pool": "pool", "device": "g0"}, True, id="pool-and-device"),
    pytest.param({"pool": "pool", "device": "g1"}, False, id="other-device"),
    pytest.param({"driver": None, "pool": None}, True, id="null-parts-are-unset"),
])
def test_selector(selector: Any, want: bool) -> None:
    assert selects(selector, DRV, "pool", "g0") is want
    rules = TaintRules([taint_rule("r", **({"selector": None} if selector is None else selector))])
    assert bool(rules.of(DRV, "pool", "g0")) is want


TAINT = Taint("k", "v", "NoSchedule")


@pytest.mark.parametrize(("tol", "want"), [
    pytest.param(Toleration("k", "Equal", "v", ""), True, id="equal-any-effect"),
    pytest.param(Toleration("k", "Equal", "w", ""), False, id="equal-other-value"),
    pytest.param(Toleration("", "Exists", "", ""), True, id="exists-any-key"),
    pytest.param(Toleration("k", "Exists", "", "NoExecute"), False, id="other-effect"),
    pytest.param(Toleration("k", "Bogus", "v", ""), False, id="unknown-operator"),
])
def test_toleration(tol: Toleration, want: bool) -> None:
    assert tolerates(tol, TAINT) is want


def test_only_blocking_effects_exclude() -> None:
    taints = [Taint("a", "", "None"), Taint("b", "", "Bogus"), Taint("c", "", "NoExecute", "r")]
    assert untolerated((), taints) == taints[2]
    assert untolerated((Toleration("c", "Exists", "", "", 5),), taints) is None  # tolerationSeconds: still allocates


def test_rule_taints_follow_the_slices_own_in_snapshot_order() -> None:
    s = snap(rslice("s", [dev("g0", taints=[{"key": "own", "effect": "None"}])]),
             taint_rule("b", key="second"), taint_rule("a", "NoExecute", key="first", device="g0"))
    model = model_for(s, DEFAULT)
    d = model.slices[0].devices[0]
    assert [(t.key, t.rule) for t in model.taints(d)] == [("own", ""), ("second", "b"), ("first", "a")]
    assert model.rule_taints(d) == model.taints(d)[1:]


@pytest.mark.parametrize(("gates", "want"), [
    pytest.param("", ["own", "rule"], id="defaults"),
    pytest.param("DRADeviceTaintRules=false", ["own"], id="rules-off"),
    # (the search ignores the slice's own taints too then: Search.taints_on)
    pytest.param("DRADeviceTaints=false,DRADeviceTaintRules=false", ["own"], id="taints-off"),
])
def test_rules_apply_only_with_both_gates_on(gates: str, want: list[str]) -> None:
    s = snap(rslice("s", [dev("g0", taints=[{"key": "own", "effect": "None"}])]), taint_rule("r", key="rule"))
    model = model_for(s, FeatureGates.parse(gates))
    assert [t.key for t in model.taints(model.slices[0].devices[0])] == want


STATE = [node("node-1"), device_class(), rslice("s", [dev("g0")])]


def test_the_reason_names_the_rule_and_the_taint() -> None:
    code, text = run_simulate([claim("c", req())], snap(*STATE, taint_rule("gpu-0-maintenance", value="planned")),
                              DEFAULT, None, output="json")
    doc = json.loads(text)
    assert code == 1 and not doc["feasible"]
    assert doc["reasons"][0] == ("node-1: claim default/c request req-0: taint example.com/maintenance=planned:"
                                 "NoSchedule of DeviceTaintRule gpu-0-maintenance on g0 not tolerated")


@pytest.mark.parametrize(("key", "want"), [
    pytest.param("maint", "feasibility: claim c/req-0 (cls): taint maint:NoSchedule of DeviceTaintRule "
                 "gpu-0-maintenance on g0 not tolerated", id="whole"),
    pytest.param(KEY, "feasibility: claim c/req-0 (cls): taint example.co...NoSchedule of DeviceTaintRule "
                 "gpu-0-maintenance on g0 not tolerated", id="long-key-shortened-in-the-middle"),
])
def test_the_feasibility_warning_names_the_rule(key: str, want: str) -> None:
    got = feasibility_warnings(claim("c", req()), snap(*STATE, taint_rule("gpu-0-maintenance", key=key)), DEFAULT,
                               deadline=1e18, max_steps=10_000)
    assert got == [want]
    assert len(got[0]) <= 120


def test_a_tolerating_claim_fits() -> None:
    code, _ = run_simulate([claim("c", req(tolerations=[toleration()]))], snap(*STATE, taint_rule("r")), DEFAULT,
                           None, output="json")
    assert code == 0


def _pool_cluster(rule: dict[str, Any] | None) -> list[dict[str, Any]]:
    objs = gen.cluster(4)
    return objs + ([rule] if rule else [])


def test_a_rule_on_one_nodes_pool_splits_its_class_and_a_driver_wide_rule_does_not() -> None:
    gates = FeatureGates.parse(gen.GATES)
    one = model_for(snap(*_pool_cluster(taint_rule("r", pool=f"{gen.node_name(0)}-gpus"))), gates)
    cls = [class_of(one, gen.node_name(i)) for i in range(4)]
    assert cls[0] != cls[1] == cls[2] == cls[3]
    every = model_for(snap(*_pool_cluster(taint_rule("r", "None", driver=gen.GPU_DRIVER))), gates)
    assert len({class_of(every, gen.node_name(i)) for i in range(4)}) == 1


RULES = {
    "first-nodes-pool": lambda: taint_rule("r", pool=f"{gen.node_name(0)}-gpus"),
    "one-device-of-the-second-node": lambda: taint_rule("r", "NoExecute", pool=f"{gen.node_name(1)}-gpus",
                                                        device="gpu-0-mig-0"),
    "every-gpu": lambda: taint_rule("r", driver=gen.GPU_DRIVER),
    "none-effect": lambda: taint_rule("r", "None"),
}


@pytest.mark.parametrize("case", list(RULES))
def test_same_outcome_with_node_classes_on_and_off(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    objs = _pool_cluster(RULES[case]())
    gates = FeatureGates.parse(gen.GATES)

    def outcome() -> str:
        o = allocate([gen.grouped_claim(), gen.infeasible_claim("seven", count=7)], model_for(snap(*objs), gates),
                     Call(limits=Limits(200_000)))
        return json.dumps([o.feasible, o.node, o.steps, o.reason_texts(), o.allocations()])

    on = outcome()
    monkeypatch.setattr(engine, "NODE_CLASSES", False)
    assert outcome() == on
    if case == "first-nodes-pool":
        assert json.loads(on)[1] != gen.node_name(0)  # the tainted node is passed over


def test_a_state_directory_brings_its_rules(tmp_path: Any) -> None:
    """`--cluster-state DIR` reads DeviceTaintRules like the other kinds (here: the example state
    plus a driver-wide NoSchedule rule, which leaves no GPU for an untolerating claim)."""
    import shutil
    from pathlib import Path

    from webhook.state.files import from_dir
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "examples" / "cluster", tmp_path / "cluster")
    (tmp_path / "cluster" / "rule.json").write_text(json.dumps(taint_rule("all-gpus", driver="gpu.example.com")))
    state = from_dir(tmp_path / "cluster")
    assert [r["metadata"]["name"] for r in state.of("DeviceTaintRule")] == ["all-gpus"]
    one_gpu = claim("c", req(cls="gpu.example.com"))
    assert run_simulate([one_gpu], state, DEFAULT, None, output="json")[0] == 1
    tolerant = claim("c", req(cls="gpu.example.com", tolerations=[toleration()]))
    assert run_simulate([tolerant], state, DEFAULT, None, output="json")[0] == 0
