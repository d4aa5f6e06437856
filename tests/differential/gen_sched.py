"""Generated scheduler scenarios: a small cluster of its own, and pods, a workload or a gang to place.

`scenarios(start)` draws `SchedScenario`s for `test_scheduler_generated.py`: each runs on the
rig's real control plane (`sched_rig.py`) and through our `simulate` (`sched_ours.py`).

**Isolation.** Hundreds of scenarios share one cluster per gate profile, so each has its own:

- nodes (`<key>-<name>`, labelled `SCENARIO=<key>` and `RANK=<i>` in name order), which only its
  pods select (`nodeSelector`);
- drivers (`gpu.<key>.example.com`, `nic.<key>.example.com`) and DeviceClasses (`<key>-<name>`),
  whose first selector is the driver, so no class matches another scenario's devices and no
  request selector ever runs on them;
- namespace (`sched-<n>`) for its claims, templates, pods and workloads; DeviceTaintRules that
  name its driver.

Slices that every node sees (`allNodes`) are a risk: a request for `All` devices fails outright
on a node that sees any incomplete or invalid pool, whatever its driver. So only a complete,
valid pool keeps `allNodes`; any other pool (and any slice `nodeSelector`) is narrowed to the
scenario's nodes. Our side sees only the scenario's objects, as a `--cluster-state` holds them.

**Placement order.** The scheduler takes the feasible node with the best score, breaking ties at
random; our side takes the first feasible node in name order. Scenario pods go to the rig's
`dra-diff` scheduler profile, which scores nodes by NodeAffinity alone, and prefer the nodes by
rank (weights 100, 90, ...): the scheduler's choice is then the first feasible node in name order
too, so pods placed one after another meet the same state on both sides.

What varies: node taints (and pod tolerations), `unschedulable`, allocatable pods/cpu/memory
(and pod requests), pod nodeSelector and required node affinity; pools from `gen_alloc` (node
local, network-attached by `allNodes` or a node selector, per-device placement, shared counters,
compatibility groups, consumable capacity, device taints, incomplete and invalid pools);
DeviceTaintRules and request tolerations; claims already allocated (some reserved for a pod bound
before); claims from templates, named claims shared between pods, missing ones; standalone pods
(placed one after another), a Deployment, ReplicaSet, StatefulSet, Job or CronJob (its replicas),
or a gang (a PodGroup with `minCount`, where the profile serves PodGroups). Devices with binding
conditions are left out: only a driver reporting device status lets such a pod bind.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from tests.differential import gen_alloc as ga
from tests.differential.profiles import every_profile, upstream_gates
from webhook.quantity import parse_quantity as parse

SCENARIO = "dra-diff.example.com/scenario"
RANK = "dra-diff.example.com/rank"
HOLDER = "dra-diff.example.com/holder"
SCHEDULER = "dra-diff"
#: The three gate profiles of the family (names of `profiles.profiles()`).
PROFILES = ("defaults", "all-on", "no-DRAPartitionableDevices")
IMAGE = "registry.k8s.io/pause:3.10"
NODE_NAMES = ("alpha", "b-node", "node-1", "node-10", "node-2", "worker-a")
WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")


@functools.cache
def apiserver_gates(profile: str) -> dict[str, bool]:
    """The apiserver's (and its scheduler's) gate overrides in ``profile``."""
    return dict(every_profile()[profile])


@functools.cache
def effective(profile: str) -> dict[str, bool]:
    """Every upstream gate's value in ``profile``."""
    over = apiserver_gates(profile)
    return {n: bool(over.get(n, info["default"])) for n, info in upstream_gates().items()}


@dataclass
class SchedScenario:
    """One scenario: what the rig creates first (``cluster``), then what a user submits (``inputs``).

    ``shape``: `pods` (standalone pods, placed one after another in ``pods`` order), `workload`
    (one workload object with ``replicas`` pods) or `gang` (a PodGroup and its ``pods``).
    ``reservations``: (claim, holder pod) pairs; the rig reserves each claim for its holder pod
    (a pod bound before, whose uid only the apiserver knows).
    """

    id: str
    key: str
    namespace: str
    profile: str
    cluster: list[dict[str, Any]]
    inputs: list[dict[str, Any]]
    shape: str
    pods: list[str] = field(default_factory=list)
    replicas: int = 0
    reservations: list[tuple[str, str]] = field(default_factory=list)
    templates: set[str] = field(default_factory=set)
    """Names of the templates that exist (in ``cluster`` or ``inputs``)."""
    missing: set[str] = field(default_factory=set)
    """Names of claims and templates that pods refer to and that do not exist."""
    node_filters: list[str] = field(default_factory=list)
    """Why a node could be filtered out before DRA (empty: every node passes the node filters)."""
    tags: set[str] = field(default_factory=set)

    @property
    def workload(self) -> dict[str, Any] | None:
        return next((o for o in self.inputs if o["kind"] in WORKLOADS), None)

    def pod_objects(self) -> list[dict[str, Any]]:
        return [o for o in self.inputs if o["kind"] == "Pod"]

    def brief(self) -> str:
        """The scenario as JSON (cluster objects and inputs), for a disagreement report."""
        return json.dumps({"id": self.id, "profile": self.profile, "shape": self.shape,
                           "cluster": self.cluster, "inputs": self.inputs,
                           "reservations": self.reservations}, sort_keys=True)


# ---------------------------------------------------------------------------- renaming


def localize(obj: Any, key: str) -> Any:
    """A `gen_alloc` object made the scenario's own: drivers, class names and slice names."""
    text = json.dumps(obj)
    for driver in (ga.GPU, ga.NIC):
        text = text.replace(driver, driver.replace(".example.com", f".{key}.example.com"))
    out = json.loads(text)
    _rename_classes(out, key)
    return out


def _rename_classes(value: Any, key: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "deviceClassName" and isinstance(v, str):
                value[k] = f"{key}-{v}"
            else:
                _rename_classes(v, key)
    elif isinstance(value, list):
        for v in value:
            _rename_classes(v, key)


def drivers(key: str) -> tuple[str, str]:
    return tuple(d.replace(".example.com", f".{key}.example.com") for d in (ga.GPU, ga.NIC))  # type: ignore[return-value]


def scenario_term(key: str) -> dict[str, Any]:
    return {"key": SCENARIO, "operator": "In", "values": [key]}


def narrow(selector: dict[str, Any], key: str) -> dict[str, Any]:
    """A node selector that also requires the scenario's label, in every term."""
    out = copy.deepcopy(selector)
    for term in out.get("nodeSelectorTerms") or []:
        term["matchExpressions"] = [*(term.get("matchExpressions") or []), scenario_term(key)]
    return out


def only_here(key: str) -> dict[str, Any]:
    return {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [scenario_term(key)]}]}}


# ---------------------------------------------------------------------------- pools


def _pool_is_clean(slices: list[dict[str, Any]]) -> bool:
    """Complete and valid, as far as the generator's spoilers go (duplicate devices, counter sets
    that are missing or twice, counters a set does not have)."""
    if not slices:
        return True
    gen = max(s["spec"]["pool"]["generation"] for s in slices)
    current = [s for s in slices if s["spec"]["pool"]["generation"] == gen]
    if any(s["spec"]["pool"]["resourceSliceCount"] != len(current) for s in current):
        return False
    names = [d["name"] for s in current for d in s["spec"].get("devices") or []]
    sets = [cs for s in current for cs in s["spec"].get("sharedCounters") or []]
    counters = {cs["name"]: set(cs["counters"]) for cs in sets}
    if len(names) != len(set(names)) or len(sets) != len(counters):
        return False
    for s in current:
        for d in s["spec"].get("devices") or []:
            for c in d.get("consumesCounters") or []:
                if c["counterSet"] not in counters or not set(c["counters"]) <= counters[c["counterSet"]]:
                    return False
    return True


def _partitionable(pool: list[dict[str, Any]]) -> bool:
    return any("sharedCounters" in s["spec"] or s["spec"].get("perDeviceNodeSelection")
               or any("consumesCounters" in d for d in s["spec"].get("devices") or []) for s in pool)


def make_pools(r: ga.R, key: str, nodes: list[str], gates: dict[str, bool]) -> list[dict[str, Any]]:
    """1-3 pools of `gen_alloc`, isolated (see the module docstring), without binding conditions,
    creatable under ``gates``: no list attributes without DRAListTypeAttributes, no counters or
    per-device placement without DRAPartitionableDevices (the apiserver would refuse or empty
    them; `gen_alloc` also makes states that were stored under other gates)."""
    out: list[dict[str, Any]] = []
    for i in range(r.weighted({1: 3, 2: 3, 3: 1})):
        pool = ga.pool(r, i, nodes, gates["DRAListTypeAttributes"])
        while not gates["DRAPartitionableDevices"] and _partitionable(pool):
            pool = ga.pool(r, i, nodes, False)
        pool = [localize(s, key) for s in pool]
        clean = _pool_is_clean(pool)
        for s in pool:
            s["metadata"]["name"] = f"{key}-{s['metadata']['name']}"
            spec = s["spec"]
            if "devices" in spec:  # twice in one slice: the apiserver refuses it (across slices it does not)
                spec["devices"] = list({d["name"]: d for d in reversed(spec["devices"])}.values())[::-1]
            if spec.get("allNodes") and not clean:
                del spec["allNodes"]
                spec.update(only_here(key))
            elif "nodeSelector" in spec:
                spec["nodeSelector"] = narrow(spec["nodeSelector"], key)
            for d in spec.get("devices") or []:
                for k in ("bindingConditions", "bindingFailureConditions", "bindsToNode"):
                    d.pop(k, None)
                if len(d.get("consumesCounters") or []) > 2:  # the apiserver allows two (the last spoils the pool)
                    d["consumesCounters"] = d["consumesCounters"][-2:]
                if not gates["DRAFractionalCapacityRange"]:
                    for cap in (d.get("capacity") or {}).values():
                        whole_valid_values(cap.get("requestPolicy") or {})
                if not gates["DRAListTypeAttributes"]:
                    d["attributes"] = {k: v for k, v in (d.get("attributes") or {}).items()
                                       if not any(t in v for t in ("ints", "bools", "strings", "versions"))}
                if d.get("allNodes") and not clean:
                    del d["allNodes"]
                    d.update(only_here(key))
                elif "nodeSelector" in d:
                    d["nodeSelector"] = narrow(d["nodeSelector"], key)
        out.extend(pool)
    return sorted(out, key=lambda s: s["metadata"]["name"])


def whole_valid_values(policy: dict[str, Any]) -> None:
    """Without DRAFractionalCapacityRange the apiserver rounds valid values up to whole numbers
    and refuses two that meet: keep the first of each (and a default among them)."""
    if not policy.get("validValues"):
        return
    seen: dict[int, str] = {}
    for v in policy["validValues"]:
        seen.setdefault(math.ceil(parse(v).value), v)
    policy["validValues"] = list(seen.values())
    if "default" in policy:  # the default must be one of them as written
        policy["default"] = seen.get(math.ceil(parse(policy["default"]).value), policy["validValues"][0])


def device_classes(key: str) -> list[dict[str, Any]]:
    """`gen_alloc`'s classes, renamed; `any` (no selector there) gets a selector for this
    scenario's two drivers, so it matches nothing of other scenarios."""
    gpu, nic = drivers(key)
    out = []
    for c in ga.device_classes():
        c = localize(c, key)
        c["metadata"]["name"] = f"{key}-{c['metadata']['name']}"
        if not c["spec"].get("selectors"):
            c["spec"]["selectors"] = [{"cel": {"expression": f'device.driver == "{gpu}" || device.driver == "{nic}"'}}]
        out.append(c)
    return out


def taint_rules(r: ga.R, key: str, slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """0-2 DeviceTaintRules on this scenario's devices: a whole driver, a pool or one device."""
    out: list[dict[str, Any]] = []
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]) for s in slices
               for d in s["spec"].get("devices") or []]
    if not devices:
        return out
    for i in range(r.weighted({0: 7, 1: 2, 2: 0.5})):
        driver, pool, device = r.pick(devices)
        selector: dict[str, Any] = {"driver": driver}
        scope = r.weighted({"driver": 1, "pool": 1, "device": 2})
        if scope != "driver":
            selector["pool"] = pool
        if scope == "device":
            selector["device"] = device
        taint = {"key": r.pick(["broken", "maint"]), **({"value": "yes"} if r.p(0.5) else {}),
                 "effect": r.weighted({"NoSchedule": 3, "NoExecute": 1, "None": 1})}
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                    "metadata": {"name": f"{key}-rule-{i}"}, "spec": {"deviceSelector": selector, "taint": taint}})
    return out


# ---------------------------------------------------------------------------- nodes


def node(r: ga.R, key: str, name: str, rank: int, plain: bool) -> dict[str, Any]:
    """A Node of the scenario; ``plain``: no taint, schedulable, room for anything."""
    labels = {SCENARIO: key, RANK: str(rank), "zone": r.pick(ga.ZONES), "kubernetes.io/hostname": name}
    if r.p(0.5):
        labels["gpu"] = "true"
    spec: dict[str, Any] = {}
    if not plain and r.p(0.22):
        spec["taints"] = [{"key": r.pick(["dedicated", "maint"]), **({"value": "yes"} if r.p(0.5) else {}),
                           "effect": r.weighted({"NoSchedule": 3, "NoExecute": 1.5, "PreferNoSchedule": 1})}]
    if not plain and r.p(0.1):
        spec["unschedulable"] = True
    alloc = {"pods": "110", "cpu": "64", "memory": "256Gi"}
    if not plain:
        alloc = {"pods": r.weighted({"110": 6, "1": 1, "2": 1, "0": 0.3}),
                 "cpu": r.weighted({"64": 6, "2": 1, "1500m": 1}),
                 "memory": r.weighted({"256Gi": 6, "4Gi": 1})}
    status: dict[str, Any] = {"capacity": dict(alloc), "allocatable": alloc,
                              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
    if r.p(0.5):
        status["declaredFeatures"] = ["DRAOptionalNodeOperations"]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": status}


def node_filters(nodes: list[dict[str, Any]]) -> list[str]:
    """What could filter a node out before DRA, for any pod (empty: nothing)."""
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        if any(t["effect"] != "PreferNoSchedule" for t in n["spec"].get("taints") or []):
            out.append(f"{name} tainted")
        if n["spec"].get("unschedulable"):
            out.append(f"{name} unschedulable")
        alloc = n["status"]["allocatable"]
        if alloc["pods"] != "110" or alloc["cpu"] != "64" or alloc["memory"] != "256Gi":
            out.append(f"{name} small allocatable")
    return out


# ---------------------------------------------------------------------------- pods


def ranks(count: int) -> dict[str, Any]:
    """Preferred node affinity that ranks the scenario's nodes in name order (see the docstring)."""
    return {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100 - 10 * i, "preference": {"matchExpressions": [{"key": RANK, "operator": "In",
                                                                      "values": [str(i)]}]}}
        for i in range(count)]}


def required_affinity(r: ga.R, names: list[str]) -> dict[str, Any]:
    kind = r.weighted({"zone": 3, "gpu": 1, "name": 1.5})
    if kind == "name":
        term: dict[str, Any] = {"matchFields": [{"key": "metadata.name", "operator": r.pick(["In", "NotIn"]),
                                                 "values": [r.pick(names)]}]}
    elif kind == "gpu":
        term = {"matchExpressions": [{"key": "gpu", "operator": r.pick(["Exists", "DoesNotExist"])}]}
    else:
        term = {"matchExpressions": [{"key": "zone", "operator": r.pick(["In", "NotIn"]),
                                      "values": [r.pick(ga.ZONES)]}]}
    terms = [term]
    if r.p(0.2):
        terms.append({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]})
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def tolerating(taint: dict[str, Any]) -> dict[str, Any]:
    """A toleration of exactly this taint."""
    if "value" in taint:
        return {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
    return {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}


TOLERATIONS = [{"key": "dedicated", "operator": "Exists"}, {"key": "maint", "operator": "Equal", "value": "yes"},
               {"key": "maint", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"},
               {"key": "dedicated", "operator": "Equal", "value": "yes", "effect": "NoExecute"}]


@dataclass
class Claims:
    """The scenario's claims and templates as pods come to reference them."""

    r: ga.R
    key: str
    ns: str
    fields: ga.Fields
    slices: list[dict[str, Any]]
    node_names: list[str]
    nodes: list[dict[str, Any]]
    cluster: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    reservations: list[tuple[str, str]] = field(default_factory=list)
    templates: set[str] = field(default_factory=set)
    named: list[str] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)

    def spec(self) -> dict[str, Any]:
        """Mostly `gen_alloc`'s claims (aimed at the allocator's corners, often infeasible),
        otherwise a plain request for one or two devices of a class."""
        r = self.r
        if r.p(0.55):
            return localize(ga.claim_spec(r, self.fields), self.key)
        cls = r.weighted({"gpu": 4, "nic": 1, "any": 1})
        body: dict[str, Any] = {"deviceClassName": cls}
        if r.p(0.3):
            body["count"] = 2
        if r.p(0.25):
            driver = ga.NIC if cls == "nic" else ga.GPU
            body["selectors"] = [{"cel": {"expression": r.weighted(ga.selectors_for(driver))}}]
        return localize({"devices": {"requests": [{"name": "r0", "exactly": body}]}}, self.key)

    def claim(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": self.ns}, "spec": spec}

    def ref(self, entry: str, used: set[str]) -> dict[str, Any]:
        """A pod's `resourceClaims` entry named ``entry``, and what it refers to (made here).
        ``used``: the claims the pod names already, which it does not name again (a pod naming a
        claim twice is a regression row: `tests/allocator/scheduler_rows.py`)."""
        r = self.r
        others = [n for n in self.named if n not in used]
        if others and r.p(0.35):
            self.tags.add("shared-claim")
            return self._named(entry, r.pick(others), used)
        kind = r.weighted({"template": 6, "claim-new": 3, "claim-state": 1, "claim-allocated": 1,
                           "claim-reserved": 0.8, "template-state": 1, "template-missing": 0.12,
                           "claim-missing": 0.12})
        self.tags.add(kind)
        n = len(self.cluster) + len(self.inputs)
        if kind in ("template", "template-state", "template-missing"):
            name = f"tpl-{n}"
            if kind != "template-missing":
                tpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                       "metadata": {"name": name, "namespace": self.ns}, "spec": {"spec": self.spec()}}
                (self.inputs if kind == "template" else self.cluster).append(tpl)
                self.templates.add(name)
            else:
                self.missing.add(name)
            return {"name": entry, "resourceClaimTemplateName": name}
        name = f"claim-{n}"
        if kind == "claim-new":
            self.inputs.append(self.claim(name, self.spec()))
        elif kind == "claim-state":
            self.cluster.append(self.claim(name, ga.stored(self.spec())))
        elif kind in ("claim-allocated", "claim-reserved"):
            c = self.claim(name, ga.stored(self.spec()))
            c["status"] = {"allocation": allocated(localize(ga.fixed_allocation(r, self.slices, self.node_names),
                                                            self.key))}
            self.cluster.append(c)
            if kind == "claim-reserved":
                self.cluster.append(self.holder(name, c["status"]["allocation"]))
                self.reservations.append((name, f"holder-{name}"))
        if kind != "claim-missing":
            self.named.append(name)
        else:
            self.missing.add(name)
        return self._named(entry, name, used)

    @staticmethod
    def _named(entry: str, name: str, used: set[str]) -> dict[str, Any]:
        used.add(name)
        return {"name": entry, "resourceClaimName": name}

    def holder(self, claim: str, allocation: dict[str, Any]) -> dict[str, Any]:
        """A pod bound before (``spec.nodeName``, not through the scheduler) that uses ``claim``,
        on a node its allocation allows."""
        ok = [n["metadata"]["name"] for n in self.nodes if _selects(allocation.get("nodeSelector"), n)]
        where = self.r.pick(ok or self.node_names)
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"holder-{claim}", "namespace": self.ns, "labels": {HOLDER: self.key}},
                "spec": {"nodeName": where, "containers": [{"name": "main", "image": IMAGE,
                                                            "resources": {"claims": [{"name": "held"}]}}],
                         "resourceClaims": [{"name": "held", "resourceClaimName": claim}],
                         "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}}


#: When the scheduler allocated a claim (it writes the time with DRADeviceBindingConditions on,
#: as in every profile here). Without it the claim cannot take another consumer: the scheduler
#: adds the time while reserving, and the apiserver refuses any change to a stored allocation.
ALLOCATED_AT = "2026-01-01T00:00:00Z"


def allocated(allocation: dict[str, Any]) -> dict[str, Any]:
    return {**allocation, "allocationTimestamp": ALLOCATED_AT}


def _selects(selector: dict[str, Any] | None, n: dict[str, Any]) -> bool:
    """Whether a node selector of the kinds `gen_alloc` writes picks node ``n``."""
    if not selector:
        return True
    labels, name = n["metadata"]["labels"], n["metadata"]["name"]
    for term in selector.get("nodeSelectorTerms") or []:
        ok = True
        for e in term.get("matchExpressions") or []:
            have = labels.get(e["key"])
            op = e["operator"]
            ok &= {"In": have in e.get("values", ()), "NotIn": have not in e.get("values", ()),
                   "Exists": have is not None, "DoesNotExist": have is None}.get(op, False)
        for f in term.get("matchFields") or []:
            ok &= (name in f["values"]) == (f["operator"] == "In")
        if ok:
            return True
    return False


def pod_spec(r: ga.R, key: str, claims: Claims, node_names: list[str], filters: list[str]) -> dict[str, Any]:
    """A pod spec for the scenario: its node selection, tolerations, requests and claims."""
    spec: dict[str, Any] = {"schedulerName": SCHEDULER, "nodeSelector": {SCENARIO: key},
                            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}
    affinity: dict[str, Any] = ranks(len(node_names))
    if r.p(0.15):
        spec["nodeSelector"]["zone"] = r.pick(ga.ZONES)
        filters.append("pod nodeSelector")
    if r.p(0.2):
        affinity.update(required_affinity(r, node_names))
        filters.append("pod required affinity")
    spec["affinity"] = {"nodeAffinity": affinity}
    taints = [t for n in claims.nodes for t in n["spec"].get("taints") or []]
    if r.p(0.6 if taints else 0.15):
        spec["tolerations"] = [r.pick([*TOLERATIONS, *(tolerating(t) for t in taints)]) for _ in range(r.int(1, 2))]
    requests: dict[str, str] = {}
    if r.p(0.3):
        requests["cpu"] = r.weighted({"100m": 2, "1": 2, "2": 1})
    if r.p(0.2):
        requests["memory"] = r.weighted({"1Gi": 2, "3Gi": 1})
    container: dict[str, Any] = {"name": "main", "image": IMAGE}
    used: set[str] = set()
    entries = [claims.ref(f"c{i}", used) for i in range(r.weighted({0: 1, 1: 7, 2: 2, 3: 0.3}))]
    if entries:
        spec["resourceClaims"] = entries
        container["resources"] = {"claims": [{"name": e["name"]} for e in entries]}
    if requests:
        container.setdefault("resources", {})["requests"] = requests
    spec["containers"] = [container]
    return spec


def workload_object(kind: str, name: str, ns: str, key: str, template: dict[str, Any],
                    replicas: int) -> dict[str, Any]:
    labels = {SCENARIO: key, "app": name}
    pod_template = {"metadata": {"labels": labels}, "spec": template}
    meta = {"name": name, "namespace": ns}
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod_template}
        if kind == "StatefulSet":
            # Parallel: with OrderedReady the controller waits for each pod to be Running and
            # Ready before it makes the next, and nothing runs pods here.
            spec["podManagementPolicy"] = "Parallel"
            spec["serviceName"] = name
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    job = {"parallelism": replicas, "completions": replicas, "backoffLimit": 0,
           "template": {**pod_template, "spec": {**template, "restartPolicy": "Never"}}}
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
            "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": job}}}


# ---------------------------------------------------------------------------- the scenario


def build(rnd: random.Random, index: int) -> SchedScenario:
    r = ga.R(rnd)
    profile = PROFILES[index % len(PROFILES)]
    eff = effective(profile)
    key, ns = f"s{index}", f"sched-{index}"
    names = [f"{key}-{n}" for n in sorted(r.sample(NODE_NAMES, 1, 4))]
    plain = r.p(0.4)
    nodes = [node(r, key, n, i, plain) for i, n in enumerate(names)]
    slices = make_pools(r, key, names, eff)
    cluster: list[dict[str, Any]] = [*nodes, *slices, *device_classes(key)]
    rules = taint_rules(r, key, slices) if eff["DRADeviceTaintRules"] else []
    cluster.extend(rules)
    held = [localize(c, key) for c in ga.allocated_claims(r, slices)]
    for c in held:
        c["metadata"]["namespace"] = ns
        c["status"]["allocation"] = allocated(c["status"]["allocation"])
    cluster.extend(held)
    fields = ga.Fields(eff["DRAConsumableCapacity"], eff["DRADerivedAttributes"], eff["DRADeviceTaints"])
    claims = Claims(r, key, ns, fields, slices, names, nodes)
    filters = node_filters(nodes)
    tags = {profile}
    gang_ok = eff["GenericWorkload"]
    shape = r.weighted({"pods": 5, "workload": 3, "gang": 2 if gang_ok else 0})
    pods: list[str] = []
    replicas = 0
    inputs: list[dict[str, Any]] = []
    if shape == "pods":
        for i in range(r.weighted({1: 5, 2: 3, 3: 1.5})):
            spec = pod_spec(r, key, claims, names, filters)
            inputs.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"pod-{i}", "namespace": ns, "labels": {SCENARIO: key}},
                           "spec": spec})
            pods.append(f"pod-{i}")
    elif shape == "workload":
        kind = r.weighted({"Deployment": 3, "ReplicaSet": 1, "StatefulSet": 1.5, "Job": 2, "CronJob": 0.3})
        tags.add(kind)
        replicas = r.weighted({1: 2, 2: 3, 3: 2, 4: 1})
        spec = pod_spec(r, key, claims, names, filters)
        inputs.append(workload_object(kind, "work", ns, key, spec, replicas))
    else:
        count = r.weighted({1: 1, 2: 3, 3: 2, 4: 1})
        minimum = r.int(1, count)
        tags.add(f"gang-{minimum}-of-{count}")
        spec = pod_spec(r, key, claims, names, filters)
        inputs.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": "gang", "namespace": ns},
                       "spec": {"schedulingPolicy": {"gang": {"minCount": minimum}}}})
        for i in range(count):
            pod_spec_i = {**copy.deepcopy(spec), "schedulingGroup": {"podGroupName": "gang"}}
            inputs.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"member-{i}", "namespace": ns, "labels": {SCENARIO: key}},
                           "spec": pod_spec_i})
            pods.append(f"member-{i}")
    cluster.extend(claims.cluster)
    # What a user submits: claims and templates first, the PodGroup, then the pods or the workload.
    order = {"ResourceClaimTemplate": 0, "ResourceClaim": 1, "PodGroup": 2}
    inputs = sorted(claims.inputs, key=lambda o: order[o["kind"]]) + inputs
    inputs = sorted(inputs, key=lambda o: order.get(o["kind"], 3))
    tags.add(shape)
    tags |= claims.tags
    tags |= {f"slice-{k}" for s in slices for k in ("allNodes", "nodeSelector", "perDeviceNodeSelection")
             if k in s["spec"]}
    if rules:
        tags.add("device-taint-rules")
    if any("sharedCounters" in s["spec"] for s in slices):
        tags.add("counters")
    if filters:
        tags.add("node-filters")
    return SchedScenario(f"sched#{index}", key, ns, profile, cluster, inputs, shape, pods, replicas,
                         claims.reservations, claims.templates, claims.missing, filters, tags)


def scenarios(count: int, salt: int, start: int = 0) -> list[SchedScenario]:
    """``count`` scenarios numbered from ``start`` (names must differ within one cluster), each
    from its own seeded generator: scenario ``i`` is the same in every run and at every scale."""
    return [build(random.Random(salt * 1_000_003 + i), i) for i in range(start, start + count)]
