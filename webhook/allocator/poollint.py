"""Pool lint: what is wrong with a DRA driver's pool as a whole, which the apiserver never checks.

The apiserver validates one ResourceSlice at a time; a pool is all slices with the same driver
and pool name. Pool-wide problems surface only at runtime, so this module judges a pool from
three sources, and each finding says which:

- **publish**: what upstream's driver helper (``k8s.io/dynamic-resource-allocation/resourceslice``)
  refuses to publish, checked over every slice of the pool in order: a counter set defined
  twice, a device defined twice, a counter set or a counter that a device consumes but the pool
  does not define. The scheduler's allocator treats such a pool as invalid and allocates none of
  its devices. (``upstream/cmd/pool-check`` drives the helper as the test oracle.)
- **allocator**: what the scheduler does with the slices it finds (``pools.py``, §2): it ignores
  slices of an older generation than the pool's newest; it treats the pool as incomplete, and
  allocates none of its devices, when the newest generation has fewer or more slices than
  ``resourceSliceCount`` (the count of the slice it meets first, so slices that disagree on it
  make the answer depend on order); and while ``DRAPartitionableDevices`` or
  ``DRADeviceCompatibilityGroups`` is off it does not see the slices that use them
  (``hiding_gate``): slices hidden by the first still count towards the pool's slices, slices
  hidden by the second do not, which makes their pool incomplete.
- **helper shape**: the helper gives every slice of a pool the same node selection (the owner
  node's name, or the pool's node selector, or all nodes, or per-device selection); a pool that
  mixes node-local and network-attached slices is one no driver built on it publishes.

Only the newest generation's slices are judged for the publish and shape checks. ``complete``
says whether the slices are the whole pool as the driver means to publish it (``review`` of a
driver's files) or a moment of a live cluster (the webhook, an UPDATE), where a pool with too
few slices or an older generation is what every multi-slice publish looks like for a moment:
those two findings are made only for a complete pool, and a consumed counter set or counter
that no slice defines only when the pool has all its slices (a slice still to come may).

Pure: raw slice dicts in (as stored, after the apiserver's mutation), findings out; a finding is
a code plus fields, worded once (``text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from webhook.allocator.model import SliceGates, hiding_gate
from webhook.findings import Finding
from webhook.gates import FeatureGates, Gate
from webhook.raw import as_dict, as_list

PREFIX = "pool: "
PoolKey = tuple[str, str]
"""(driver, pool name)."""


class Check(StrEnum):
    """What a pool gets wrong. The value is a stable kebab-case id (tests, ``poolFindings``)."""

    DUPLICATE_COUNTER_SET = "duplicate-counter-set"
    DUPLICATE_DEVICE = "duplicate-device"
    UNKNOWN_COUNTER_SET = "unknown-counter-set"
    UNKNOWN_COUNTER = "unknown-counter"
    OLDER_GENERATION = "older-generation"
    SLICE_COUNT = "slice-count"
    COUNTS_DISAGREE = "slice-counts-disagree"
    HIDDEN_BY_GATE = "hidden-by-gate"
    MIXED_NODE_SELECTION = "mixed-node-selection"


PUBLISH = (Check.DUPLICATE_COUNTER_SET, Check.DUPLICATE_DEVICE, Check.UNKNOWN_COUNTER_SET, Check.UNKNOWN_COUNTER)
"""The checks upstream's driver helper makes before it publishes a pool (its order)."""


@dataclass(frozen=True, slots=True)
class Place:
    """A field of one slice."""

    slice: str
    field: str

    def __str__(self) -> str:
        return f"{self.slice} {self.field}"


@dataclass(frozen=True, slots=True)
class PoolFinding:
    """One problem of one pool: the check, the pool, the fields and the names it is about."""

    check: Check
    driver: str
    pool: str
    places: tuple[Place, ...]
    """The fields involved, slice by slice (for a pool-wide finding, one per slice)."""
    name: str = ""
    """The device, counter set or gate the finding is about."""
    device: str = ""
    """The consuming device (unknown counter set or counter)."""
    counter_set: str = ""
    """The counter set (unknown counter)."""
    have: int = 0
    want: int = 0
    """Slice counts (slice-count) or generations (older-generation: the older one, the newest)."""

    @property
    def slices(self) -> tuple[str, ...]:
        """The slices named, in order, each once."""
        return tuple(dict.fromkeys(p.slice for p in self.places))

    @property
    def publish(self) -> bool:
        """Whether upstream's driver helper refuses to publish the pool for it."""
        return self.check in PUBLISH

    @property
    def incomplete(self) -> bool:
        """Whether the scheduler finds the pool incomplete for it (and allocates none of its devices).

        Slices hidden by ``DRADeviceCompatibilityGroups`` do not count towards the pool's slices;
        slices hidden by ``DRAPartitionableDevices`` still do (the scheduler only ignores them).
        """
        if self.check == Check.HIDDEN_BY_GATE:
            return self.name == Gate.DRA_DEVICE_COMPATIBILITY_GROUPS
        return self.check in (Check.SLICE_COUNT, Check.COUNTS_DISAGREE)

    @property
    def label(self) -> str:
        return f"{self.driver}/{self.pool}"


# ---------------------------------------------------------------- raw slices




def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _name(sl: dict[str, Any]) -> str:
    return str(as_dict(sl.get("metadata")).get("name") or "")


def pool_key(sl: Any) -> PoolKey | None:
    """(driver, pool name) of a slice; None for something that is not a slice with a pool."""
    if not isinstance(sl, dict) or sl.get("kind") != "ResourceSlice":
        return None
    spec = as_dict(sl.get("spec"))
    driver, pool = spec.get("driver"), as_dict(spec.get("pool")).get("name")
    if not isinstance(driver, str) or not isinstance(pool, str):
        return None
    return driver, pool


def _generation(sl: dict[str, Any]) -> int:
    return _int(as_dict(as_dict(sl.get("spec")).get("pool")).get("generation"))


def _count(sl: dict[str, Any]) -> int:
    return _int(as_dict(as_dict(sl.get("spec")).get("pool")).get("resourceSliceCount"))


def _uses_groups(spec: dict[str, Any]) -> bool:
    return any(as_list(as_dict(cc).get("compatibilityGroups"))
               for dev in as_list(spec.get("devices")) for cc in as_list(as_dict(dev).get("consumesCounters")))


def _hiding_gates(sl: dict[str, Any], gates: SliceGates) -> list[str]:
    """Every gate that hides the slice from the scheduler (each has its own consequence)."""
    spec = as_dict(sl.get("spec"))
    found = (hiding_gate(per_device=spec.get("perDeviceNodeSelection") is not None,
                         counters=bool(as_list(spec.get("sharedCounters"))), groups=False, gates=gates),
             hiding_gate(per_device=False, counters=False, groups=_uses_groups(spec), gates=gates))
    return [str(g) for g in found if g is not None]


def _node_selection(spec: dict[str, Any]) -> tuple[str, str]:
    """(the field, a canonical value) of a slice's node selection."""
    if isinstance(spec.get("nodeName"), str) and spec["nodeName"]:
        return "spec.nodeName", f"node {spec['nodeName']}"
    if spec.get("allNodes") is True:
        return "spec.allNodes", "all nodes"
    if isinstance(spec.get("nodeSelector"), dict):
        return "spec.nodeSelector", "a node selector " + repr(sorted(repr(t) for t in
                                                                   as_list(spec["nodeSelector"].get("nodeSelectorTerms"))))
    if spec.get("perDeviceNodeSelection") is True:
        return "spec.perDeviceNodeSelection", "per device"
    return "spec", "none"


# ---------------------------------------------------------------- the checks


def publish_findings(driver: str, pool: str, slices: Sequence[dict[str, Any]]) -> list[PoolFinding]:
    """The driver helper's publish check, every problem in its order (it stops at the first)."""
    out: list[PoolFinding] = []
    sets: dict[str, tuple[Place, set[str]]] = {}
    for sl in slices:
        for i, cs in enumerate(as_list(as_dict(sl.get("spec")).get("sharedCounters"))):
            name = str(as_dict(cs).get("name") or "")
            here = Place(_name(sl), f"spec.sharedCounters[{i}].name")
            if name in sets:
                out.append(PoolFinding(Check.DUPLICATE_COUNTER_SET, driver, pool, (sets[name][0], here), name))
            else:
                sets[name] = (here, {str(k) for k in as_dict(as_dict(cs).get("counters"))})
    devices: dict[str, Place] = {}
    for sl in slices:
        for i, dev in enumerate(as_list(as_dict(sl.get("spec")).get("devices"))):
            dev = as_dict(dev)
            name = str(dev.get("name") or "")
            here = Place(_name(sl), f"spec.devices[{i}].name")
            if name in devices:
                out.append(PoolFinding(Check.DUPLICATE_DEVICE, driver, pool, (devices[name], here), name))
            else:
                devices[name] = here
            for j, cc in enumerate(as_list(dev.get("consumesCounters"))):
                cc = as_dict(cc)
                set_name = str(cc.get("counterSet") or "")
                where = f"spec.devices[{i}].consumesCounters[{j}]"
                if set_name not in sets:
                    out.append(PoolFinding(Check.UNKNOWN_COUNTER_SET, driver, pool,
                                           (Place(_name(sl), f"{where}.counterSet"),), set_name, device=name))
                    continue
                defined = sets[set_name][1]
                out.extend(PoolFinding(Check.UNKNOWN_COUNTER, driver, pool,
                                       (Place(_name(sl), f"{where}.counters[{c}]"), sets[set_name][0]),
                                       str(c), device=name, counter_set=set_name)
                           for c in as_dict(cc.get("counters")) if str(c) not in defined)
    return out


def lint_pool(driver: str, pool: str, slices: Sequence[dict[str, Any]], gates: FeatureGates, *,
              complete: bool = True) -> list[PoolFinding]:
    """Every finding for one pool (its slices in order, as stored); [] for a good pool.

    Allocator findings first (they decide which slices count), then the publish checks and the
    node-selection shape over the newest generation's slices.
    """
    out: list[PoolFinding] = []
    newest = max((_generation(s) for s in slices), default=0)
    current = [s for s in slices if _generation(s) == newest]
    older = [s for s in slices if _generation(s) != newest]
    if complete and older:
        oldest = min(_generation(s) for s in older)
        out.append(PoolFinding(Check.OLDER_GENERATION, driver, pool,
                               tuple(Place(_name(s), "spec.pool.generation") for s in older),
                               have=oldest, want=newest))
    counts = {_count(s) for s in current}
    if len(counts) > 1:
        out.append(PoolFinding(Check.COUNTS_DISAGREE, driver, pool,
                               tuple(Place(_name(s), "spec.pool.resourceSliceCount") for s in current)))
    want = _count(current[0]) if current else 0
    if len(current) > want or (complete and len(current) < want):
        out.append(PoolFinding(Check.SLICE_COUNT, driver, pool,
                               tuple(Place(_name(s), "spec.pool.resourceSliceCount") for s in current),
                               have=len(current), want=want))
    slice_gates = SliceGates.of(gates)
    hiding = [_hiding_gates(s, slice_gates) for s in current]
    for gate in dict.fromkeys(g for gs in hiding for g in gs):
        out.append(PoolFinding(Check.HIDDEN_BY_GATE, driver, pool,
                               tuple(Place(_name(s), "spec") for s, gs in zip(current, hiding, strict=True)
                                     if gate in gs), gate))
    whole = complete or len(current) >= want
    # A slice not seen yet may define what a device consumes: references are judged whole pools only.
    out.extend(f for f in publish_findings(driver, pool, current)
               if whole or f.check not in (Check.UNKNOWN_COUNTER_SET, Check.UNKNOWN_COUNTER))
    selections: dict[str, list[Place]] = {}
    for s in current:
        where, what = _node_selection(as_dict(s.get("spec")))
        selections.setdefault(what, []).append(Place(_name(s), where))
    if len(selections) > 1:
        out.append(PoolFinding(Check.MIXED_NODE_SELECTION, driver, pool,
                               tuple(p for places in selections.values() for p in places)))
    return out


def _member(sl: dict[str, Any]) -> str:
    """A slice's name within its pool; an unnamed one (generateName) is always a new member."""
    return _name(sl) or f"#{id(sl)}"


def index_pools(slices: Iterable[Any]) -> dict[PoolKey, dict[str, dict[str, Any]]]:
    """Slices by pool and then by name, in the order given (a later slice of a name replaces an
    earlier one in its place)."""
    out: dict[PoolKey, dict[str, dict[str, Any]]] = {}
    for sl in slices:
        key = pool_key(sl)
        if key is not None:
            members = out.setdefault(key, {})
            name = _member(sl)
            members[name] = sl
    return out


_LAST_INDEX: list[tuple[Any, dict[PoolKey, dict[str, dict[str, Any]]]]] = []
"""The index of the last tuple of slices indexed: a live state keeps its tuple until it changes,
so a request indexes the cluster's slices once per state change, not once per request."""


def _indexed(others: Iterable[Any]) -> dict[PoolKey, dict[str, dict[str, Any]]]:
    if not isinstance(others, tuple):
        return index_pools(others)
    last = _LAST_INDEX[0] if _LAST_INDEX else None
    if last is not None and last[0] is others:
        return last[1]
    got = index_pools(others)
    _LAST_INDEX[:] = [(others, got)]
    return got


def findings_for(subjects: Sequence[Any], others: Iterable[Any], gates: FeatureGates, *,
                 complete: bool) -> list[list[PoolFinding]]:
    """For each subject (a slice under review), the findings of its pool that concern it.

    A pool is judged over ``others`` (the cluster's slices) with the subjects replacing the
    slices of the same name (in their place). A finding concerns a subject when it names the subject, or when it
    names no subject at all (a problem among the other slices of its pool). Subjects that are
    not slices get []. Linear in the slices and findings (a pool of 10,000 slices included).
    """
    index = _indexed(others)
    pools: dict[PoolKey, dict[str, dict[str, Any]]] = {}
    for sl in subjects:
        key = pool_key(sl)
        if key is not None:
            members = pools.get(key)
            if members is None:
                members = pools[key] = dict(index.get(key, {}))
            name = _member(sl)
            members[name] = sl
    under_review: dict[PoolKey, set[str]] = {}
    for sl in subjects:
        if (key := pool_key(sl)) is not None:
            under_review.setdefault(key, set()).add(_name(sl))
    judged: dict[PoolKey, tuple[list[PoolFinding], dict[str, list[int]], list[int]]] = {}
    for key, members in pools.items():
        found = lint_pool(*key, list(members.values()), gates, complete=complete)
        by_slice: dict[str, list[int]] = {}
        orphans: list[int] = []
        for i, f in enumerate(found):
            named = [n for n in f.slices if n in under_review[key]]
            for n in named:
                by_slice.setdefault(n, []).append(i)
            if not named:
                orphans.append(i)
        judged[key] = (found, by_slice, orphans)
    out: list[list[PoolFinding]] = []
    for sl in subjects:
        key = pool_key(sl)
        if key is None:
            out.append([])
            continue
        found, by_slice, orphans = judged[key]
        out.append([found[i] for i in sorted({*by_slice.get(_name(sl), ()), *orphans})])
    return out


# ---------------------------------------------------------------- words

LISTED_MAX = 4
"""Places or slices a line names before it says how many more there are (a pool of 10,000 slices
with a wrong count is one finding, not a 10,000-name line)."""


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:LISTED_MAX])
    return shown if len(items) <= LISTED_MAX else f"{shown} and {len(items) - LISTED_MAX} more"


def _where(f: PoolFinding) -> str:
    return _listed([str(p) for p in f.places])


def _slices(f: PoolFinding) -> str:
    return _listed(list(f.slices)) or "none"


def text(f: PoolFinding, terse: bool = False) -> str:
    """The finding as one line: ``pool: <driver>/<pool>: <what> (<where>); <consequence>``.

    ``terse``: the key fact alone (the pool, what, and the slices), for the server's warnings.
    """
    head = f"{PREFIX}{f.label}: "
    skips = "the scheduler allocates none of its devices"
    refused = f"upstream's driver helper refuses to publish the pool and {skips}"
    if f.check == Check.DUPLICATE_COUNTER_SET:
        what, why = f"counter set {f.name} is defined twice", refused
    elif f.check == Check.DUPLICATE_DEVICE:
        what, why = f"device {f.name} is defined twice", refused
    elif f.check == Check.UNKNOWN_COUNTER_SET:
        what, why = f"device {f.device} consumes counter set {f.name}, which no slice of the pool defines", refused
    elif f.check == Check.UNKNOWN_COUNTER:
        what, why = (f"device {f.device} consumes counter {f.name}, which counter set {f.counter_set} "
                     f"does not define"), refused
    elif f.check == Check.OLDER_GENERATION:
        what, why = (f"slices at generation {f.have}, older than the pool's {f.want} (spec.pool.generation)",
                     "the scheduler ignores them while it sees the newer slices")
    elif f.check == Check.COUNTS_DISAGREE:
        what, why = ("its slices disagree on spec.pool.resourceSliceCount",
                     "the scheduler takes the count of the slice it reads first, so whether the pool is complete "
                     "depends on order")
    elif f.check == Check.SLICE_COUNT:
        what, why = (f"{f.have} slice(s) at its newest generation but spec.pool.resourceSliceCount is {f.want}",
                     f"the pool is incomplete and {skips}")
    elif f.check == Check.HIDDEN_BY_GATE and f.incomplete:
        what, why = (f"the scheduler does not see slices while {f.name} is off",
                     f"the pool is incomplete and {skips}")
    elif f.check == Check.HIDDEN_BY_GATE:
        what, why = (f"the scheduler ignores slices while {f.name} is off",
                     "their devices are not allocatable and their counter sets are not seen")
    else:
        what, why = ("its slices select nodes differently",
                     "upstream's driver helper gives every slice of a pool the same node selection")
    by_slice = f.check in (Check.OLDER_GENERATION, Check.COUNTS_DISAGREE, Check.SLICE_COUNT, Check.HIDDEN_BY_GATE)
    where = _slices(f) if by_slice else _where(f)
    if terse:
        return f"{head}{what} ({_slices(f)})"
    return f"{head}{what} ({where}); {why}"


def finding(f: PoolFinding) -> Finding:
    """``f`` as the pipeline carries it: the whole line and a terse one."""
    return Finding("pool", text(f), text(f, terse=True))
