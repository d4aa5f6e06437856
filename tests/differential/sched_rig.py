"""The real kube-scheduler as an oracle: scenarios run on the rig's control plane, in waves.

`SchedRig` starts one etcd and, per gate profile, a kube-apiserver with its kube-scheduler and
kube-controller-manager (`tests/rig/control.py`). The scheduler has a second profile, `dra-diff`,
for the scenarios' pods: the default filters, scoring by NodeAffinity alone (so the scenarios'
rank preferences decide between feasible nodes, see `gen_sched`), no preemption (every pod has
the same priority: it could never help; the DRA plugin's own PostFilter stays on, as in the
default profile: it deallocates a claim allocated where the pod cannot run and held by no pod,
and the pod tries again) and no DRA filter timeout (a loaded machine must not
turn a slow allocation into an Unschedulable verdict). The controller manager runs without its
eviction controllers: they would delete pods bound before to a node or device tainted NoExecute,
which is eviction, not scheduling.

`run(profile, scenarios)` places one wave of scenarios (their names differ) and returns what the
scheduler did with each pod:

1. the cluster objects of every scenario (namespaces, DeviceClasses, DeviceTaintRules, Nodes
   registered ready, ResourceSlices, claims already allocated, pods bound before and the claims
   reserved for them), as stored: this is what our side gets as its cluster state;
2. the inputs: templates, claims, PodGroups, then pods and workloads, their pods held by a
   scheduling gate until the controller manager has made every pod (workloads) and every claim
   from a template: so no pod is judged before its claims exist, and no pod before the whole
   wave's pools are published;
3. the gates come off: a workload's or a gang's pods all at once, standalone pods one after the
   other (the next when the previous one is decided), as our side places them;
4. a pod is decided when bound (`spec.nodeName`) or when its `PodScheduled` condition is False
   with reason `Unschedulable` or `SchedulerError`, unless the message says the scheduler is only
   waiting (a claim being allocated for another pod right now), or a claim of the pod was just
   deallocated by the DRA plugin's PostFilter (its next attempt comes by itself). A pod that names a claim or a
   template that does not exist is never let into the scheduling queue (the DRA plugin's
   PreEnqueue check), so no condition ever says so: it is decided (not bound) once ungated;
5. the wave's objects are deleted (pods at once: no kubelet will confirm their end).
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.differential.gen_sched import HOLDER, SCHEDULER, SchedScenario, apiserver_gates
from tests.rig.cluster import ApiServer, Cluster, RigError
from tests.rig.control import register_node
from tests.rig.rest import Rest

GATE = "dra-diff.example.com/hold"
WAVE = "dra-diff.example.com/wave"
DIFF_PROFILE: dict[str, Any] = {
    "schedulerName": SCHEDULER,
    "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity", "weight": 1}]},
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]}},
    "pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": "0s"}}]}
DISABLED_CONTROLLERS = ("device-taint-eviction-controller", "taint-eviction-controller")
THREADS = 6
#: The scheduler is only waiting, or lost a race it retries (a claim written by another pod of
#: the same group, an update conflict): the pod's turn comes again by itself.
TRANSIENT = ("is in the process of being allocated", "waiting for", "ResourceClaim not created yet",
             "got allocated elsewhere in the meantime", "the object has been modified")
#: A pod Unschedulable because a claim is allocated where it cannot run: kube-scheduler's DRA
#: PostFilter deallocates such a claim when no pod holds it, before it writes the pod's condition,
#: and the pod's next attempt comes by itself. While one of the pod's claims is not allocated, or
#: already reserved for it by that attempt, the pod waits for it; one still so after this many
#: seconds is decided as it stands.
NOT_AVAILABLE = "resourceclaim not available on the node"
DEALLOCATED_GRACE = 90.0
#: Order in which a scenario's cluster objects are created (claims before the pods holding them).
ORDER = {"DeviceClass": 0, "DeviceTaintRule": 1, "Node": 2, "ResourceSlice": 3, "ResourceClaimTemplate": 4,
         "ResourceClaim": 5, "Pod": 6}


@dataclass
class PodOutcome:
    """What the scheduler did with one pod."""

    name: str
    node: str | None
    reason: str = ""
    message: str = ""


@dataclass
class SchedOutcome:
    """One scenario's result: its pods (scenario order; a workload's by name) and, for our side,
    its cluster objects as the apiserver stored them. ``error``: the rig could not run it."""

    scenario: SchedScenario
    pods: list[PodOutcome] = field(default_factory=list)
    state: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    refused: str = ""
    """The apiserver refused one of the scenario's objects (a generator slip, not a verdict)."""

    @property
    def bound(self) -> int:
        return sum(1 for p in self.pods if p.node)


class SchedRig:
    """Per gate profile: kube-apiserver, kube-scheduler and kube-controller-manager, on one etcd."""

    def __init__(self, workdir: Path, profile_names: Sequence[str]) -> None:
        first, *rest = profile_names
        self.cluster = Cluster(workdir, apiserver_gates(first), control_plane=True, scheduler_profiles=[DIFF_PROFILE],
                               disabled_controllers=DISABLED_CONTROLLERS)
        self.apis: dict[str, ApiServer] = {first: self.cluster.api}
        self._local = threading.local()
        self._waves = itertools.count()
        try:  # side by side: each start is mostly waiting
            with ThreadPoolExecutor(max(1, len(rest))) as ex:
                for name, api in zip(rest, ex.map(self._start, rest), strict=True):
                    self.apis[name] = api
        except BaseException:
            self.cluster.stop()
            raise

    def _start(self, profile: str) -> ApiServer:
        api = self.cluster.add_apiserver(apiserver_gates(profile), name=profile, control_plane=True)
        self.cluster.add_control_plane(api, [DIFF_PROFILE], DISABLED_CONTROLLERS)
        return api

    def stop(self) -> None:
        self.cluster.stop()

    def rest(self, profile: str) -> Rest:
        """This thread's client of ``profile``'s apiserver."""
        clients: dict[str, Rest] = self._local.__dict__.setdefault("clients", {})
        if profile not in clients:
            clients[profile] = Rest(self.apis[profile])
        return clients[profile]

    def alive(self) -> None:
        """Raise with the log tail if a process of the rig has exited."""
        for p in self.cluster.procs():
            if not p.alive():
                raise RigError(f"{p.name} exited ({p.popen.returncode}):\n{p.tail()}")

    # -- one wave --------------------------------------------------------------------------------

    def run(self, profile: str, scenarios: Sequence[SchedScenario], timeout: float = 600) -> list[SchedOutcome]:
        """Place the scenarios (all of ``profile``) on the scheduler; one outcome each, in order."""
        wave = f"w{next(self._waves)}"
        outcomes = [SchedOutcome(s) for s in scenarios]
        deadline = time.monotonic() + timeout
        with ThreadPoolExecutor(THREADS, thread_name_prefix=f"sched-{profile}") as pool:
            list(pool.map(lambda o: self._setup(profile, wave, o), outcomes))
            list(pool.map(lambda o: self._submit(profile, wave, o), outcomes))
            live = self._made(profile, wave, [o for o in outcomes if not o.refused], deadline)
            self._place(profile, wave, live, pool, deadline)
            self._cleanup(profile, wave, outcomes, pool)
        return outcomes

    def _setup(self, profile: str, wave: str, o: SchedOutcome) -> None:
        s, rest = o.scenario, self.rest(profile)
        try:
            rest.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.namespace, "labels": {
                "resource.kubernetes.io/admin-access": "true", WAVE: wave}}})
            rest.create({"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": "default", "namespace": s.namespace}}, exists_ok=True)
            stored: dict[tuple[str, str], dict[str, Any]] = {}
            for obj in sorted(s.cluster, key=lambda x: ORDER[x["kind"]]):
                made = self._create(rest, labelled(obj, wave))
                stored[(made["kind"], made["metadata"]["name"])] = made
            for claim, holder in s.reservations:
                c, h = stored[("ResourceClaim", claim)], stored[("Pod", holder)]
                status = {**c["status"], "reservedFor": [{"resource": "pods", "name": holder,
                                                          "uid": h["metadata"]["uid"]}]}
                stored[("ResourceClaim", claim)] = rest.patch(c, {"status": status}, subresource="status")
            o.state = [clean(x) for x in stored.values()]
        except RigError as e:
            o.refused = str(e)

    @staticmethod
    def _create(rest: Rest, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "Node":
            return register_node(rest, obj)
        status = obj.get("status") if obj["kind"] == "ResourceClaim" else None
        made = rest.create({k: v for k, v in obj.items() if k != "status"} if status else obj)
        if status:
            made = rest.patch(made, {"status": status}, subresource="status")
        return made

    def _submit(self, profile: str, wave: str, o: SchedOutcome) -> None:
        if o.refused:
            return
        rest = self.rest(profile)
        try:
            for obj in o.scenario.inputs:
                rest.create(gated(labelled(obj, wave)))
        except RigError as e:
            o.refused = str(e)

    def _pods(self, profile: str, wave: str) -> dict[str, list[dict[str, Any]]]:
        """The wave's pods by namespace (not the pods bound before), sorted by name."""
        out: dict[str, list[dict[str, Any]]] = {}
        for p in self.rest(profile).list("Pod", label_selector=f"{WAVE}={wave},!{HOLDER}"):
            out.setdefault(p["metadata"]["namespace"], []).append(p)
        for pods in out.values():
            pods.sort(key=lambda p: p["metadata"]["name"])
        return out

    def _made(self, profile: str, wave: str, outcomes: list[SchedOutcome], deadline: float) -> list[SchedOutcome]:
        """Wait until the controllers have made every scenario's pods and claims from templates;
        those still missing some at the deadline get an error. The scenarios that are ready."""
        waiting = list(outcomes)
        while True:
            self.alive()
            by_ns = self._pods(profile, wave)
            still = []
            for o in waiting:  # the error stays only if it is still so at the deadline
                o.error = not_made(o.scenario, by_ns.get(o.scenario.namespace, []))
                if o.error:
                    still.append(o)
            waiting = still
            if not waiting or time.monotonic() > deadline:
                return [o for o in outcomes if not o.error]
            time.sleep(1.0)

    def _place(self, profile: str, wave: str, outcomes: list[SchedOutcome], pool: ThreadPoolExecutor,
               deadline: float) -> None:
        """Ungate step by step until every pod is decided."""
        step = {id(o): 0 for o in outcomes}
        since: dict[tuple[str, str], float] = {}
        open_ = list(outcomes)
        ungated: set[tuple[str, str]] = set()
        while open_:
            self.alive()
            by_ns = self._pods(profile, wave)
            todo: list[dict[str, Any]] = []
            still: list[SchedOutcome] = []
            for o in open_:
                s = o.scenario
                pods = by_ns.get(s.namespace, [])
                if s.shape == "pods":
                    mine = {p["metadata"]["name"]: p for p in pods}
                    current = [mine[s.pods[step[id(o)]]]]
                else:
                    current = pods
                waiting = [p for p in current if (s.namespace, p["metadata"]["name"]) not in ungated]
                if waiting:
                    todo.extend(waiting)
                    still.append(o)
                elif all(decided(p, s) and not self._deallocated(profile, p, since) for p in current):
                    if s.shape == "pods" and step[id(o)] + 1 < len(s.pods):
                        step[id(o)] += 1
                        still.append(o)
                    else:  # standalone pods: all of them, as they are now
                        final = [mine[n] for n in s.pods] if s.shape == "pods" else current
                        o.pods = [outcome_of(p, s) for p in sorted(final, key=order_in(s))]
                else:
                    still.append(o)
            list(pool.map(lambda p: self._ungate(profile, p), todo))
            ungated |= {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in todo}
            open_ = still
            if open_:
                if time.monotonic() > deadline:
                    for o in open_:
                        pods = by_ns.get(o.scenario.namespace, [])
                        o.error = "not decided in time: " + "; ".join(
                            f"{p['metadata']['name']}: {outcome_of(p)}" for p in pods)
                    return
                time.sleep(0.5 if todo else 1.0)

    def _deallocated(self, profile: str, pod: dict[str, Any], since: dict[tuple[str, str], float]) -> bool:
        """Whether the scheduler deallocated one of the pod's claims after its last attempt
        (``NOT_AVAILABLE``) and its next attempt is still to come."""
        if NOT_AVAILABLE not in str(scheduled_condition(pod).get("message", "")):
            return False
        ns = pod["metadata"]["namespace"]
        names = {c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or []}
        names |= {c.get("resourceClaimName") for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        rest = self.rest(profile)
        uid = pod["metadata"].get("uid")
        for name in sorted(n for n in names if n):
            r = rest.request("GET", rest.path("ResourceClaim", ns, name))
            status = (r.json().get("status") or {}) if r.status_code == 200 else {}
            # Not allocated: the next attempt is still to come. Reserved for this pod (which was
            # listed unbound just before): the next attempt took it and is binding the pod now.
            retrying = r.status_code == 200 and (not status.get("allocation") or any(
                c.get("uid") == uid for c in status.get("reservedFor") or []))
            if retrying:
                first = since.setdefault((ns, pod["metadata"]["name"]), time.monotonic())
                return time.monotonic() - first < DEALLOCATED_GRACE
        return False

    def _ungate(self, profile: str, pod: dict[str, Any]) -> None:
        self.rest(profile).patch(pod, [{"op": "remove", "path": "/spec/schedulingGates"}], kind="json")

    def _cleanup(self, profile: str, wave: str, outcomes: Sequence[SchedOutcome], pool: ThreadPoolExecutor) -> None:
        """Delete the wave: namespaces (no new objects there), their pods at once, then the nodes,
        slices, classes and rules. Nothing waits for the namespaces to go."""
        rest = self.rest(profile)

        def one(ns: str) -> None:
            r = self.rest(profile)
            r.delete("Namespace", ns)
            r.delete_collection("Pod", ns, grace_seconds=0)

        list(pool.map(one, [o.scenario.namespace for o in outcomes]))
        for kind in ("Node", "ResourceSlice", "DeviceClass", "DeviceTaintRule"):
            rest.delete_collection(kind, label_selector=f"{WAVE}={wave}")


# ---------------------------------------------------------------------------- pods


def labelled(obj: Mapping[str, Any], wave: str) -> dict[str, Any]:
    """A copy of ``obj`` with the wave's label (a workload's pods get it through their template)."""
    out = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), WAVE: wave}
    for template in pod_templates(out):
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), WAVE: wave}
    return out


def gated(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the rig's scheduling gate on its pods (a Pod, or a workload's pod template)."""
    specs = [obj["spec"]] if obj["kind"] == "Pod" else [t["spec"] for t in pod_templates(obj)]
    for spec in specs:
        spec["schedulingGates"] = [{"name": GATE}]
    return obj


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return [spec["template"]] if isinstance(spec.get("template"), dict) else []


def not_made(s: SchedScenario, pods: list[dict[str, Any]]) -> str:
    """What the controllers have yet to make for the scenario ("" when nothing)."""
    want = s.replicas if s.shape == "workload" else len(s.pods)
    if len(pods) < want:
        return f"not made in time: {len(pods)} of {want} pods"
    # A pod naming a missing template gets none of its claims made (the controller gives up on
    # the pod): it is never queued anyway.
    if late := [p["metadata"]["name"] for p in pods if not claims_made(p, s.templates) and not names_missing(p, s)]:
        return f"not made in time: the claims from templates of {', '.join(late)}"
    return ""


def claims_made(pod: dict[str, Any], templates: set[str]) -> bool:
    """Every claim the pod needs from an existing template has been made (the pod's status names it)."""
    made = {c["name"] for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if c.get("resourceClaimName")}
    return all(c["name"] in made for c in pod["spec"].get("resourceClaims") or []
               if c.get("resourceClaimTemplateName") in templates)


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any]:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return {}


def names_missing(pod: dict[str, Any], s: SchedScenario) -> list[str]:
    """The claims and templates the pod names that do not exist."""
    return [n for c in pod["spec"].get("resourceClaims") or []
            if (n := c.get("resourceClaimName") or c.get("resourceClaimTemplateName")) in s.missing]


def decided(pod: dict[str, Any], s: SchedScenario) -> bool:
    """Bound, or Unschedulable (or failed with an error) for a reason that is not just waiting, or
    kept out of the queue for a missing claim."""
    if pod["spec"].get("nodeName"):
        return True
    if not pod["spec"].get("schedulingGates") and names_missing(pod, s):
        return True
    c = scheduled_condition(pod)
    if c.get("status") != "False" or c.get("reason") not in ("Unschedulable", "SchedulerError"):
        return False
    return not any(t in str(c.get("message", "")) for t in TRANSIENT)


def outcome_of(pod: dict[str, Any], s: SchedScenario | None = None) -> PodOutcome:
    c = scheduled_condition(pod)
    node = pod["spec"].get("nodeName") or None
    if node:
        return PodOutcome(pod["metadata"]["name"], node)
    if s is not None and (missing := names_missing(pod, s)):
        return PodOutcome(pod["metadata"]["name"], None, "NotQueued",
                          f"kept out of the scheduling queue: {', '.join(missing)} does not exist")
    return PodOutcome(pod["metadata"]["name"], None, str(c.get("reason", "")), str(c.get("message", "")))


def order_in(s: SchedScenario) -> Callable[[dict[str, Any]], tuple[int, str]]:
    index = {n: i for i, n in enumerate(s.pods)}
    return lambda p: (index.get(p["metadata"]["name"], len(index)), p["metadata"]["name"])


def clean(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object without the server's bookkeeping our side does not read."""
    out = copy.deepcopy(obj)
    out.get("metadata", {}).pop("managedFields", None)
    return out
