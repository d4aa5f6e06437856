"""Generated pools: the ResourceSlices of one driver's pool, for the pool lint (`poollint.py`).

Names come from small sets, so that devices and counter sets defined twice across slices (and
within one), consumed counter sets and counters that no slice defines, and valid pools all turn
up often. `publish_pool` gives one generation, as upstream's driver helper publishes a pool (the
oracle judges exactly these); `stored_pool` adds what a cluster can hold besides: older
generations, counts that do not match or disagree, per-device node selection, compatibility
groups, slices with different node selection.

Builders are plain functions of a `random.Random`; the strategies draw one seeded Random each.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

DRIVER = "gpu.example.com"
POOL = "pool-a"
SETS = ("set-a", "set-b", "set-c")
COUNTERS = ("memory", "cores", "engines")
DEVICES = ("gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4")
UNDEFINED = "undefined"


def _counter_sets(rnd: random.Random) -> list[dict[str, Any]]:
    return [{"name": rnd.choice(SETS),
             "counters": {c: {"value": f"{rnd.randint(1, 8)}Gi"} for c in rnd.sample(COUNTERS, rnd.randint(1, 3))}}
            for _ in range(rnd.randint(1, 2))]


def _consumption(rnd: random.Random) -> dict[str, Any]:
    names = list(COUNTERS) + ([UNDEFINED] if rnd.random() < 0.15 else [])
    counter_set = rnd.choice(SETS) if rnd.random() < 0.9 else UNDEFINED
    return {"counterSet": counter_set,
            "counters": {c: {"value": "1Gi"} for c in rnd.sample(names, rnd.randint(1, 2))}}


def _devices(rnd: random.Random, n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        dev: dict[str, Any] = {"name": rnd.choice(DEVICES)}
        if rnd.random() < 0.6:
            dev["consumesCounters"] = [_consumption(rnd) for _ in range(rnd.randint(1, 2))]
        out.append(dev)
    return out


def _slice(i: int, generation: int, count: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{POOL}-{i}"},
            "spec": {"driver": DRIVER, "nodeName": "worker-1",
                     "pool": {"name": POOL, "generation": generation, "resourceSliceCount": count}}}


def build_publish_pool(rnd: random.Random) -> list[dict[str, Any]]:
    """One generation of one pool: counter-set slices and device slices, in order. Half of them
    are built to be valid (then, sometimes, spoiled in one place), half from names drawn freely."""
    n = rnd.randint(1, 4)
    slices = []
    for i in range(n):
        sl = _slice(i, 1, n)
        if rnd.random() < 0.35:
            sl["spec"]["sharedCounters"] = _counter_sets(rnd)
        else:
            sl["spec"]["devices"] = _devices(rnd, rnd.randint(1, 3))
        slices.append(sl)
    if rnd.random() < 0.5:
        _make_valid(slices)
        if rnd.random() < 0.3:
            _spoil(rnd, slices)
    return slices


def _make_valid(slices: list[dict[str, Any]]) -> None:
    """Unique names everywhere, and every consumption of a counter the pool defines."""
    defined: dict[str, set[str]] = {}
    for i, sl in enumerate(slices):
        for j, cs in enumerate(sl["spec"].get("sharedCounters", [])):
            cs["name"] = f"set-{i}-{j}"
            defined[cs["name"]] = set(cs["counters"])
    for i, sl in enumerate(slices):
        for j, dev in enumerate(sl["spec"].get("devices", [])):
            dev["name"] = f"gpu-{i}-{j}"
            if not defined:
                dev.pop("consumesCounters", None)
            for cc in dev.get("consumesCounters", []):
                cc["counterSet"] = sorted(defined)[(i + j) % len(defined)]
                cc["counters"] = {c: {"value": "1Gi"} for c in sorted(defined[cc["counterSet"]])[:1]}


def _spoil(rnd: random.Random, slices: list[dict[str, Any]]) -> None:
    """One problem in an otherwise valid pool."""
    devices = [d for sl in slices for d in sl["spec"].get("devices", [])]
    sets = [cs for sl in slices for cs in sl["spec"].get("sharedCounters", [])]
    consumptions = [cc for d in devices for cc in d.get("consumesCounters", [])]
    how = rnd.choice(("device", "set", "consumed-set", "consumed-counter"))
    if how == "device" and len(devices) > 1:
        devices[-1]["name"] = devices[0]["name"]
    elif how == "set" and len(sets) > 1:
        sets[-1]["name"] = sets[0]["name"]
    elif how == "consumed-set" and consumptions:
        consumptions[-1]["counterSet"] = UNDEFINED
    elif consumptions:
        consumptions[0]["counters"][UNDEFINED] = {"value": "1Gi"}


def build_stored_pool(rnd: random.Random) -> list[dict[str, Any]]:
    """A pool as a cluster may store it: ``build_publish_pool`` plus generations, counts, node
    selection and gate-dependent fields at their edges."""
    slices = build_publish_pool(rnd)
    for sl in slices:
        spec, pool = sl["spec"], sl["spec"]["pool"]
        roll = rnd.random()
        if roll < 0.1:
            pool["generation"] = rnd.choice((0, 2))
        elif roll < 0.2:
            pool["resourceSliceCount"] = rnd.choice((1, len(slices) + 1, max(1, len(slices) - 1)))
        if rnd.random() < 0.1:
            del spec["nodeName"]
            spec[rnd.choice(("allNodes", "perDeviceNodeSelection"))] = True
        if rnd.random() < 0.1 and spec.get("devices"):
            cc = spec["devices"][0].setdefault("consumesCounters", [_consumption(rnd)])
            cc[0]["compatibilityGroups"] = ["g1"]
    if rnd.random() < 0.15:
        del slices[rnd.randrange(len(slices))]
    return slices


def publish_pools() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.randoms(use_true_random=True).map(build_publish_pool)


def stored_pools() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.randoms(use_true_random=True).map(build_stored_pool)
