"""``assert_satisfies``: re-checks an allocation from the raw objects, independently of the allocator.

Written from docs/allocator.md, not from the allocator's code: counters never exceeded, compatibility
groups intersect per counter set, shared capacities summed within the value, exclusive devices
not reused, request counts met.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from webhook.quantity import parse_quantity


def _q(v: Any) -> Fraction:
    return parse_quantity(v).value


def assert_satisfies(objects: list[dict[str, Any]], claims: list[dict[str, Any]],
                     allocations: list[dict[str, Any]]) -> None:
    devices: dict[tuple[str, str, str], dict[str, Any]] = {}
    counter_sets: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    for o in objects:
        if o["kind"] != "ResourceSlice":
            continue
        s = o["spec"]
        for d in s.get("devices", []):
            devices[(s["driver"], s["pool"]["name"], d["name"])] = d
        for cs in s.get("sharedCounters", []):
            counter_sets[(s["driver"], s["pool"]["name"], cs["name"])] = {
                k: _q(v["value"]) for k, v in cs["counters"].items()}
    used: list[tuple[tuple[str, str, str], dict[str, Any]]] = []
    for o in objects:
        if o["kind"] == "ResourceClaim" and o.get("status", {}).get("allocation"):
            for r in o["status"]["allocation"]["devices"]["results"]:
                if not r.get("adminAccess"):
                    used.append(((r["driver"], r["pool"], r["device"]), r))
    assert len(allocations) == len(claims)
    for alloc, c in zip(allocations, claims, strict=True):
        want = 0
        for r in c["spec"]["devices"]["requests"]:
            body = r.get("exactly") or {}
            if body.get("allocationMode", "ExactCount") == "ExactCount" and "exactly" in r:
                want += body.get("count", 1)
                got = [x for x in alloc["results"] if x["request"] == r["name"]]
                assert len(got) == body.get("count", 1), (r["name"], got)
        assert len(alloc["results"]) >= want
        for x in alloc["results"]:
            key = (x["driver"], x["pool"], x["device"])
            assert key in devices, key
            used.append((key, x))
    # exclusive devices are never used twice; shared ones stay within their capacity
    seen: dict[tuple[str, str, str], int] = {}
    for key, r in used:
        if r.get("adminAccess"):
            continue
        seen[key] = seen.get(key, 0) + 1
    for key, n in seen.items():
        d = devices.get(key, {})
        if not d.get("allowMultipleAllocations"):
            assert n == 1, f"{key} used {n} times"
        else:
            for cap, spec in d.get("capacity", {}).items():
                total = sum(_q(r.get("consumedCapacity", {}).get(cap, 0)) for k, r in used if k == key)
                assert total <= _q(spec["value"]), (key, cap, total)
    # counters: each allocated device charged once
    charged: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    groups: dict[tuple[str, str, str], list[frozenset[str]]] = {}
    for key in {k for k, r in used if not r.get("adminAccess")}:
        for cc in devices.get(key, {}).get("consumesCounters", []):
            cs = (key[0], key[1], cc["counterSet"])
            for name, v in cc["counters"].items():
                charged.setdefault(cs, {})
                charged[cs][name] = charged[cs].get(name, Fraction(0)) + _q(v["value"])
            groups.setdefault(cs, []).append(frozenset(cc.get("compatibilityGroups") or ()))
    for cs, amounts in charged.items():
        for name, total in amounts.items():
            assert total <= counter_sets[cs][name], f"counter {name} of {cs} exceeded: {total}"
    for cs, lists in groups.items():
        if any(lists):
            assert all(lists), f"grouped and group-less devices mixed on {cs}"
            inter = frozenset.intersection(*lists)
            assert inter, f"compatibility groups do not intersect on {cs}"
