"""A one-shot call stops at its first fit only when no later node can raise a fatal error
(``settled.py``): each condition that rules settling out, and the same answer as a search of
every node, whichever way it goes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.allocator.builders import DRV, claim, dev, device_class, first_available, node, req, rslice
from tests.allocator.builders import searched_nodes as searched
from webhook.allocator import Call, Code, Limits, allocate, model_for
from webhook.allocator.claims import parse_claim
from webhook.allocator.settled import settles
from webhook.cli.simulate import simulate_objects
from webhook.gates import FeatureGates
from webhook.state.base import ClusterSnapshot

NODES = 6
ANY_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any"}, "spec": {}}
OTHER = "other.example.com"
ATTR = f'device.attributes["{DRV}"].model == "a"'
EXPERIMENTAL = {"DRADeviceCompatibilityGroups": True, "DRAListTypeAttributes": True}


def cluster(*, later: dict[str, Any] | None = None, cls: dict[str, Any] | None = None,
            driver: str = DRV) -> list[dict[str, Any]]:
    """``NODES`` nodes with one device of model "a" each; node n03's device gets ``later``
    (its fields replaced), of ``driver``."""
    objs: list[dict[str, Any]] = [cls or device_class(), ANY_CLASS]
    for i in range(NODES):
        d = dev("d", attrs={"model": "a"})
        if i == 3 and later is not None:
            d.update(later)
        objs += [node(f"n{i:02d}"),
                 rslice(f"s{i}", [d], node_name=f"n{i:02d}", pool=f"p{i}", driver=driver if i == 3 else DRV)]
    return objs


def gates(**on: bool) -> FeatureGates:
    return FeatureGates().with_overrides(on)


NEG_VALUE = {"capacity": {"mem": {"value": "-1"}}}
NEG_DEFAULT = {"capacity": {"mem": {"value": "4", "requestPolicy": {"default": "-1"}}}}
NO_MODEL = {"attributes": {}}

# (id, cluster, claims, gates, settles)
SETTLES = [
    ("plain-driver-class", cluster(), [claim("c", req())], gates(), True),
    ("class-without-selectors", cluster(), [claim("c", req(cls="any"))], gates(), True),
    ("request-selector-on-the-driver", cluster(), [claim("c", req(selectors=[f'device.driver == "{DRV}"']))],
     gates(), True),
    ("single-quoted-driver", cluster(), [claim("c", req(selectors=[f"device.driver=='{DRV}'"]))], gates(), True),
    ("two-drivers-select-nothing", cluster(), [claim("c", req(selectors=[f'device.driver == "{OTHER}"']))],
     gates(), True),
    ("first-available-exact-count", cluster(), [claim("c", first_available("f", req("a", 2), req("b")))],
     gates(), True),
    ("two-claims-plain", cluster(), [claim("c", req()), claim("d", req(count=2))], gates(), True),
    # Selectors that read more than the driver settle when no device of the state makes one raise,
    # each evaluated as the search would (class selectors first, up to the first false).
    ("attribute-selector", cluster(), [claim("c", req(selectors=[ATTR]))], gates(), True),
    ("driver-and-attribute", cluster(), [claim("c", req(selectors=[f'device.driver == "{DRV}" && {ATTR}']))],
     gates(), True),
    ("driver-not-equal", cluster(), [claim("c", req(selectors=[f'device.driver != "{OTHER}"']))], gates(), True),
    ("escaped-driver-literal", cluster(), [claim("c", req(selectors=['device.driver == "a\\u0062"']))],
     gates(), True),
    ("class-with-attribute-selector",
     cluster(cls={**device_class(), "spec": {"selectors": [{"cel": {"expression": ATTR}}]}}),
     [claim("c", req())], gates(), True),
    ("first-available-with-attribute-subrequest", cluster(),
     [claim("c", first_available("f", req("a"), req("b", selectors=[ATTR])))], gates(), True),
    ("one-claim-of-two-reads-attributes", cluster(), [claim("c", req()), claim("d", req(selectors=[ATTR]))],
     gates(), True),
    ("attribute-missing-on-a-later-node", cluster(later=NO_MODEL), [claim("c", req(selectors=[ATTR]))],
     gates(), False),
    ("attribute-of-another-type-on-a-later-node", cluster(later={"attributes": {"model": {"int": 1}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), False),
    ("attribute-value-differs-on-a-later-node", cluster(later={"attributes": {"model": {"string": "b"}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), True),
    ("has-guard-makes-a-missing-attribute-safe", cluster(later=NO_MODEL),
     [claim("c", req(selectors=[f'has(device.attributes["{DRV}"].model) && {ATTR}']))], gates(), True),
    ("class-rejects-the-device-that-would-raise", cluster(later=NO_MODEL, driver=OTHER),
     [claim("c", req(selectors=[ATTR]))], gates(), True),
    ("any-class-reaches-the-device-that-would-raise", cluster(later=NO_MODEL, driver=OTHER),
     [claim("c", req(cls="any", selectors=[ATTR]))], gates(), False),
    ("unsupported-attribute-anywhere", cluster(later={"attributes": {"model": {"string": "a"}, "odd": {}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), False),
    ("unparsable-version-anywhere", cluster(later={"attributes": {"model": {"string": "a"}, "v": {"version": "x"}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), False),
    ("capacity-missing-on-other-nodes", cluster(later={"capacity": {"mem": {"value": "4"}}}),
     [claim("c", req(selectors=[f'device.capacity["{DRV}"].mem.compareTo(quantity("1")) >= 0']))],
     gates(), False),
    ("macro-over-the-attribute-map", cluster(),
     [claim("c", req(selectors=[f'device.attributes["{DRV}"].exists(k, k == "model")']))], gates(), False),
    ("computed-attribute-key", cluster(),
     [claim("c", req(selectors=[f'device.attributes["{DRV}"]["mo" + "del"] == "a"']))], gates(), False),
    ("attribute-selector-and-negative-capacity", cluster(later=NEG_VALUE), [claim("c", req(selectors=[ATTR]))],
     gates(), False),
    ("all-mode", cluster(), [claim("c", req(mode="All"))], gates(), False),
    ("capacity-request", cluster(), [claim("c", req(capacity={"requests": {"mem": "1"}}))], gates(), False),
    ("one-claim-of-two-not-plain", cluster(), [claim("c", req()), claim("d", req(mode="All"))],
     gates(), False),
    ("derived-attribute", cluster(),
     [claim("c", req(derivedAttributes=[{"name": "derived/m", "expression": f'device.attributes["{DRV}"].model'}]),
            constraints=[{"matchAttribute": "derived/m"}])],
     gates(**EXPERIMENTAL, DRADerivedAttributes=True), False),
    ("negative-capacity-value", cluster(later=NEG_VALUE), [claim("c", req())], gates(), False),
    ("negative-capacity-default", cluster(later=NEG_DEFAULT), [claim("c", req())], gates(), False),
    ("negative-capacity-gate-off", cluster(later=NEG_VALUE), [claim("c", req())],
     gates(DRAConsumableCapacity=False, DRAFractionalCapacityRange=False), True),
    ("negative-capacity-of-an-unselected-driver", cluster(later=NEG_VALUE, driver=OTHER), [claim("c", req())],
     gates(), True),
    ("negative-capacity-any-driver", cluster(later=NEG_VALUE, driver=OTHER), [claim("c", req(cls="any"))],
     gates(), False),
    ("driver-class-and-an-unsupported-attribute", cluster(later={"attributes": {"odd": {}}}),
     [claim("c", req())], gates(), False),
    ("driver-class-and-an-unparsable-capacity", cluster(later={"capacity": {"mem": {"value": "lots"}}}),
     [claim("c", req())], gates(DRAConsumableCapacity=False, DRAFractionalCapacityRange=False), False),
    ("positive-capacity", cluster(later={"capacity": {"mem": {"value": "4"}}}), [claim("c", req())], gates(), True),
]


@pytest.mark.parametrize(("objs", "raws", "gate_set", "want"), [pytest.param(*row[1:], id=row[0]) for row in SETTLES])
def test_settles_only_where_no_node_can_raise_a_fatal_error(objs: list[dict[str, Any]], raws: list[dict[str, Any]],
                                                            gate_set: FeatureGates, want: bool) -> None:
    model = model_for(ClusterSnapshot.from_objects(objs), gate_set)
    assert settles([parse_claim(r, model) for r in raws], model) is want


HELD_P0_P2 = claim("held", req(), allocation=[{"request": "req-0", "driver": DRV, "pool": f"p{i}", "device": "d"}
                                              for i in range(3)])
SEARCH_ON = None
"""``ANSWERS``' last column when the one-shot call searches the nodes the full search does."""

# (id, cluster, claims, gates, the node the one-shot call stops after)
ANSWERS = [
    ("all-fit-settles", cluster(), [claim("c", req())], gates(), "n00"),
    ("two-claims-settle", cluster() + [rslice("x", [dev("d2")], node_name="n00", pool="px")],
     [claim("c", req()), claim("d", req())], gates(), "n00"),
    ("later-node-fits-settles-there", cluster(later={"name": "e"}) + [HELD_P0_P2], [claim("c", req())], gates(), "n03"),
    ("cel-error-later-is-searched", cluster(later=NO_MODEL), [claim("c", req(selectors=[ATTR]))], gates(), SEARCH_ON),
    ("negative-capacity-later-is-searched", cluster(later=NEG_VALUE), [claim("c", req())], gates(), SEARCH_ON),
    ("negative-capacity-gate-off-settles", cluster(later=NEG_VALUE), [claim("c", req())],
     gates(DRAConsumableCapacity=False, DRAFractionalCapacityRange=False), "n00"),
    ("attribute-selector-all-fit-settles", cluster(), [claim("c", req(selectors=[ATTR]))], gates(), "n00"),
    ("attribute-value-differs-later-settles", cluster(later={"attributes": {"model": {"string": "b"}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), "n00"),
    ("cel-type-error-later-is-searched", cluster(later={"attributes": {"model": {"int": 1}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), SEARCH_ON),
    ("unsupported-attribute-later-is-searched", cluster(later={"attributes": {"model": {"string": "a"}, "odd": {}}}),
     [claim("c", req(selectors=[ATTR]))], gates(), SEARCH_ON),
    ("nothing-fits", cluster(), [claim("c", req(count=2))], gates(), SEARCH_ON),
    ("driver-class-unsupported-attribute-later-is-searched", cluster(later={"attributes": {"odd": {}}}),
     [claim("c", req())], gates(), SEARCH_ON),
    ("driver-class-unparsable-capacity-later-is-searched", cluster(later={"capacity": {"mem": {"value": "lots"}}}),
     [claim("c", req())], gates(DRAConsumableCapacity=False, DRAFractionalCapacityRange=False), SEARCH_ON),
]


@pytest.mark.parametrize(("objs", "raws", "gate_set", "stop"), [pytest.param(*row[1:], id=row[0]) for row in ANSWERS])
def test_a_one_shot_call_answers_as_a_search_of_every_node(monkeypatch: pytest.MonkeyPatch,
                                                           objs: list[dict[str, Any]], raws: list[dict[str, Any]],
                                                           gate_set: FeatureGates, stop: str | None) -> None:
    model = model_for(ClusterSnapshot.from_objects(objs), gate_set)
    calls = searched(monkeypatch)
    every = allocate(raws, model, Call(limits=Limits(100_000)))
    every_calls = list(calls)
    calls.clear()
    one = allocate(raws, model, Call(limits=Limits(100_000), one_shot=True))
    assert calls == (every_calls if stop is SEARCH_ON else [n for n in every_calls if n <= stop])
    assert stop is SEARCH_ON or every_calls[-1] > stop  # the full search went on past it
    assert (one.feasible, one.node, one.kind, one.message, one.unchecked) == \
        (every.feasible, every.node, every.kind, every.message, every.unchecked)
    assert [[r.as_dict() for r in rs] for rs in one.results] == [[r.as_dict() for r in rs] for rs in every.results]
    if stop is SEARCH_ON:
        assert (one.reasons, one.steps, one.nodes_tried) == (every.reasons, every.steps, every.nodes_tried)


def test_the_fatal_error_a_later_node_raises_still_fails_a_one_shot_call() -> None:
    model = model_for(ClusterSnapshot.from_objects(cluster(later=NEG_VALUE)), gates())
    out = allocate([claim("c", req())], model, Call(one_shot=True))
    assert not out.feasible and out.summary is not None
    assert out.summary.code == Code.FATAL and out.summary.node == "n03"
    assert "capacity value is negative" in out.message


def test_simulate_is_a_one_shot_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = searched(monkeypatch)
    sim = simulate_objects([claim("c", req())], ClusterSnapshot.from_objects(cluster()), gates(), None)
    assert sim.outcome.feasible and sim.outcome.node == "n00" and calls == ["n00"]
    assert not sim.outcome.unchecked
