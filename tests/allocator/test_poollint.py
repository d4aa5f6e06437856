"""Pool lint (`webhook/allocator/poollint.py`): one table of pools and the findings each gets,
the attachment of findings to the slices under review, and the wording."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.allocator.poollint import Check, Place, PoolFinding, finding, findings_for, lint_pool, text
from webhook.gates import FeatureGates, Gate

DRIVER, POOL = "gpu.example.com", "node-a"
GATES = FeatureGates()


def sl(name: str, *, gen: int = 1, count: int = 1, node: str = "node-a", devices: Any = None,
       counters: Any = None, **spec: Any) -> dict[str, Any]:
    """A stored slice of the pool."""
    s: dict[str, Any] = {"driver": DRIVER, "pool": {"name": POOL, "generation": gen, "resourceSliceCount": count}}
    if node:
        s["nodeName"] = node
    if devices is not None:
        s["devices"] = devices
    if counters is not None:
        s["sharedCounters"] = counters
    s.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": s}


def dev(name: str, *consumes: tuple[str, str], groups: list[str] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if consumes:
        d["consumesCounters"] = [{"counterSet": cs, "counters": {c: {"value": "1Gi"}},
                                  **({"compatibilityGroups": groups} if groups else {})} for cs, c in consumes]
    return d


def cset(name: str, *counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {c: {"value": "8Gi"} for c in counters}}


def f(check: Check, *places: tuple[str, str], **kw: Any) -> PoolFinding:
    return PoolFinding(check, DRIVER, POOL, tuple(Place(s, p) for s, p in places), **kw)


COUNTERS = sl("a", count=2, counters=[cset("gpu-0", "memory")])


@pytest.mark.parametrize(("slices", "gates", "complete", "want"), [
    pytest.param([sl("a", devices=[dev("gpu-0")])], {}, True, [], id="one-slice-pool"),
    pytest.param([COUNTERS, sl("b", count=2, devices=[dev("mig-0", ("gpu-0", "memory"))])], {}, True, [],
                 id="counters-and-devices"),
    pytest.param([sl("a", count=2, devices=[dev("gpu-0")]), sl("b", count=2, devices=[dev("gpu-0")])], {}, True,
                 [f(Check.DUPLICATE_DEVICE, ("a", "spec.devices[0].name"), ("b", "spec.devices[0].name"),
                    name="gpu-0")], id="device-in-two-slices"),
    pytest.param([COUNTERS, sl("b", count=2, counters=[cset("gpu-0", "memory")])], {}, True,
                 [f(Check.DUPLICATE_COUNTER_SET, ("a", "spec.sharedCounters[0].name"),
                    ("b", "spec.sharedCounters[0].name"), name="gpu-0")], id="counter-set-in-two-slices"),
    pytest.param([sl("a", devices=[dev("mig-0", ("gpu-9", "memory"))])], {}, True,
                 [f(Check.UNKNOWN_COUNTER_SET, ("a", "spec.devices[0].consumesCounters[0].counterSet"),
                    name="gpu-9", device="mig-0")], id="counter-set-nowhere"),
    pytest.param([COUNTERS, sl("b", count=2, devices=[dev("mig-0", ("gpu-0", "cores"))])], {}, True,
                 [f(Check.UNKNOWN_COUNTER, ("b", "spec.devices[0].consumesCounters[0].counters[cores]"),
                    ("a", "spec.sharedCounters[0].name"), name="cores", device="mig-0", counter_set="gpu-0")],
                 id="counter-not-in-its-set"),
    pytest.param([sl("a", count=3, devices=[dev("gpu-0")]), sl("b", count=3, devices=[dev("gpu-1")])], {}, True,
                 [f(Check.SLICE_COUNT, ("a", "spec.pool.resourceSliceCount"), ("b", "spec.pool.resourceSliceCount"),
                    have=2, want=3)], id="fewer-slices-than-the-count"),
    pytest.param([sl("a", count=3, devices=[dev("gpu-0")])], {}, False, [], id="fewer-slices-live-is-a-publish-moment"),
    pytest.param([sl("b", count=2, devices=[dev("mig-0", ("gpu-0", "memory"))])], {}, False, [],
                 id="live-the-missing-slice-may-define-the-counter-set"),
    pytest.param([sl("a", devices=[dev("gpu-0")]), sl("b", devices=[dev("gpu-1")])], {}, False,
                 [f(Check.SLICE_COUNT, ("a", "spec.pool.resourceSliceCount"), ("b", "spec.pool.resourceSliceCount"),
                    have=2, want=1)], id="more-slices-than-the-count-even-live"),
    pytest.param([sl("a", gen=1, devices=[dev("gpu-0")]), sl("b", gen=2, devices=[dev("gpu-0")])], {}, True,
                 [f(Check.OLDER_GENERATION, ("a", "spec.pool.generation"), have=1, want=2)],
                 id="an-older-generation-is-not-a-duplicate"),
    pytest.param([sl("a", count=2, devices=[dev("gpu-0")]), sl("b", count=3, devices=[dev("gpu-1")])], {}, True,
                 [f(Check.COUNTS_DISAGREE, ("a", "spec.pool.resourceSliceCount"),
                    ("b", "spec.pool.resourceSliceCount"))], id="counts-disagree"),
    pytest.param([sl("a", devices=[dev("mig-0", ("gpu-0", "memory"), groups=["g"])], counters=None),
                  ], {}, True,
                 [f(Check.HIDDEN_BY_GATE, ("a", "spec"), name=Gate.DRA_DEVICE_COMPATIBILITY_GROUPS),
                  f(Check.UNKNOWN_COUNTER_SET, ("a", "spec.devices[0].consumesCounters[0].counterSet"), name="gpu-0",
                    device="mig-0")], id="groups-hidden-while-the-gate-is-off"),
    pytest.param([COUNTERS, sl("b", count=2, devices=[dev("mig-0", ("gpu-0", "memory"))])],
                 {Gate.DRA_PARTITIONABLE_DEVICES: False}, True,
                 [f(Check.HIDDEN_BY_GATE, ("a", "spec"), name=Gate.DRA_PARTITIONABLE_DEVICES)],
                 id="counter-slice-ignored-without-partitionable-devices"),
    pytest.param([sl("a", count=2, devices=[dev("gpu-0")]), sl("b", count=2, node="", allNodes=True,
                                                                 devices=[dev("gpu-1")])], {}, True,
                 [f(Check.MIXED_NODE_SELECTION, ("a", "spec.nodeName"), ("b", "spec.allNodes"))],
                 id="node-local-and-network-attached-mixed"),
])
def test_lint_pool(slices: list[dict[str, Any]], gates: dict[str, bool], complete: bool,
                   want: list[PoolFinding]) -> None:
    fg = GATES.with_overrides({str(k): v for k, v in gates.items()})
    assert lint_pool(DRIVER, POOL, slices, fg, complete=complete) == want


def test_a_finding_goes_to_the_slices_it_names_or_to_every_subject_when_it_names_none() -> None:
    a, b, c = (sl(n, count=3, devices=[dev(d)]) for n, d in (("a", "gpu-0"), ("b", "gpu-0"), ("c", "gpu-1")))
    got = findings_for([a, b, c], [], GATES, complete=True)
    assert [[x.check for x in fs] for fs in got] == [[Check.DUPLICATE_DEVICE], [Check.DUPLICATE_DEVICE], []]
    # Reviewing c alone against a state holding a and b: the duplicate names no subject, so c gets it.
    (alone,) = findings_for([c], [a, b], GATES, complete=False)
    assert [x.check for x in alone] == [Check.DUPLICATE_DEVICE]


def test_a_subject_replaces_the_state_slice_of_its_name() -> None:
    old = sl("a", devices=[dev("gpu-0"), dev("gpu-0")])
    new = sl("a", devices=[dev("gpu-0")])
    assert findings_for([new], [old], GATES, complete=False) == [[]]


def test_things_that_are_not_slices_get_nothing() -> None:
    assert findings_for([{"kind": "ResourceClaim"}, "x"], [], GATES, complete=True) == [[], []]


@pytest.mark.parametrize(("finding", "want"), [
    pytest.param(f(Check.DUPLICATE_DEVICE, ("a", "spec.devices[0].name"), ("b", "spec.devices[1].name"), name="gpu-0"),
                 "pool: gpu.example.com/node-a: device gpu-0 is defined twice (a spec.devices[0].name, "
                 "b spec.devices[1].name); upstream's driver helper refuses to publish the pool and the scheduler "
                 "allocates none of its devices", id="duplicate-device"),
    pytest.param(f(Check.SLICE_COUNT, ("a", "spec.pool.resourceSliceCount"), have=1, want=3),
                 "pool: gpu.example.com/node-a: 1 slice(s) at its newest generation but "
                 "spec.pool.resourceSliceCount is 3 (a); the pool is incomplete and the scheduler allocates none "
                 "of its devices", id="slice-count"),
    pytest.param(f(Check.HIDDEN_BY_GATE, ("a", "spec"), name=Gate.DRA_DEVICE_COMPATIBILITY_GROUPS),
                 "pool: gpu.example.com/node-a: the scheduler does not see slices while DRADeviceCompatibilityGroups "
                 "is off (a); the pool is incomplete and the scheduler allocates none of its devices",
                 id="names-the-gate"),
    pytest.param(f(Check.SLICE_COUNT, *((n, "spec.pool.resourceSliceCount") for n in "abcdef"), have=6, want=7),
                 "pool: gpu.example.com/node-a: 6 slice(s) at its newest generation but spec.pool.resourceSliceCount "
                 "is 7 (a, b, c, d and 2 more); the pool is incomplete and the scheduler allocates none of its devices",
                 id="long-lists-are-cut"),
])
def test_wording(finding: PoolFinding, want: str) -> None:
    assert text(finding) == want


def test_the_terse_form_keeps_the_key_fact() -> None:
    dup = f(Check.DUPLICATE_DEVICE, ("gpu-node-a-0", "spec.devices[0].name"), ("gpu-node-a-1", "spec.devices[1].name"),
            name="gpu-0")
    assert text(dup, terse=True) == ("pool: gpu.example.com/node-a: device gpu-0 is defined twice "
                                     "(gpu-node-a-0, gpu-node-a-1)")
    got = finding(dup)
    assert got.line(120) == text(dup, terse=True) and got.line(10_000) == text(dup)
