"""Differential 2, ResourceSlice: generated slices at the edges (`gen_slices`), judged by the real
1.37 apiserver in `all-on` and one other gate profile each; zero disagreements.

Slices with a requestPolicy go to `defaults` every other time (DRAFractionalCapacityRange is off
there, as in a default 1.37 cluster), the rest cycle through the other profiles. The generator
itself is checked without Go: a sample must reach every edge it promises.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.differential.conftest import scale
from tests.differential.gen_slices import resource_slices
from tests.differential.gen_zeros import containers
from tests.differential.generated import draw_many, judge, report
from tests.differential.oracle import ApiOracle
from tests.differential.profiles import profiles
from webhook.admission.decode import check as decode_check

COUNT = 2000
SALT = 15_0002


@functools.cache
def _objects(n: int) -> list[dict[str, Any]]:
    """``n`` distinct slices. Hypothesis mutates each fresh example a few times and many of the
    mutants equal an earlier one, so it draws about twice as many and keeps the new ones."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for salt in range(SALT, SALT + 5):
        for o in draw_many(resource_slices(), 2 * (n - len(out)) + 10, salt):
            key = json.dumps(o, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(o)
        if len(out) >= n:
            break
    return out[:n]


def _has_policy(obj: Any) -> bool:
    return '"requestPolicy": {' in json.dumps(obj)


def profile_picker(objects: list[Any]) -> Callable[[int], list[str]]:
    names = list(profiles())
    others = [p for p in names if p != "all-on"]
    plain = [p for p in others if p != "defaults"] or others

    def pick(i: int) -> list[str]:
        if "defaults" in others and _has_policy(objects[i]) and i % 2 == 0:
            return ["all-on", "defaults"]
        return ["all-on", (others if i % 3 else plain)[i % len(others if i % 3 else plain)]]
    return pick


@pytest.mark.differential
def test_generated_slices_agree_with_the_apiserver(api_oracle: ApiOracle) -> None:
    objects = _objects(COUNT * scale())
    assert len(objects) == COUNT * scale(), len(objects)
    found, total = judge(api_oracle, "slice", objects, profile_picker(objects))
    assert not found, report(found, total)
    assert total == 2 * len(objects)


# --- the generator reaches its edges (no Go needed) -----------------------------------------

def _spec(o: Any) -> dict[str, Any]:
    s = o.get("spec") if isinstance(o, dict) else None
    return s if isinstance(s, dict) else {}


def _devices(o: Any) -> list[dict[str, Any]]:
    d = _spec(o).get("devices")
    return [x for x in d if isinstance(x, dict)] if isinstance(d, list) else []


def _sizes(o: Any, member: str) -> set[int]:
    return {len(d[member]) for d in _devices(o) if isinstance(d.get(member), list | dict)}


def _cc(o: Any) -> list[dict[str, Any]]:
    return [c for d in _devices(o) if isinstance(d.get("consumesCounters"), list)
            for c in d["consumesCounters"] if isinstance(c, dict)]


EDGES: dict[str, Callable[[Any], bool]] = {
    **{f"devices-{n}": (lambda o, n=n: len(_devices(o)) == n) for n in (63, 64, 65, 127, 128, 129)},
    **{f"attributes-and-capacity-{n}": (lambda o, n=n: any(
        len(d.get("attributes") or {}) + len(d.get("capacity") or {}) == n for d in _devices(o)
        if isinstance(d.get("attributes") or {}, dict) and isinstance(d.get("capacity") or {}, dict)))
       for n in (31, 32, 33)},
    **{f"counter-sets-{n}": (lambda o, n=n: isinstance(_spec(o).get("sharedCounters"), list)
                             and len(_spec(o)["sharedCounters"]) == n) for n in (7, 8, 9)},
    **{f"counters-{n}": (lambda o, n=n: any(isinstance(c.get("counters"), dict) and len(c["counters"]) == n
                                            for c in _cc(o))) for n in (31, 32, 33)},
    **{f"consumes-counters-{n}": (lambda o, n=n: n in _sizes(o, "consumesCounters")) for n in (1, 2, 3)},
    **{f"groups-{n}": (lambda o, n=n: any(isinstance(c.get("compatibilityGroups"), list)
                                          and len(c["compatibilityGroups"]) == n for c in _cc(o)))
       for n in (0, 1, 2, 3)},
    "groups-null": lambda o: any("compatibilityGroups" in c and c["compatibilityGroups"] is None for c in _cc(o)),
    **{f"taints-{n}": (lambda o, n=n: n in _sizes(o, "taints")) for n in (15, 16, 17)},
    **{f"binding-conditions-{n}": (lambda o, n=n: n in _sizes(o, "bindingConditions")) for n in (4, 5)},
    "request-policy": _has_policy,
    **{f"valid-values-{n}": (lambda o, n=n: any(len(p) == n for p in _policies(o, "validValues")))
       for n in (10, 11)},
    "per-device-node-selection": lambda o: _spec(o).get("perDeviceNodeSelection") is True,
    "partition-type": lambda o: "partitionTypeAttribute" in _spec(o),
    "skip-node-operations": lambda o: "skipNodeOperations" in _spec(o),
    "node-allocatable": lambda o: any("nodeAllocatableResources" in d for d in _devices(o)),
    "list-attribute": lambda o: '"ints": [' in json.dumps(o) or '"strings": [' in json.dumps(o),
    "three-part-key": lambda o: any("a/b/c" in (d.get("attributes") or {}) for d in _devices(o)
                                    if isinstance(d.get("attributes"), dict)),
    "empty-driver": lambda o: _spec(o).get("driver") == "",
    "pool-with-slash": lambda o: "/" in str((_spec(o).get("pool") or {}).get("name", "")
                                            if isinstance(_spec(o).get("pool"), dict) else ""),
    "decode-error": lambda o: decode_check(o) is not None,
    **{f"{name}-list-item": (lambda o, z=z: any(isinstance(c, list) and any(type(i) is type(z) and i == z for i in c)
                                                for c in containers(_spec(o))))
       for name, z in (("null", None), ("empty-object", {}), ("empty-string", ""))},
}


def _policies(o: Any, member: str) -> list[Any]:
    out = []
    for d in _devices(o):
        caps = d.get("capacity")
        for c in caps.values() if isinstance(caps, dict) else []:
            p = c.get("requestPolicy") if isinstance(c, dict) else None
            if isinstance(p, dict) and isinstance(p.get(member), list):
                out.append(p[member])
    return out


def test_the_generator_reaches_every_edge() -> None:
    sample = _objects(COUNT)
    missing = [name for name, hit in EDGES.items() if not any(hit(o) for o in sample)]
    assert not missing, missing
