"""Pods placed one at a time, as kube-scheduler places them: node filters, then the pod's claims.

Pure (the deadline is a ``time.monotonic()`` value passed in). For each pod, in order:

1. its claims (``claims.pod_claims``): a reference not found makes it unschedulable;
2. the candidate nodes: the Node objects, in name order, that pass the node filters
   (``filters``) given what the pods already on them request;
3. its pending claims allocated together on a candidate node by the one allocator
   (``allocator.allocate``, which searches every candidate, as the scheduler filters every
   node: a fatal error on any of them fails the pod). Claims already allocated (in the state,
   or by an earlier pod: a named claim is shared) restrict the nodes and hold their devices;
4. on success, the node, its requests and the devices are held for the next pod;
5. on failure, as the scheduler's DRA plugin does after a failed attempt (its PostFilter): a
   claim of the pod allocated for other nodes than those it could use, and reserved for no pod,
   is deallocated, and the pod is tried again (one claim at a time; upstream picks one at random,
   we take them in the pod's order).

The node chosen is the first in name order that fits (the scheduler scores the feasible nodes
and may pick another). The replicas of one workload are identical, so placing them stops at the
first one that does not fit: the later ones cannot fit either. The step budget applies per pod,
the deadline to the whole call; at most ``REPLICAS_MAX`` pods are placed per call (past that,
or past the deadline, the answer is "at least k"). A PodGroup with a gang policy binds its pods
only when at least ``minCount`` of them (bound ones included) are placed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.allocator.allocation import CUT_SHORT, ERROR, Allocation
from webhook.allocator.candidate import allocation_of
from webhook.allocator.claims import Claim
from webhook.allocator.engine import Call, allocate, allocated_claim_fits, fold_results
from webhook.allocator.frame import Limits
from webhook.allocator.heldclasses import ClassMemo
from webhook.allocator.model import AllocatedState, Model
from webhook.allocator.reasons import Code, Reason, note, tally
from webhook.gates import FeatureGates, Gate
from webhook.raw import allocation_results, as_dict, as_list, claim_allocation
from webhook.state.pods import TERMINAL
from webhook.workloads.claims import ClaimUse, Lookup, pod_claims
from webhook.workloads.filters import PodFilter
from webhook.workloads.kinds import Workload
from webhook.workloads.nodeuse import Filtered, NodeUse
from webhook.workloads.replicas import Replicas

REPLICAS_MAX = 2_000
"""Pods placed per call at most; a workload with more replicas gets "at least k" past it."""
RESERVED_FOR_MAX = 256
"""Consumers one ResourceClaim can be reserved for (upstream's ResourceClaimReservedForMaxSize)."""


@dataclass
class PodPlacement:
    """Where one pod went (``node`` None: it was not placed) and the claims it uses."""

    pod: str
    node: str | None
    claims: list[str]
    outcome: Allocation
    """The allocator's answer for this pod, node-filter reasons included."""
    group: str = ""
    """The PodGroup it belongs to (``namespace/name``), or ""."""


@dataclass
class Placement:
    """The answer for a set of pods: per pod where it goes, and the first that did not fit."""

    pods: list[PodPlacement] = field(default_factory=list)
    replicas: int = 0
    """Pods asked for (every replica of every workload)."""
    placed: int = 0
    allocations: list[dict[str, Any]] = field(default_factory=list)
    """Every claim allocated on the way, once, in order: ``{"claim", "results"}``."""
    failed: PodPlacement | None = None
    """The first pod that was not placed."""
    notes: list[Reason] = field(default_factory=list)
    """About the whole answer: gangs below minCount, a cap or the deadline reached."""
    steps: int = 0
    cut: bool = False
    """Placement stopped before every replica was tried (cap or deadline): ``placed`` is a floor."""
    released: list[str] = field(default_factory=list)
    """Allocated claims the scheduler would deallocate on the way (``namespace/name``; step 5)."""
    gangs: dict[str, Reason] = field(default_factory=dict)
    """PodGroup (``namespace/name``) -> the note of a gang below minCount whose pods were unplaced."""

    @property
    def feasible(self) -> bool:
        return self.placed == self.replicas and not self.cut


class _Run:
    """What the pods of one ``place`` call share: the state they change as they are placed."""

    def __init__(self, model: Model, lookup: Lookup, gates: FeatureGates, max_steps: int,
                 deadline: float) -> None:
        self.model = model
        self.lookup = lookup
        self.gates = gates
        self.max_steps = max_steps
        self.deadline = deadline
        self.nodes = NodeUse(lookup.snapshot.of("Node"), lookup.snapshot.of("Pod"))
        self.held: AllocatedState = model.allocated
        """Every device in use: the state's, then those of allocated input claims and placed pods."""
        self.memo = ClassMemo()
        """Node classes under ``held``, kept from pod to pod (``allocator.heldclasses``)."""
        self.folded: dict[str, dict[str, Any]] = {}
        """Allocated claims from the input files whose devices ``held`` holds already."""
        self.committed: list[list[Any]] = []
        """The allocation results of every pod placed so far (``held`` holds them)."""
        self.released: set[str] = set()
        """Allocated claims of the state the scheduler deallocated for a pod (``_deallocate``)."""
        self.allocated: dict[str, dict[str, Any]] = {}
        """Shared claims allocated by an earlier pod of this call, as they are stored then."""
        self.consumers: dict[str, int] = {}
        """Pods of this call that use each shared claim."""
        self.groups: dict[str, list[PodPlacement]] = {}
        """Pods placed per gang PodGroup (``namespace/name``)."""
        self.members: dict[str, int] = {}
        """Pods the answer is about per PodGroup (every replica, placed or not)."""
        self.uses: list[ClaimUse] = []
        """The claims of the latest pod placed."""


def place(workloads: Sequence[Workload], model: Model, lookup: Lookup, gates: FeatureGates, *,
          max_steps: int, deadline: float, only: str | None = None, sweep: bool = False,
          report: Callable[[int, int, str], None] | None = None) -> Placement:
    """Place the pods of ``workloads`` (in order, each workload's replicas in order), on node
    ``only`` or on any Node. Never raises on odd input: a problem becomes the answer.

    ``sweep`` (for many replicas: ``capacity``) looks for a replica's node from the node the
    replica before it went to on, and stops at the first that fits. The nodes are the same: what
    kept the earlier replica off a node (its use, the devices in use, a shared claim's node)
    only grows, so it keeps this one off too, and those nodes were searched for fatal errors by
    the first replica, which looks at every node. A replica that fits nowhere from there is
    tried on every node again, so the pod that does not fit gets its full answer; the step
    budget is no longer spent on the nodes the earlier replicas filled. ``report`` is told
    ``(i, replicas, pod)`` before each pod (progress of a long run)."""
    run = _Run(model, lookup, gates, max_steps, deadline)
    if only is not None:
        run.nodes.facts = {k: v for k, v in run.nodes.facts.items() if k == only}
    out = Placement(replicas=sum(w.replicas for w in workloads))
    for w in workloads:
        filtered: Filtered | None = None
        start: int | None = None
        reps = Replicas(model, max_steps, sweep)
        for i in range(w.replicas):
            if len(out.pods) >= REPLICAS_MAX or (out.pods and time.monotonic() > deadline):
                out.cut = True
                out.notes.append(note(f"placed the first {REPLICAS_MAX} pods only: more may fit"
                                      if len(out.pods) >= REPLICAS_MAX else
                                      "the deadline was reached before every pod was placed: more may fit"))
                return _gangs(run, out)
            pod = w.pod(i)
            if report is not None:
                report(len(out.pods), out.replicas, f"pod {w.pod_name(i)}")
            if filtered is None:
                pf = PodFilter.of(pod)
                filtered = Filtered(pf, run.nodes, bool(pf.node_name))
                gkey = group_key(pod)
                if gkey:
                    run.members[gkey] = run.members.get(gkey, 0) + w.replicas
            got = _follow(run, pod, filtered, reps) or _place_one(run, pod, filtered, start, reps)
            out.pods.append(got)
            out.steps += got.outcome.steps
            if got.node is None:  # the later replicas are the same pod: they cannot fit either
                out.failed = out.failed or got
                break
            out.placed += 1
            reps.learn(pod, run.uses, got.outcome, run.memo.claims)
            out.allocations += got.outcome.allocations()
            if sweep and got.node is not None:
                start = filtered.index.get(got.node)
    return _gangs(run, out)


def group_key(pod: dict[str, Any]) -> str:
    """``namespace/name`` of the pod's PodGroup (``spec.schedulingGroup``), or ""."""
    name = as_dict(as_dict(pod.get("spec")).get("schedulingGroup")).get("podGroupName")
    if not isinstance(name, str) or not name:
        return ""
    return f"{as_dict(pod.get('metadata')).get('namespace') or 'default'}/{name}"


def _group_of(run: _Run, pod: dict[str, Any]) -> tuple[str, dict[str, Any] | None, list[str]]:
    """(``namespace/name`` of the pod's PodGroup or "", the PodGroup, notes)."""
    gkey = group_key(pod)
    if not gkey:
        return "", None, []
    ns, name = gkey.split("/", 1)
    group = run.lookup.find("PodGroup", ns, name)
    if group is None:
        return gkey, None, [f"PodGroup {gkey} not found: the scheduler keeps its pods waiting"]
    return gkey, group, []


def _follow(run: _Run, pod: dict[str, Any], filtered: Filtered, reps: Replicas) -> PodPlacement | None:
    """The pod placed on the replica path (``replicas``: the last replica's answer followed), or
    None when that path does not apply to it."""
    if reps.prev is None:
        return None
    uses = reps.uses(pod)
    out = reps.follow(uses, reps.parse(uses), run, filtered, SWEEP_CHUNK)
    if out is None:
        return None
    _commit(run, out, uses, filtered.pf)
    run.uses = uses
    return PodPlacement(_label(pod), out.node, [u.key for u in uses], out)


def _label(pod: dict[str, Any]) -> str:
    """``namespace/name`` of ``pod``."""
    meta = as_dict(pod.get("metadata"))
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _place_one(run: _Run, pod: dict[str, Any], filtered: Filtered, start: int | None = None,
               reps: Replicas | None = None) -> PodPlacement:
    label = _label(pod)
    gkey, group, notes = _group_of(run, pod)
    uses, missing = pod_claims(pod, run.lookup, group, run.gates)
    raws = [run.allocated.get(u.key, u.claim) for u in uses]
    why = [note(n) for n in notes + missing]
    if filtered.pf.node_name:
        why += [note(n) for n in _prebound_notes(run, filtered.pf.node_name, uses, raws)]
    why += [Reason(Code.CLAIM_RESERVED, claim=u.key, got=RESERVED_FOR_MAX) for u in uses
            if u.shared and _consumers(run, u) >= RESERVED_FOR_MAX]
    why += [note(n) for n in _never_reserved(run, uses, raws)]
    if why:  # the pod waits before any node is looked at
        out = Allocation()
        out.summary = why[0]
        out.reasons = why
        return PodPlacement(label, None, [u.key for u in uses], out, gkey)
    _hold_allocated(run, uses, raws)
    # Replicas of one template ask for claims of the same content (names aside, which no search
    # reads) until a shared claim gets allocated: what fit for one fits for the next.
    run.memo.same_claims((id(filtered), tuple((u.entry, u.shared, u.key if u.shared else "",
                                               bool(claim_allocation(r)))
                                              for u, r in zip(uses, raws, strict=True))))
    parsed = reps.claims(uses) if reps is not None else None  # the template's parse, renamed
    swept = _swept(run, raws, filtered, start, parsed) if start is not None else None
    if swept is not None:
        out = swept
    else:
        candidates, rejected = filtered.split(run.nodes)
        out = _allocate(run, raws, candidates, parsed=parsed)
        if not out.feasible and out.kind not in (ERROR, CUT_SHORT):
            stale = _unavailable_unreserved(run, uses, raws, candidates)
            if stale is not None:  # the scheduler's PostFilter frees it; the pod is tried again
                _deallocate(run, *stale)
                return _place_one(run, pod, filtered)
        if not out.feasible:
            _add_rejected(out, rejected, len(run.nodes.facts), len(candidates))
            return PodPlacement(label, None, [u.key for u in uses], out, gkey)
    _commit(run, out, uses, filtered.pf)
    run.uses = uses
    got = PodPlacement(label, out.node, [u.key for u in uses], out, gkey)
    if group is not None and _gang_min(group) > 1:
        run.groups.setdefault(gkey, []).append(got)
    return got


def _never_reserved(run: _Run, uses: list[ClaimUse], raws: list[dict[str, Any]]) -> list[str]:
    """Claims kube-scheduler can never reserve for the pod, so that it is never bound (its
    PreBind fails at every attempt): one the pod names in two entries (it reserves the claim once
    per entry and the apiserver refuses the second, identical reservation), and, with
    DRADeviceBindingConditions on, one allocated without ``allocationTimestamp`` (it stamps the
    allocation while reserving, and the apiserver refuses any change to a stored allocation)."""
    out: list[str] = []
    keys = [u.key for u in uses]
    out += [f"the pod names claim {k} twice: kube-scheduler reserves it once per entry and the apiserver "
            f"refuses the second reservation, so the pod is never bound" for k in sorted(set(keys))
            if keys.count(k) > 1]
    if run.gates.enabled(Gate.DRA_DEVICE_BINDING_CONDITIONS):
        for u, raw in zip(uses, raws, strict=True):
            alloc = claim_allocation(raw)
            if alloc and not alloc.get("allocationTimestamp") and u.key not in run.allocated:
                out.append(f"claim {u.key} is allocated without allocationTimestamp: kube-scheduler stamps it when "
                           f"it reserves the claim and the apiserver refuses any change to an allocation")
    return out


def _consumers(run: _Run, use: ClaimUse) -> int:
    held = run.allocated.get(use.key, use.claim)
    return len(as_list(as_dict(held.get("status")).get("reservedFor"))) + run.consumers.get(use.key, 0)


def _prebound_notes(run: _Run, node: str, uses: list[ClaimUse], raws: list[dict[str, Any]]) -> list[str]:
    """A pod with ``spec.nodeName`` is never scheduled: the node must exist and every claim must
    be allocated already (nothing else allocates them; the kubelet waits for them)."""
    if node not in run.nodes.facts:
        return [f"node {node} (spec.nodeName) is not in the cluster state"]
    return [f"spec.nodeName is set: kube-scheduler does not schedule the pod, so nothing allocates "
            f"claim {u.key}" for u, raw in zip(uses, raws, strict=True)
            if not claim_allocation(raw)]


def _hold_allocated(run: _Run, uses: list[ClaimUse], raws: list[dict[str, Any]]) -> None:
    """Allocated claims the state does not hold (from the input files): their devices are in
    use from now on, once each (``allocate`` takes ``held`` as holding every allocated claim)."""
    for u, raw in zip(uses, raws, strict=True):
        alloc = claim_allocation(raw)
        key = tuple(u.key.split("/", 1))
        if not alloc or u.key in run.folded or u.key in run.allocated or key in run.model.allocated_claims:
            continue
        run.folded[u.key] = raw
        results = allocation_results(raw)
        held = run.held.copy()
        held.add_results(results, run.model.gates)
        run.held = held
        run.memo.touch(_keys_of(results), held)


def _unavailable_unreserved(run: _Run, uses: list[ClaimUse], raws: list[dict[str, Any]],
                            candidates: Sequence[str]) -> tuple[ClaimUse, dict[str, Any]] | None:
    """The first claim of the pod the scheduler would deallocate after the pod failed: allocated,
    reserved for no pod, and unusable on some candidate node (its allocation's node selector
    does not match the node, which the DRA plugin notes on every node it filters)."""
    for u, raw in zip(uses, raws, strict=True):
        if not claim_allocation(raw) or _consumers(run, u):
            continue
        if any(not allocated_claim_fits(raw, run.model.node(name)) for name in candidates):
            return u, raw
    return None


def _deallocate(run: _Run, use: ClaimUse, raw: dict[str, Any]) -> None:
    """Treat ``use``'s claim as deallocated from now on: its devices are free again."""
    run.allocated[use.key] = deallocated(raw)
    run.released.add(use.key)
    run.folded.pop(use.key, None)
    held = AllocatedState()
    for (ns, name), stored in run.model.allocated_claims.items():
        if f"{ns}/{name}" not in run.released:
            held.add_results(allocation_results(stored), run.model.gates)
    for stored in run.folded.values():
        held.add_results(allocation_results(stored), run.model.gates)
    for results in run.committed:
        for got in results:
            fold_results(held, got, run.model.gates)
    run.held = held
    run.memo.touch(_keys_of(allocation_results(raw)), held)


def deallocated(claim: dict[str, Any]) -> dict[str, Any]:
    """``claim`` as the scheduler leaves it when it deallocates it: no allocation, reservations or
    device status."""
    status = as_dict(claim.get("status"))
    return {**claim, "status": {k: v for k, v in status.items() if k not in ("allocation", "reservedFor", "devices")}}


def _keys_of(results: list[Any]) -> Iterator[tuple[str, str, str]]:
    """(driver, pool, device) of each raw allocation result: the devices whose use it changes."""
    return ((str(as_dict(r).get("driver")), str(as_dict(r).get("pool")), str(as_dict(r).get("device")))
            for r in results)


def _allocate(run: _Run, raws: list[dict[str, Any]], candidates: Sequence[str],
              first_fit: bool = False, parsed: list[Claim] | None = None) -> Allocation:
    if not candidates:
        return Allocation()
    if not raws:
        out = Allocation()
        out.feasible, out.node, out.kind = True, candidates[0], "ok"
        return out
    return allocate(raws, run.model, Call(nodes=candidates, held=run.held, memo=run.memo, parsed=parsed,
                                          limits=Limits(run.max_steps, run.deadline), first_fit=first_fit))


SWEEP_CHUNK = 32
"""Candidate nodes a swept replica asks the allocator about at a time."""


def _swept(run: _Run, raws: list[dict[str, Any]], filtered: Filtered, start: int,
           parsed: list[Claim] | None = None) -> Allocation | None:
    """A replica on the first node from ``filtered.order[start]`` on that takes it (``place``'s
    ``sweep``); None when none does, or the allocator failed otherwise: then every node is asked."""
    i = start
    while i < len(filtered.order):
        chunk, i = filtered.after(run.nodes, i, SWEEP_CHUNK)
        if not chunk:
            break
        out = _allocate(run, raws, chunk, first_fit=True, parsed=parsed)
        if out.feasible:
            return out
        if out.kind in (ERROR, CUT_SHORT):
            return None
    return None


def _add_rejected(out: Allocation, rejected: dict[Reason, list[str]], total: int, candidates: int) -> None:
    """The filter reasons of the nodes that were not candidates, and the pod's summary."""
    for why, names in rejected.items():
        out.add_nodes([why], names)
    if out.kind in (ERROR, CUT_SHORT):
        return
    counts: dict[tuple[Code, str], int] = {}
    for w, names in rejected.items():
        counts[(w.code, w.capacity)] = counts.get((w.code, w.capacity), 0) + len(names)
    if candidates:
        counts[(Code.NO_ALLOCATION, "")] = candidates
    out.summary = tally(total, counts) if total else Reason(Code.NO_NODES)


def _commit(run: _Run, out: Allocation, uses: list[ClaimUse], pf: PodFilter) -> None:
    """Hold what the placed pod uses: its node's requests and its new claims' devices."""
    assert out.node is not None
    run.nodes.add(out.node, dict(pf.requests))
    if out.results:
        run.committed.append(out.results)
        # The run's own state changes in place (no call keeps it past its end); the model's is copied.
        held = run.held.copy() if run.held is run.model.allocated else run.held
        for got in out.results:
            fold_results(held, got, run.model.gates)
        run.held = held
        run.memo.touch({r.device.dkey for got in out.results for r in got}, held)
    pending = iter(out.results)
    for u in uses:
        if u.shared:
            run.consumers[u.key] = run.consumers.get(u.key, 0) + 1
        stored = run.allocated.get(u.key, u.claim)
        if claim_allocation(stored):
            continue
        results = next(pending, [])
        if u.shared:
            run.allocated[u.key] = {**u.claim, "status": {"allocation": allocation_of(results)}}


def _gang_min(group: dict[str, Any]) -> int:
    gang = as_dict(as_dict(as_dict(group.get("spec")).get("schedulingPolicy")).get("gang"))
    n = gang.get("minCount")
    return n if isinstance(n, int) and not isinstance(n, bool) else 1


def _gangs(run: _Run, out: Placement) -> Placement:
    """Unplace the pods of gangs that reached fewer than ``minCount`` pods (bound ones counted);
    the answer's ``released`` claims.

    Only a whole gang is judged: while fewer than ``minCount`` of its pods exist (the answer's,
    and the pending and bound ones of the state: a pod reviewed on its own, say), the scheduler
    waits for the others to appear and the answer is about these pods alone.
    """
    out.released = sorted(run.released)
    for gkey, placed in run.groups.items():
        ns, name = gkey.split("/", 1)
        group = run.lookup.find("PodGroup", ns, name)
        need = _gang_min(group) if group is not None else 1
        members = [p for p in run.lookup.snapshot.of("Pod") if _member(p, ns, name)]
        bound = sum(1 for p in members if as_dict(as_dict(p).get("spec")).get("nodeName"))
        if len(placed) + bound >= need or run.members.get(gkey, 0) + len(members) < need:
            continue
        for p in placed:
            p.node = None
        out.placed -= len(placed)
        unbound = {c for p in placed for c in p.claims}  # nor are their claims allocated
        out.allocations = [a for a in out.allocations if a["claim"] not in unbound]
        out.gangs[gkey] = note(f"PodGroup {gkey} needs {need} pods (gang minCount), only "
                               f"{len(placed) + bound} fit: none of its pods is bound")
        out.notes.append(out.gangs[gkey])
    return out


def _member(pod: Any, ns: str, group: str) -> bool:
    """Whether a pod of the state belongs to PodGroup ``ns/group`` (terminal pods do not)."""
    meta, spec = as_dict(as_dict(pod).get("metadata")), as_dict(as_dict(pod).get("spec"))
    return ((meta.get("namespace") or "default") == ns
            and as_dict(spec.get("schedulingGroup")).get("podGroupName") == group
            and as_dict(as_dict(pod).get("status")).get("phase") not in TERMINAL)
