"""Generated allocator scenarios: a cluster state, the claims to allocate, a gate profile.

`scenarios()` draws one `Scenario`: 1-8 nodes (Node objects with labels, or only the names the
slices give), 1-4 pools (node-local, shared by `allNodes` or a node selector, per-device node
selection, or spread over several nodes; several slices, stale generations, incomplete pools,
counter sets with `consumesCounters` and compatibility groups null/[]/some), devices with
attributes, capacities (`allowMultipleAllocations` with request policies), taints; DeviceClasses
with selectors; DeviceTaintRules selecting devices, pools or drivers (every effect, an unknown
one too); claims already allocated in the state (shareIDs, consumedCapacity, admin access); and
1-3 claims to allocate together (counts, `All`, `firstAvailable`, constraints, CEL selectors,
some of which fail at run time on devices without the attribute, capacity requests,
tolerations), sometimes through a PodGroup with claims and templates. Objects are valid as the
apiserver would store them; the generator aims at the allocator's decisions, not at validation.

Gate profiles come from upstream's own gate table (`dra-allocate --print-gates`), with
dependencies repaired as a component's start-up demands (`profiles.py` does the same for the
apiserver); each picks a different upstream allocator variant (stable, incubating,
experimental) as the scheduler's feature translation does.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from tests.differential.profiles import all_on, upstream_gates
from webhook.gates import KNOWN

GPU, NIC = "gpu.example.com", "nic.example.com"
OTHER = "other.example.org"
NODE_NAMES = ("node-1", "node-10", "node-2", "alpha", "b-node", "worker-a", "worker-b", "zeta")
ZONES = ("a", "b")
NS = "default"
T = TypeVar("T")


# ---------------------------------------------------------------------------- gate profiles

def _closure(gates: set[str], down: bool) -> set[str]:
    """``gates`` plus every gate they depend on (``down=False``) or that depends on them."""
    table = upstream_gates()
    out, todo = set(gates), list(gates)
    while todo:
        g = todo.pop()
        if down:
            more = [n for n, info in table.items() if g in info["dependencies"]]  # type: ignore[operator]
        else:
            more = list(table[g]["dependencies"])  # type: ignore[call-overload]
        for m in more:
            if m not in out:
                out.add(m)
                todo.append(m)
    return out


def _off(base: dict[str, bool], *gates: str) -> dict[str, bool]:
    table = upstream_gates()
    return {**base, **{g: False for g in _closure(set(gates), down=True) if not table[g]["locked"]}}


def _on(base: dict[str, bool], *gates: str) -> dict[str, bool]:
    table = upstream_gates()
    return {**base, **{g: True for g in _closure(set(gates), down=False) if not table[g]["locked"]}}


@functools.cache
def alloc_profiles() -> dict[str, dict[str, bool]]:
    """name -> gate overrides over the 1.37 defaults (what `dra-allocate` gets).

    defaults and `defaults-*` run the incubating allocator, `all-on*` and `defaults+CG` the
    experimental one, `stable` (consumable capacity and binding conditions off) the stable one.
    """
    on = all_on()
    # PodGroup resourceClaims are stored only with these on; they are no allocator feature.
    wl = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
    return {k: {**wl, **v} for k, v in {
        "defaults": {},
        "all-on": on,
        "defaults+CG": _on({}, "DRADeviceCompatibilityGroups"),
        "defaults-no-PD": _off({}, "DRAPartitionableDevices"),
        "defaults-no-CC": _off({}, "DRAConsumableCapacity"),
        "defaults-no-taints": _off({}, "DRADeviceTaints"),
        "all-on-no-PD": _off(on, "DRAPartitionableDevices"),
        "all-on-no-CC": _off(on, "DRAConsumableCapacity"),
        "all-on-no-taints": _off(on, "DRADeviceTaints"),
        "defaults-no-taint-rules": _off({}, "DRADeviceTaintRules"),
        "defaults-no-binding": _off({}, "DRADeviceBindingConditions"),
        "stable": _off({}, "DRAConsumableCapacity", "DRADeviceBindingConditions"),
    }.items()}


@functools.cache
def effective(profile: str) -> dict[str, bool]:
    """Every upstream gate's value in ``profile``."""
    over = alloc_profiles()[profile]
    return {n: bool(over.get(n, info["default"])) for n, info in upstream_gates().items()}


def our_gates(profile: str) -> dict[str, bool]:
    """The same values for every gate we model, set explicitly (our defaults are not assumed)."""
    return modelled(effective(profile))


def modelled(eff: dict[str, bool]) -> dict[str, bool]:
    """Of every upstream gate's value, those of the gates we model (locked ones at their default
    left out: they cannot be set)."""
    return {n: eff[n] for n in KNOWN if n in eff and not (KNOWN[n].locked and eff[n] == KNOWN[n].default)}


# ---------------------------------------------------------------------------- the scenario

@dataclass
class Scenario:
    id: str
    profile: str
    state: list[dict[str, Any]]
    objects: list[dict[str, Any]]
    tags: set[str] = field(default_factory=set)

    def wire(self) -> dict[str, Any]:
        """The `dra-allocate --batch` line."""
        return {"id": self.id, "clusterState": self.state, "objects": self.objects,
                "featureGates": alloc_profiles()[self.profile], "timeoutSeconds": 30}

    def enabled(self, gate: str) -> bool:
        return effective(self.profile)[gate]


def _meta(name: str, ns: str | None = None) -> dict[str, Any]:
    return {"name": name, **({"namespace": ns} if ns else {})}


class R:
    """Choices with controlled odds, from a Random that hypothesis seeds (so draws reproduce).

    Hypothesis's own integer and sampled draws favour their bounds, which would make every rare
    branch (a missing class, an incomplete pool) common; the odds here are the ones written.
    """

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def p(self, chance: float) -> bool:
        return self.rnd.random() < chance

    def pick(self, items: Sequence[T]) -> T:
        return items[self.rnd.randrange(len(items))]

    def weighted(self, table: dict[T, float]) -> T:
        return self.rnd.choices(list(table), weights=list(table.values()))[0]

    def int(self, lo: int, hi: int) -> int:
        return self.rnd.randint(lo, hi)

    def sample(self, items: Sequence[T], lo: int, hi: int) -> list[T]:
        return self.rnd.sample(list(items), min(len(items), self.int(lo, hi)))


# ---------------------------------------------------------------------------- quantities

#: (text, value in base units) in several notations; small so sums and steps stay readable.
AMOUNTS = [("1", 1), ("2", 2), ("4", 4), ("8", 8), ("16", 16), ("1k", 1000), ("2k", 2000), ("4000", 4000),
           ("1Ki", 1024), ("4Ki", 4096), ("1Gi", 2**30), ("2Gi", 2**31), ("2048Mi", 2**31), ("4Gi", 2**32),
           ("8Gi", 2**33), ("8589934592", 2**33), ("16Gi", 2**34), ("500m", 0.5), ("1500m", 1.5), ("0", 0),
           ("1e3", 1000), ("4096Mi", 2**32), ("0.5", 0.5), ("16384Mi", 2**34), ("2e0", 2)]


def qty(r: R, v: float) -> str:
    """A quantity text for ``v`` base units, in one of its spellings."""
    spellings = [text for text, val in AMOUNTS if val == v]
    if spellings:
        return r.pick(spellings)
    if v == int(v):
        return str(int(v))
    return f"{round(v * 1000)}m"


def respell(r: R, driver: str, name: str) -> str:
    """Mostly ``name`` itself, sometimes its other spelling (bare <-> qualified with ``driver``)."""
    if r.p(0.85):
        return name
    return name.removeprefix(driver + "/") if name.startswith(driver + "/") else f"{driver}/{name}"


def key(r: R, driver: str, ident: str) -> str:
    """An attribute or capacity name, bare or qualified with the device's own driver."""
    return ident if r.p(0.85) else f"{driver}/{ident}"


# ---------------------------------------------------------------------------- devices

def attributes(r: R, driver: str, lists: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if r.p(0.85):
        out[key(r, driver, "model")] = {"string": r.pick("abc")}
    if r.p(0.75):
        out[key(r, driver, "index")] = {"int": r.int(0, 3)}
    if r.p(0.5):
        out[key(r, driver, "numa")] = {"int": r.int(0, 1)}
    if r.p(0.6):
        out[key(r, driver, "healthy")] = {"bool": r.p(0.8)}
    if r.p(0.4):
        out[key(r, driver, "version")] = {"version": r.pick(["1.0.0", "1.2.0", "2.0.0", "1.0.0+b1", "1.0.0+b2"])}
    if r.p(0.25):
        out[f"{OTHER}/zone"] = {"string": r.pick(["z1", "z2"])}
    if r.p(0.3 if lists else 0.03):  # where the gate is off: stored before it was turned off
        out[key(r, driver, "links")] = {"strings": r.sample(["l0", "l1", "l2"], 1, 3)}
    return out


def request_policy(r: R, value: float) -> dict[str, Any] | None:
    """A valid requestPolicy for a capacity of ``value`` (the default is always a valid amount)."""
    kind = r.weighted({"none": 3, "default": 1, "range": 1, "range-step": 2, "values": 1.5})
    small = [v for _, v in AMOUNTS if v <= value]
    if kind == "none":
        return None
    if kind == "default":
        return {"default": qty(r, r.pick(small))}
    if kind == "values":
        vals = sorted(set(r.sample([v for v in small if v > 0], 1, 3)))
        return {"default": qty(r, r.pick(vals)), "validValues": [qty(r, v) for v in vals]}
    vmin = r.pick(small)
    rng: dict[str, Any] = {"min": qty(r, vmin)}
    step: float | None = None
    if kind == "range-step":
        steps = [s for s in (0.5, 1, 2, 4, 1000, 1024, 2**30) if vmin + s <= value]
        if steps:
            step = r.pick(steps)
            rng["step"] = qty(r, step)
    vmax = None
    if r.p(0.5):
        cands = [v for _, v in AMOUNTS if vmin <= v <= value and (step is None or ((v - vmin) / step).is_integer())]
        vmax = r.pick(cands)
        rng["max"] = qty(r, vmax)
    default = vmin + (step or 0) * r.int(0, 3)
    if default > (vmax if vmax is not None else value):
        default = vmin
    return {"default": qty(r, default), "validRange": rng}


CAPACITIES = {"mem": ([2**32, 2**33, 2**34], 0.7), "cores": ([4, 8, 16], 0.5), "bw": ([1000, 4000, 16], 0.35)}


def capacities(r: R, driver: str, multi: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ident, (choices, odds) in CAPACITIES.items():
        if not r.p(odds):
            continue
        value = r.pick(choices)
        cap: dict[str, Any] = {"value": qty(r, value)}
        if multi and (pol := request_policy(r, value)) is not None:
            cap["requestPolicy"] = pol
        out[key(r, driver, ident)] = cap
    return out


def node_selector(r: R, nodes: list[str]) -> dict[str, Any]:
    kind = r.weighted({"zone-in": 3, "zone-notin": 1, "exists": 1, "name": 2})
    if kind == "name":
        term: dict[str, Any] = {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                 "values": [r.pick(nodes)]}]}
    elif kind == "exists":
        term = {"matchExpressions": [{"key": "gpu", "operator": r.pick(["Exists", "DoesNotExist"])}]}
    else:
        term = {"matchExpressions": [{"key": "zone", "operator": "In" if kind == "zone-in" else "NotIn",
                                      "values": [r.pick(ZONES)]}]}
    return {"nodeSelectorTerms": [term]}


def device_placement(r: R, nodes: list[str]) -> dict[str, Any]:
    kind = r.weighted({"name": 5, "all": 2, "selector": 2, "stray": 0.5})
    if kind == "name":
        return {"nodeName": r.pick(nodes)}
    if kind == "stray":  # a node that no Node object and no slice names
        return {"nodeName": "node-stray"}
    if kind == "all":
        return {"allNodes": True}
    return {"nodeSelector": node_selector(r, nodes)}


GROUPS: list[list[str] | None] = [None, [], ["mig"], ["vgpu"], ["mig", "vgpu"]]


def device(r: R, name: str, driver: str, counter_sets: dict[str, dict[str, float]], per_device: bool,
           nodes: list[str], lists: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if attrs := attributes(r, driver, lists):
        d["attributes"] = attrs
    multi = r.p(0.25)
    if multi:
        d["allowMultipleAllocations"] = True
    if caps := capacities(r, driver, multi):
        d["capacity"] = caps
    if counter_sets and r.p(0.8):
        consumes = []
        for cs in r.sample(sorted(counter_sets), 1, 2):
            names = r.sample(sorted(counter_sets[cs]), 1, 2)
            entry: dict[str, Any] = {"counterSet": cs, "counters": {
                n: {"value": qty(r, counter_sets[cs][n] / r.pick([4, 4, 4, 2, 2, 1]))} for n in names}}
            if (groups := r.weighted({0: 3, 1: 1, 2: 2, 3: 1, 4: 1})) or r.p(0.5):
                g = GROUPS[groups]
                if g is not None:
                    entry["compatibilityGroups"] = g
            consumes.append(entry)
        if r.p(0.01):  # a counter set the pool does not have: the pool is invalid
            consumes.append({"counterSet": "cs-missing", "counters": {"mem": {"value": "1"}}})
        elif r.p(0.01):  # a counter the set does not have: the pool is invalid
            consumes[0]["counters"]["nope"] = {"value": "1"}
        d["consumesCounters"] = consumes
    if r.p(0.12):
        d["taints"] = [{"key": r.pick(["broken", "maint"]), **({"value": "yes"} if r.p(0.5) else {}),
                        "effect": r.weighted({"NoSchedule": 2, "NoExecute": 1, "None": 1})}]
    if r.p(0.06):
        d["bindingConditions"] = ["ready"]
        d["bindingFailureConditions"] = ["failed"]
        if r.p(0.5):
            d["bindsToNode"] = True
    if per_device:
        d.update(device_placement(r, nodes))
    return d


# ---------------------------------------------------------------------------- pools

def pool(r: R, index: int, nodes: list[str], lists: bool) -> list[dict[str, Any]]:
    """The slices of one pool as they are in the state (maybe incomplete, stale or half-updated)."""
    driver = r.weighted({GPU: 4, NIC: 1})
    name = r.pick([f"pool-{index}", f"p{index}-x", f"z-pool-{index}"])
    kind = r.weighted({"node": 5, "all": 1.5, "selector": 1.5, "per-device": 1.5, "spread": 1.5})
    home = r.pick(nodes)
    gen = r.int(1, 3)
    counters: dict[str, dict[str, float]] = {}
    if r.p(0.3):
        for i in range(r.int(1, 2)):
            counters[f"cs-{i}"] = {"mem": r.pick([2**33, 2**34]), "sm": r.pick([4, 8])}
    placements = {"per-device": "per-device", "spread": "node", "all": "all", "selector": "selector"}
    plans: list[dict[str, Any]] = []
    names = iter(f"{'gpu' if driver == GPU else 'nic'}-{i}" for i in range(100))
    for j in range(r.weighted({1: 3, 2: 2, 3: 1 if kind == "spread" else 0})):
        where = placement(r, placements.get(kind, "node"), nodes, r.pick(nodes) if kind == "spread" else home)
        devs = [device(r, next(names), driver, counters, kind == "per-device", nodes, lists)
                for _ in range(r.weighted({1: 1, 2: 2, 3: 2, 4: 3, 6: 2, 8: 1}))]
        if r.p(0.02):
            devs.append({**devs[0]})  # a duplicate device name: the pool is invalid
        plans.append({"name": f"{name}-{r.pick('sta')}{j}", "placement": where, "devices": devs})
    if counters:
        where = placement(r, "node" if kind in ("node", "spread") else r.pick(["all", "node"]), nodes, home)
        plans.append({"name": f"{name}-counters", "placement": where, "counters": counters})
    if r.p(0.06):
        skip = r.pick([["*"], ["NodePrepareResources", "NodeUnprepareResources"], ["NodeUnprepareResources"]])
        for p in plans:
            if "devices" in p:
                p["skip"] = skip
    if counters and r.p(0.03):  # a second slice with the same counter set: the pool is invalid
        plans.append({"name": f"{name}-counters-2", "placement": plans[-1]["placement"],
                      "counters": {"cs-0": {"mem": 2**33}}})
    count = len(plans)
    out = [_slice(r, p, driver, name, gen, count) for p in plans]
    if r.p(0.08):  # incomplete: one slice is not published (yet)
        out.pop(r.int(0, len(out) - 1))
    if r.p(0.15):  # slices of an older generation, still around
        for p in plans[:r.int(1, len(plans))]:
            out.append(_slice(r, {**p, "name": p["name"] + "-old"}, driver, name, gen - 1, count))
    if r.p(0.07):  # a newer generation, partly published
        out.append(_slice(r, {**plans[0], "name": plans[0]["name"] + "-new"}, driver, name, gen + 1, count))
    return out


def placement(r: R, kind: str, nodes: list[str], home: str) -> dict[str, Any]:
    if kind == "node":
        return {"nodeName": home}
    if kind == "all":
        return {"allNodes": True}
    if kind == "selector":
        return {"nodeSelector": node_selector(r, nodes)}
    return {"perDeviceNodeSelection": True}


def _slice(r: R, plan: dict[str, Any], driver: str, pool_name: str, gen: int, count: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool_name, "generation": gen,
                                                      "resourceSliceCount": count}, **plan["placement"]}
    if "counters" in plan:
        spec["sharedCounters"] = [{"name": cs, "counters": {n: {"value": qty(r, v)} for n, v in c.items()}}
                                  for cs, c in plan["counters"].items()]
    else:
        spec["devices"] = copy.deepcopy(plan["devices"])
    if plan.get("skip"):
        spec["skipNodeOperations"] = plan["skip"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": _meta(plan["name"]),
            "spec": spec}


# ---------------------------------------------------------------------------- classes and selectors

def selectors_for(driver: str) -> dict[str, float]:
    """CEL selectors with their odds: most narrow, some fail at run time where a key is missing."""
    a = f'device.attributes["{driver}"]'
    c = f'device.capacity["{driver}"]'
    return {
        f'{a}.model == "a"': 2,
        f'{a}.model != "c"': 2,
        f'"index" in {a} && {a}.index >= 1': 2,
        f'{a}.index >= 2': 0.5,                                 # fails where index is missing
        f'has({a}.healthy) && {a}.healthy': 2,
        f'{a}.healthy': 0.3,                                    # fails where healthy is missing
        f'{c}.mem.compareTo(quantity("8Gi")) >= 0': 0.3,        # fails where mem is missing
        f'"mem" in {c} && {c}.mem.compareTo(quantity("16Gi")) >= 0': 1,
        f'has({a}.version) && {a}.version.isGreaterThan(semver("1.1.0"))': 1,
        'device.allowMultipleAllocations': 1,
        f'device.attributes["{OTHER}"].zone == "z1"': 0.3,    # fails where the other domain lacks zone
        f'device.driver == "{driver}"': 1,
        'true': 1,
    }


def device_classes() -> list[dict[str, Any]]:
    def cls(name: str, *exprs: str) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if exprs:
            spec["selectors"] = [{"cel": {"expression": e}} for e in exprs]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": _meta(name), "spec": spec}
    return [cls("gpu", f'device.driver == "{GPU}"'), cls("nic", f'device.driver == "{NIC}"'), cls("any"),
            cls("gpu-big", f'device.driver == "{GPU}"',
                f'"mem" in device.capacity["{GPU}"] && device.capacity["{GPU}"].mem.compareTo(quantity("8Gi")) >= 0'),
            cls("gpu-healthy", f'device.driver == "{GPU}" && device.attributes["{GPU}"].healthy')]


CLASSES = {"gpu": (GPU, 10.0), "nic": (NIC, 2.0), "any": (GPU, 2.0), "gpu-big": (GPU, 1.5),
           "gpu-healthy": (GPU, 0.7), "missing": (GPU, 0.1)}


# ---------------------------------------------------------------------------- claims

DERIVED = {
    "derived/numa": [f'device.attributes["{GPU}"].numa',                       # fails where numa is missing
                     f'"numa" in device.attributes["{GPU}"] ? device.attributes["{GPU}"].numa : 7',
                     'device.driver'],
    f"{GPU}/model": [f'"model" in device.attributes["{GPU}"] ? device.attributes["{GPU}"].model : "none"',
                     '"same"'],
    "derived/big": [f'"mem" in device.capacity["{GPU}"] && '
                    f'device.capacity["{GPU}"].mem.compareTo(quantity("8Gi")) >= 0'],
}


@dataclass(frozen=True)
class Fields:
    """Which gated request fields a claim may carry: an input claim only what the apiserver
    would store under the profile (simulate stores its inputs so); a claim already in the state
    may also hold fields stored before a gate was turned off (``stale``)."""

    cc: bool
    derived: bool
    taints: bool
    stale: bool = False

    def odds(self, on: bool, usual: float, stale: float) -> float:
        return usual if on else (stale if self.stale else 0.0)


def request_body(r: R, f: Fields) -> dict[str, Any]:
    cls = r.weighted({k: w for k, (_, w) in CLASSES.items()})
    driver = CLASSES[cls][0]
    body: dict[str, Any] = {"deviceClassName": cls}
    mode = r.weighted({"default": 4, "exact": 4, "all": 0.8})
    if mode == "exact":
        body["allocationMode"] = "ExactCount"
        body["count"] = r.weighted({1: 3, 2: 3, 3: 1, 4: 0.3, 16: 0.05, 33: 0.05})
    elif mode == "all":
        body["allocationMode"] = "All"
    if r.p(0.35):
        sels = selectors_for(driver)
        body["selectors"] = [{"cel": {"expression": r.weighted(sels)}} for _ in range(r.weighted({1: 4, 2: 1}))]
    if r.p(f.odds(f.taints, 0.2, 0.05)):
        body["tolerations"] = [r.pick([
            {"key": "broken", "operator": "Exists"}, {"key": "broken", "operator": "Equal", "value": "yes"},
            {"key": "maint", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"},
            {"key": "broken"}, {"key": RULE_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
            {"key": RULE_KEY, "operator": "Equal", "value": "drain"}])]
    if r.p(f.odds(f.cc, 0.3, 0.03)):
        amounts = {"mem": [2**30, 2**31, 2**32, 2**33, 2**34 + 1], "cores": [0.5, 1, 1.5, 2, 3, 8],
                   "bw": [1, 3, 16, 1000, 1500, 5000]}
        names = r.sample(r.weighted({("mem",): 4, ("cores",): 2, ("bw",): 1, ("mem", "cores"): 1,
                                     ("mem", "cores", "bw"): 0.3}), 3, 3)
        body["capacity"] = {"requests": {key(r, driver, n): qty(r, r.pick(amounts[n])) for n in names}}
    if r.p(f.odds(f.derived, 0.2, 0.01)):
        name = r.pick(sorted(DERIVED))
        body["derivedAttributes"] = [{"name": name, "expression": r.pick(DERIVED[name])}]
    return body


CONSTRAINED = {f"{GPU}/model": 3, f"{GPU}/numa": 3, f"{GPU}/index": 1, f"{GPU}/version": 1, f"{OTHER}/zone": 0.5,
               f"{GPU}/links": 0.7, f"{NIC}/model": 0.5}


def claim_spec(r: R, f: Fields) -> dict[str, Any]:
    requests = []
    names: list[str] = []
    for i in range(r.weighted({1: 7, 2: 3, 3: 1})):
        if r.p(0.2):
            subs = []
            for j in range(r.weighted({1: 1, 2: 3, 3: 1})):
                subs.append({"name": f"s{j}", **request_body(r, f)})
                names.append(f"r{i}/s{j}")
            requests.append({"name": f"r{i}", "firstAvailable": subs})
        else:
            body = request_body(r, f)
            if r.p(0.05):
                body["adminAccess"] = True
            requests.append({"name": f"r{i}", "exactly": body})
        names.append(f"r{i}")
    devices: dict[str, Any] = {"requests": requests}
    used = sorted({a["name"] for q in requests for b in ([q["exactly"]] if "exactly" in q else q["firstAvailable"])
                   for a in b.get("derivedAttributes", ())})
    # distinctAttribute is a DRAConsumableCapacity field: stored only while that gate is on.
    kinds = ["matchAttribute", "distinctAttribute"] if r.p(f.odds(f.cc, 1, 0.5)) else ["matchAttribute"]
    cons = [{r.pick(kinds): a} for a in used]  # every derived attribute must be used
    if r.p(0.3):
        for _ in range(r.weighted({1: 4, 2: 1})):
            c: dict[str, Any] = {r.pick(kinds): r.weighted(CONSTRAINED)}
            if r.p(0.4):
                c["requests"] = sorted(r.sample(names, 1, 2))
            cons.append(c)
    if cons:
        devices["constraints"] = cons
    return {"devices": devices}


def _claim(name: str, spec: dict[str, Any], ns: str = NS) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": _meta(name, ns), "spec": spec}


def stored(spec: dict[str, Any]) -> dict[str, Any]:
    """A claim spec as the apiserver stores it (allocationMode, count, toleration operator)."""
    out = copy.deepcopy(spec)
    for req in out["devices"]["requests"]:
        for b in ([req["exactly"]] if "exactly" in req else req["firstAvailable"]):
            b.setdefault("allocationMode", "ExactCount")
            if b["allocationMode"] == "ExactCount":
                b.setdefault("count", 1)
            for t in b.get("tolerations", ()):
                t.setdefault("operator", "Equal")
    return out


def fixed_allocation(r: R, slices: list[dict[str, Any]], nodes: list[str]) -> dict[str, Any]:
    """status.allocation of a claim allocated earlier: some device, a node selector or none."""
    devs = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]) for s in slices
            for d in s["spec"].get("devices", ())]
    results = []
    if devs:
        driver, pool_name, dev = r.pick(devs)
        results.append({"request": "r0", "driver": driver, "pool": pool_name, "device": dev})
    alloc: dict[str, Any] = {"devices": {"results": results}}
    kind = r.weighted({"node": 3, "zone": 1, "none": 1})
    if kind == "node":
        alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [r.pick(nodes)]}]}]}
    elif kind == "zone":
        alloc["nodeSelector"] = node_selector(r, nodes)
    return alloc


RULE_KEY = "example.com/evict"


def taint_rules(r: R, slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """DeviceTaintRules of the state: each selects by driver, pool and/or device of what the
    slices publish (or another driver, or everything, or nothing), with a taint of any effect."""
    out: list[dict[str, Any]] = []
    devs = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]) for s in slices
            for d in s["spec"].get("devices", ())]
    if not devs or not r.p(0.3):
        return out
    for i in range(r.weighted({1: 4, 2: 2, 3: 1})):
        driver, pool_name, name = r.pick(devs)
        shape = r.weighted({"device": 3, "pool": 2, "pool-device": 2, "driver": 1, "other-driver": 0.3,
                            "everything": 0.3, "nothing": 0.3})
        sel: dict[str, Any] | None = {
            "device": {"driver": driver, "device": name}, "pool": {"pool": pool_name},
            "pool-device": {"driver": driver, "pool": pool_name, "device": name}, "driver": {"driver": driver},
            "other-driver": {"driver": OTHER}, "everything": {}, "nothing": None}[shape]
        taint: dict[str, Any] = {"key": r.weighted({RULE_KEY: 3, "maint": 1, "broken": 1}),
                                 "effect": r.weighted({"NoSchedule": 3, "NoExecute": 2, "None": 1, "Bogus": 0.1})}
        if r.p(0.4):
            taint["value"] = r.pick(["drain", "yes"])
        spec: dict[str, Any] = {"taint": taint, **({"deviceSelector": sel} if sel is not None else {})}
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": _meta(f"rule-{i}"),
                    "spec": spec})
    return out


def allocated_claims(r: R, slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claims of the state that already hold devices (some of which may no longer exist)."""
    devs = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d) for s in slices for d in s["spec"].get("devices", ())]
    out: list[dict[str, Any]] = []
    if not devs:
        return out
    for i in range(r.weighted({0: 5, 1: 3, 2: 1, 3: 0.5})):
        results = []
        for k in range(r.weighted({1: 3, 2: 1})):
            driver, pool_name, d = r.pick(devs)
            res: dict[str, Any] = {"request": f"r{k}", "driver": driver, "pool": pool_name, "device": d["name"]}
            if r.p(0.1):
                res["adminAccess"] = True
            elif d.get("allowMultipleAllocations") and r.p(0.8):
                res["shareID"] = f"00000000-0000-0000-0000-{i:06d}{k:06d}"
                if d.get("capacity") and r.p(0.8):
                    res["consumedCapacity"] = {respell(r, driver, n): r.pick([c["value"], "1", "1Gi", "500m"])
                                               for n, c in d["capacity"].items()}
            results.append(res)
        spec = stored({"devices": {"requests": [{"name": f"r{k}", "exactly": {"deviceClassName": "any"}}
                                                for k in range(len(results))]}})
        c = _claim(f"held-{i}", spec)
        c["status"] = {"allocation": {"devices": {"results": results}}}
        out.append(c)
    return out


# ---------------------------------------------------------------------------- the scenario

def build(rnd: random.Random) -> Scenario:
    r = R(rnd)
    profile = r.pick(sorted(alloc_profiles()))
    eff = effective(profile)
    cc = eff["DRAConsumableCapacity"]
    nodes = sorted(r.sample(NODE_NAMES, 1, 8))
    node_mode = r.weighted({"objects": 3, "names": 1, "mixed": 1})
    tags = {profile, f"nodes-{node_mode}"}
    state: list[dict[str, Any]] = []
    for n in nodes:
        if node_mode == "names" or (node_mode == "mixed" and r.p(0.5)):
            continue
        labels = {"zone": r.pick(ZONES), **({"gpu": "true"} if r.p(0.5) else {})}
        node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": labels}}
        if r.p(0.5):
            node["status"] = {"declaredFeatures": ["DRAOptionalNodeOperations"]}
        state.append(node)
    slices = [s for i in range(r.weighted({1: 2, 2: 3, 3: 2, 4: 1})) for s in pool(r, i, nodes,
                                                                                  eff["DRAListTypeAttributes"])]
    state.extend(sorted(slices, key=lambda s: s["metadata"]["name"]))
    state.extend(device_classes())
    state.extend(allocated_claims(r, slices))
    rules = taint_rules(r, slices)
    if rules:
        tags.add("taint-rules")
        state.extend(rules)
    group = r.p(0.2)
    wheres = [r.pick(["claim-input", "claim-state", "template-input", "template-state"]) if group else "claim-input"
              for _ in range(r.weighted({1: 6, 2: 3, 3: 1}))]
    claims = [_claim(f"claim-{i}", claim_spec(r, Fields(cc, eff["DRADerivedAttributes"], eff["DRADeviceTaints"],
                                                        stale=where.endswith("state"))))
              for i, where in enumerate(wheres)]
    for c in claims:
        if r.p(0.06):  # allocated already (by an earlier cycle): it only narrows the nodes
            tags.add("fixed-claim")
            c["spec"] = stored(c["spec"])
            c["status"] = {"allocation": fixed_allocation(r, slices, nodes)}
    objects: list[dict[str, Any]] = claims
    if group:
        tags.add("podgroup")
        objects, entries = [], []
        ns = r.weighted({NS: 3, "team-a": 1})
        for i, (c, where) in enumerate(zip(claims, wheres, strict=True)):
            # Where the referenced object lives: the group's namespace; rarely elsewhere (not
            # found); in the state also written without a namespace, as a hand-made state may be.
            home = r.weighted({ns: 20, "elsewhere": 1})
            meta_ns = None if where.endswith("state") and home == NS and r.p(0.2) else home
            if where.startswith("claim"):
                entries.append({"name": f"e{i}", "resourceClaimName": c["metadata"]["name"]})
                c = {**c, "metadata": _meta(c["metadata"]["name"], meta_ns)}
                if where == "claim-input":
                    objects.append(c)
                else:
                    state.append({**c, "spec": stored(c["spec"])})
            else:
                tpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                       "metadata": _meta(f"tpl-{i}", meta_ns), "spec": {"spec": c["spec"]}}
                entries.append({"name": f"e{i}", "resourceClaimTemplateName": f"tpl-{i}"})
                (objects if where == "template-input" else state).append(tpl)
        objects.insert(0, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": _meta("group", ns), "spec": {"resourceClaims": entries}})
    for s in slices:
        spec = s["spec"]
        tags.update(f"slice-{k}" for k in ("perDeviceNodeSelection", "nodeSelector", "allNodes") if k in spec)
        if "sharedCounters" in spec:
            tags.add("counters")
    return Scenario("", profile, state, objects, tags)


def scenarios() -> st.SearchStrategy[Scenario]:
    """One scenario per draw (the odds are in `build`; hypothesis seeds it reproducibly)."""
    return st.randoms(use_true_random=True).map(build)
