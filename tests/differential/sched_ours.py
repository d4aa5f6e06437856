"""Our side of the scheduler family: `dra-webhook simulate` on a scenario, read through its JSON.

The scenario's inputs (its templates, claims, PodGroup, pods or workload) are `simulate`'s `-f`
objects; its cluster objects as the apiserver stored them are the `--cluster-state`. The call is
in process (`run_simulate(..., output="json")`, what the command runs) and its JSON is parsed as
DESIGN.md specifies it: `pods: [{pod, node, claims}]` for pods and gangs, `placed`/`replicas` for
a workload. Nothing else of ours is looked at.

Where our side cannot answer, the answer says why instead of guessing:

- `simulate` refuses the inputs (exit 2, e.g. "unsupported kind 'Pod'" before pods were inputs);
- the cluster state holds kinds our state does not read (`webhook.state.base.KINDS`): a
  DeviceTaintRule our allocator would never see, pods bound before that use node capacity.

A scenario whose verdict is its claims' verdict alone (one pod, no node filter of any kind, no
missing reference, no node that only slices name) can still be answered by simulating the pod's
claims, as `simulate` takes them (templates as claims): `via="claims"`. That is what the family
compares until pods are inputs; the pod path wins as soon as `simulate` takes pods.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.differential.gen_alloc import modelled
from tests.differential.gen_sched import SchedScenario, effective
from webhook.allocator.reasons import Code
from webhook.cli.simulate import run_simulate, stored_form
from webhook.gates import FeatureGates
from webhook.planning.capacity import capacity
from webhook.planning.explain import Explanation, explain
from webhook.planning.verdicts import Budget
from webhook.state.base import KINDS, ClusterSnapshot


class ContractError(AssertionError):
    """Our JSON does not have what DESIGN.md promises for the inputs."""


@dataclass
class OurAnswer:
    """Per pod (scenario order) its node or None; for a workload the placed count."""

    via: str                       # "pods": simulate took the pods; "claims": the pod's claims alone
    nodes: dict[str, str | None] = field(default_factory=dict)
    placed: int | None = None
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def bound(self) -> int:
        return self.placed if self.placed is not None else sum(1 for n in self.nodes.values() if n)


@dataclass
class Unanswered:
    why: str


def gates_for(profile: str) -> FeatureGates:
    return FeatureGates().with_overrides(modelled(effective(profile)))


def unread_kinds(state: list[dict[str, Any]]) -> list[str]:
    """Kinds in the scenario's state that our cluster state does not read."""
    return sorted({o["kind"] for o in state} - set(KINDS))


def our_answer(s: SchedScenario, state: list[dict[str, Any]], gates: FeatureGates | None = None
               ) -> OurAnswer | Unanswered:
    """Our verdict on the scenario (``state``: its cluster objects as stored; ``gates``: ours for
    its profile, by default from upstream's gate table, which needs the upstream binaries)."""
    gates = gates if gates is not None else gates_for(s.profile)
    unread = unread_kinds(state)
    code, text = run_simulate(copy.deepcopy(s.inputs), ClusterSnapshot.from_objects(state, source=s.id), gates,
                              None, output="json")
    if code == 2:
        refused = f"simulate refuses the inputs: {text.strip()}"
        if (fallback := claims_only(s, state, gates, unread)) is not None:
            return fallback
        return Unanswered(refused + (f"; our state does not read {', '.join(unread)}" if unread else ""))
    if unread:
        return Unanswered(f"our state does not read {', '.join(unread)}")
    return from_json(s, json.loads(text))


def from_json(s: SchedScenario, doc: dict[str, Any]) -> OurAnswer:
    if s.shape == "workload":
        if not isinstance(doc.get("placed"), int) or doc.get("replicas") != s.replicas:
            raise ContractError(f"{s.id}: a workload's JSON needs placed and replicas={s.replicas}: {doc}")
        return OurAnswer("pods", placed=doc["placed"], doc=doc)
    nodes = {str(p.get("pod", "")).split("/")[-1]: p.get("node") for p in doc.get("pods") or []}
    if missing := [n for n in s.pods if n not in nodes]:
        raise ContractError(f"{s.id}: no entry in pods for {missing}: {doc}")
    return OurAnswer("pods", nodes={n: nodes[n] for n in s.pods}, doc=doc)


def stray_nodes(state: list[dict[str, Any]]) -> set[str]:
    """Nodes that slices name but that are no Node object: a claim can be allocated there, a pod
    never goes there."""
    nodes = {o["metadata"]["name"] for o in state if o["kind"] == "Node"}
    named = {n for o in state if o["kind"] == "ResourceSlice"
             for n in [o["spec"].get("nodeName"), *(d.get("nodeName") for d in o["spec"].get("devices") or [])] if n}
    return named - nodes


def claims_only(s: SchedScenario, state: list[dict[str, Any]], gates: FeatureGates,
                unread: list[str]) -> OurAnswer | None:
    """The pod's claims simulated together, where that is the pod's verdict (see the docstring)."""
    if s.shape != "pods" or len(s.pods) != 1 or s.node_filters or set(unread) - {"Pod"} or stray_nodes(state):
        return None
    (pod,) = s.pod_objects()
    refs = pod["spec"].get("resourceClaims") or []
    if not refs or any((r.get("resourceClaimName") or r.get("resourceClaimTemplateName")) in s.missing for r in refs):
        return None
    given = {(o["kind"], o["metadata"]["name"]): o for o in [*state, *s.inputs]}
    claims, taken = [], set()
    for r in refs:
        if name := r.get("resourceClaimName"):
            claims.append(copy.deepcopy(given[("ResourceClaim", name)]))
            taken.add(name)
        else:
            tpl = given[("ResourceClaimTemplate", r["resourceClaimTemplateName"])]
            claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": f"{pod['metadata']['name']}-{r['name']}", "namespace": s.namespace},
                           "spec": copy.deepcopy(tpl["spec"]["spec"])})
    rest = [o for o in state if not (o["kind"] == "ResourceClaim" and o["metadata"]["name"] in taken)]
    code, text = run_simulate(claims, ClusterSnapshot.from_objects(rest, source=s.id), gates, None, output="json")
    if code == 2:
        raise ContractError(f"{s.id}: simulate refused the pod's claims: {text}")
    doc = json.loads(text)
    return OurAnswer("claims", nodes={s.pods[0]: doc["node"] if doc["feasible"] else None}, doc=doc)


UNALLOCATABLE = re.compile(r"(\d+) cannot allocate all claims")
"""The one phrase of the scheduler's "0/N nodes are available" count comparable in the rig's shared
cluster: nodes reach the DRA plugin only when they pass the node filters, and only a scenario's own
nodes match its pods' node selector (other scenarios' nodes fail a node filter first)."""


def explain_disagreement(s: SchedScenario, state: list[dict[str, Any]], first_unbound: str | None,
                         bound_node: str | None, message: str, gates: FeatureGates | None = None) -> str:
    """What `explain` says of standalone pods, against what the scheduler did ("" when they agree):
    the first pod the scheduler left pending is the one explained, no node fits it, and as many
    nodes as the scheduler counts "cannot allocate all claims"; when every pod was bound, the first
    pod's node is among the nodes that fit it."""
    gates = gates if gates is not None else gates_for(s.profile)
    objects = [stored_form(o, gates) for o in copy.deepcopy(s.inputs)]
    ex = explain(objects, ClusterSnapshot.from_objects(state, source=s.id), gates,
                 Budget(100_000, time.monotonic() + 60))
    if first_unbound is not None:
        if ex.fits or ex.pod.split("/")[-1] != first_unbound:
            return f"explain: fits={ex.fits} about {ex.pod}; the scheduler left {first_unbound} pending"
        theirs = UNALLOCATABLE.search(message)
        ours = _unallocatable(ex)
        if theirs is not None and int(theirs.group(1)) != ours:
            return f"explain: {ours} nodes cannot allocate the claims, the scheduler counts {theirs.group(1)}"
        return ""
    fitting = {n for v in ex.verdicts if v.reason is None for n in v.nodes}
    if not ex.fits or (bound_node is not None and bound_node not in fitting):
        return f"explain: fits={ex.fits}, fitting nodes {sorted(fitting)}; the scheduler bound the pod to {bound_node}"
    return ""


#: First reasons of a node that the scheduler does not count as "cannot allocate all claims": its
#: node filters' and an allocated claim's node selector ("resourceclaim not available on the node").
NOT_THE_ALLOCATORS = frozenset({Code.NODE_NAME, Code.NODE_UNSCHEDULABLE, Code.NODE_TAINT, Code.NODE_AFFINITY,
                                Code.NODE_RESOURCES, Code.TOO_MANY_PODS, Code.CLAIM_NOT_ON_NODE})


def _unallocatable(ex: Explanation) -> int:
    """Nodes whose first reason is the allocator's (the scheduler's "cannot allocate all claims")."""
    return sum(len(v.nodes) for v in ex.verdicts if v.reason is not None and v.reason.code not in NOT_THE_ALLOCATORS)


def capacity_disagreement(s: SchedScenario, state: list[dict[str, Any]], bound: int,
                          gates: FeatureGates | None = None) -> str:
    """What `capacity` says of a workload's pod against the replicas the scheduler bound ("" when
    they agree): N more fit where the scheduler bound N of more replicas, at least as many as it
    bound where it bound them all."""
    gates = gates if gates is not None else gates_for(s.profile)
    objects = [stored_form(o, gates) for o in copy.deepcopy(s.inputs)]
    got = capacity(objects, ClusterSnapshot.from_objects(state, source=s.id), gates,
                   Budget(100_000, time.monotonic() + 60), limit=s.replicas + 1)
    if (bound < s.replicas and got.fits != bound) or got.fits < bound:
        return f"capacity: {got.fits} more fit; the scheduler bound {bound} of {s.replicas} replicas"
    return ""
