"""Cluster-level allocation (docs/allocator.md §9-§10): per node, joint or claim-by-claim, with reasons.

Pure. ``allocate`` answers "could these claims be allocated now, on which node, with which
devices — and if not, why?" Nodes are tried in name order (or the caller's order of candidate
nodes); the first node that succeeds gives the answer, and the others are still searched, as
kube-scheduler filters every node: a fatal error on any of them fails the attempt (a one-shot
call skips them when none can raise one: ``settled.py``). One step budget and one deadline cover
the whole call (all nodes together).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webhook.allocator.allocation import CUT_SHORT, ERROR, INVALID_POOL, OK, UNSATISFIABLE, Allocation, NodeReasons
from webhook.allocator.answers import recall, remember
from webhook.allocator.candidate import status_result
from webhook.allocator.capacity import CapacityError, consumed_capacity
from webhook.allocator.claims import AllocError, BudgetExceeded, Claim, Leaf, claim_label, parse_claim, parse_leaf
from webhook.allocator.classes import node_names
from webhook.allocator.devices import interned_str
from webhook.allocator.fit import selector_matches
from webhook.allocator.frame import DEFAULT_LIMITS, Carry, DeviceResult, Limits
from webhook.allocator.heldclasses import FITS, ClassMemo, Failures
from webhook.allocator.model import AllocatedState, Device, Model, NodeInfo
from webhook.allocator.nodedata import node_data
from webhook.allocator.nodesel import parse_node_selector
from webhook.allocator.pools import Pool, pools_for
from webhook.allocator.reasons import Code, Reason, fatal, note, rank, text
from webhook.allocator.runs import Runs, known_run
from webhook.allocator.search import Search
from webhook.allocator.settled import cheap_one_shot, settles
from webhook.gates import FeatureGates, Gate
from webhook.raw import allocation_results, as_dict, claim_allocation

JOINT, PER_CLAIM = "joint", "per-pod"
NODE_CLASSES = True
"""Reuse one node's failure for the nodes of its class (``classes.py``); tests compare with it off."""
CHEAP_FIT_STEPS = 8
"""A first node that fits within this many steps turns node classes off for the rest of the call:
its class would cost more to key, node by node (every device of its pools read), than the
searches it spares (issue 30's lean shape, 64 devices to key: one device in 6 steps). Classes
never change an answer, only skip searches whose outcome they know, so this changes only the
time. A looser test (a fit within a quarter of the node's candidates) sped up one-shot runs but
made a warm check of B3's grouped claim 300x slower (its classes are already keyed): not kept."""


def allocated_claim_fits(raw: dict[str, Any], node: NodeInfo) -> bool:
    """Whether an allocated claim can be used on ``node`` (its allocation's ``nodeSelector``
    matches; a claim that is not allocated, or allocated for every node, can)."""
    sel = claim_allocation(raw).get("nodeSelector")
    parsed = parse_node_selector(sel)
    return parsed is None or parsed.matches(node)


@dataclass(frozen=True, kw_only=True)
class Call:
    """How one ``allocate`` call searches, beyond its claims and model; the defaults are a plain
    check of every node."""

    nodes: Sequence[str] | None = None
    """The candidate nodes, in order (default: every node, in name order)."""
    held: AllocatedState | None = None
    """Replaces the model's allocated state (devices that earlier pods took); it holds those of the
    allocated input claims already."""
    memo: ClassMemo | None = None
    """Keeps node classes under ``held`` from one call to the next (``heldclasses.ClassMemo``)."""
    mode: str = JOINT
    """``JOINT`` (one search of every claim) or ``PER_CLAIM`` (claim by claim, as pods are)."""
    limits: Limits = DEFAULT_LIMITS
    """The step budget and deadline of the whole call (every node together)."""
    first_fit: bool = False
    """Stop at the first node that fits (``unchecked`` counts the rest): for a caller that searched
    these nodes for fatal errors before, with the same claims and fewer devices in use."""
    one_shot: bool = False
    """A call no later call builds on (``simulate``): it stops at the first fit when no later node
    can raise a fatal error (``settled.settles``), and a cheaper fit turns node classes off."""
    parsed: Sequence[Claim] | None = None
    """The pending claims, parsed already (``claims.renamed`` of a template's parse: a replica's),
    in the order of the raw claims that carry no allocation."""


EVERY_NODE = Call()


def allocate(raw_claims: list[dict[str, Any]], model: Model, call: Call = EVERY_NODE) -> Allocation:
    """Allocate ``raw_claims`` (defaulted ResourceClaims) on one of ``call.nodes``.

    As kube-scheduler filters every candidate node, every one is searched: the first that fits
    is the answer, but a fatal error on *any* of them (a CEL runtime error, ``All`` over an
    incomplete pool, ...) fails the whole attempt, naming that node. Nodes of one class
    (``classes.py``) are searched once. When the budget or deadline ends that search after a
    node fit, the answer stays feasible and ``unchecked`` says how many nodes were not looked at.
    Claims that already carry ``status.allocation`` are not re-allocated: they restrict the node
    (their ``nodeSelector``) and hold their devices (in ``call.held`` already when that is given).
    Never raises on odd input: problems become the answer.
    """
    out = Allocation()
    pending: list[dict[str, Any]] = []
    fixed: list[dict[str, Any]] = []
    for raw in raw_claims:
        (fixed if claim_allocation(raw) else pending).append(raw)
    try:
        claims = list(call.parsed) if call.parsed is not None else [parse_claim(raw, model) for raw in pending]
    except AllocError as e:
        out.kind, out.summary = ERROR, e.reason
        out.entries.append(e.reason)
        return out
    out.claims = claims
    out.labels = [c.label for c in claims]
    in_use = call.held if call.held is not None else _held(model, model.allocated, fixed)
    names = call.nodes if call.nodes is not None else node_names(model)
    if not names:
        out.summary = Reason(Code.NO_NODES)
        out.entries.append(out.summary)
        return out
    # Nodes of one class (``classes.py``) search alike: the first one's outcome stands for the rest.
    # One node alone has no other of its class to spare a search, unless a memo keeps answers.
    many = len(names) > 1 or call.memo is not None
    classes = Failures(model, claims, in_use, call.memo) if NODE_CLASSES and many else None
    run = _Run(model, claims, fixed, in_use, classes, call, Runs.of(classes, names) if classes is not None else None)
    i = 0
    decided = False
    while i < len(names):
        k = known_run(out, run, names, i)
        if k:
            i += k
            continue
        if _try_node(out, run, names[i]):
            if out.feasible:  # the budget ended on node i: it and the rest were not searched
                out.unchecked = len(names) - i
            return out
        i += 1
        if call.first_fit and out.feasible:
            out.unchecked = len(names) - i
            return out
        if call.one_shot and out.feasible and not decided:  # decided once, at the first fit
            with _cel_deadline(call.limits.deadline):  # (its CEL stops at the deadline too)
                if settles(claims, model):
                    return out
            decided = True
    if not out.feasible:
        _conclude(out)
    return out


@dataclass(frozen=True, slots=True)
class _Run:
    """What every node's search of one ``allocate`` call shares: the call's context."""

    model: Model
    claims: list[Claim]
    """The claims to allocate, parsed."""
    fixed: list[dict[str, Any]]
    """The input claims that are allocated already (they restrict the node)."""
    held: AllocatedState
    """What is in use for this call (``Call.held`` or the model's, plus the ``fixed`` claims')."""
    classes: Failures | None
    """This call's searches by node class (None: every node is searched)."""
    call: Call
    runs: Runs | None = None
    """Where runs of one class end in the call's node list, when they are kept (``runs.py``)."""


def _held(model: Model, base: AllocatedState, fixed: list[dict[str, Any]]) -> AllocatedState:
    """What is in use: ``base`` (the state's allocated claims, perhaps plus what earlier pods
    took) plus the allocated input claims (each claim once: an input claim the state also has
    counts there already)."""
    extra = [raw for raw in fixed if _key(raw) not in model.allocated_claims]
    if not extra:
        return base
    held = base.copy()
    for raw in extra:
        held.add_results(allocation_results(raw), model.gates)
    return held


def _key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = as_dict(raw.get("metadata"))
    return (interned_str(meta.get("namespace")) or "default", interned_str(meta.get("name")))


def _try_node(out: Allocation, run: _Run, name: str) -> bool:
    """Search one node; True when that ends the call (out of budget, or a fatal error: the
    scheduler aborts the whole attempt on one). The first node that fits gives the answer; later
    ones are searched only for fatal errors. A node whose class was already searched in this
    call is not searched again: it fails the same way, with the same steps (or fits), unless
    those steps pass the budget: then it is searched, to stop where the search stops."""
    model = run.model
    n = model.node(name)
    out.nodes_tried += 1
    bad = next((claim_label(r) for r in run.fixed if not allocated_claim_fits(r, n)), None)
    if bad is not None:
        if not out.feasible:
            out.entries.append(Reason(Code.CLAIM_NOT_ON_NODE, node=name, claim=bad))
        return False
    seen = run.classes.lookup(name) if run.classes is not None else None
    if seen is not None and seen[0] is FITS and not out.feasible:
        seen = None  # the node that gives the answer is searched: its devices are the answer
    if seen is None and not out.feasible and _recalled(out, run, n, name):
        return False
    if seen is not None and out.steps + seen[1] <= run.call.limits.max_steps:
        out.steps += seen[1]
        if seen[0] is not FITS and not out.feasible:
            out.add_nodes(seen[0], [name])
        return False
    try:
        with _cel_deadline(run.call.limits.deadline):  # CEL evaluations stop at the deadline too
            ok, results, why, steps, in_order = _on_node(run, n, run.call.limits.max_steps - out.steps)
    except BudgetExceeded as e:
        out.steps += e.steps
        if not out.feasible:
            out.kind = CUT_SHORT
            out.summary = Reason(Code.CUT_SHORT, number=out.steps, detail=e.why)
            out.entries.insert(0, out.summary)
        return True
    except AllocError as e:
        out.feasible, out.node, out.results = False, None, []
        out.kind, out.summary = ERROR, e.reason._replace(node=name)
        out.entries.append(out.summary)
        return True
    out.steps += steps
    if run.classes is not None:
        if ok and out.nodes_tried == 1 and run.classes.memo is None and (
                steps <= CHEAP_FIT_STEPS or (run.call.one_shot and cheap_one_shot(model, n, steps))):
            # The first node fit at once: the others are searched only for fatal errors, and a
            # search that cheap costs less than keying a node (every device of its pools).
            run.classes.stop()
        run.classes.record(name, FITS if ok else why, steps)
    if ok:
        if not out.feasible:
            remember(run, n, results, steps, in_order)
            _answer(out, run, name, (results, steps, in_order))
        return False
    if not out.feasible:  # a feasible answer lists no reasons: only a fatal error changes it now
        out.add_nodes(why, [name])
    return False


def _recalled(out: Allocation, run: _Run, n: NodeInfo, name: str) -> bool:
    """True when the answer kept for ``n``'s class was taken for it, without a search."""
    again = recall(run, n, run.call.limits.max_steps - out.steps)
    if again is None:
        return False
    out.steps += again[1]
    run.classes.record(name, FITS, again[1])  # type: ignore[union-attr]
    _answer(out, run, name, again)
    return True


def _answer(out: Allocation, run: _Run, name: str, found: tuple[list[list[DeviceResult]], int, bool]) -> None:
    """Node ``name`` is the answer, with the devices, steps and order of ``found`` (a search's)."""
    out.feasible, out.node, out.kind = True, name, OK
    out.results, out.node_steps, out.in_order = found
    out.summary = None
    classes = run.classes  # kept for the replicas of a placement (a memo) only: keying costs
    if classes is not None and classes.memo is not None and classes.transfers():
        out.node_class = classes.class_of(name)


def _conclude(out: Allocation) -> None:
    """Kind and summary of an outcome no node could satisfy."""
    firsts = [r._replace(node=e.names[0]) if isinstance(e, NodeReasons) else r
              for e in out.entries for r in (e.why if isinstance(e, NodeReasons) else (e,))]
    errors = [r for r in firsts if r.code == Code.FATAL and r.node]
    if errors:
        out.kind, out.summary = ERROR, errors[0]
    elif any(r.code == Code.POOL_INVALID for r in firsts):
        out.kind, out.summary = INVALID_POOL, Reason(Code.POOL_INVALID)
    else:
        out.kind, out.summary = UNSATISFIABLE, Reason(Code.NO_ALLOCATION)


def _on_node(run: _Run, node: NodeInfo, budget: int) -> tuple[bool, list[list[DeviceResult]], list[Reason], int, bool]:
    """(success, results per claim, reasons, steps, claims taken in order) for one node, within
    ``budget`` steps. Raises AllocError/BudgetExceeded."""
    model, claims, limits = run.model, run.claims, run.call.limits
    if run.call.mode != PER_CLAIM or len(claims) <= 1:
        s = Search(model, node, claims, run.held, Limits(budget, limits.deadline, limits.clock))
        ok = s.run()
        return ok, s.results, ([] if ok else _why(s)), s.steps, ok and not s.revisited
    allocated = run.held.copy()
    results: list[list[DeviceResult]] = []
    steps = 0
    # The claims' searches share what does not depend on use; each carries the counters and
    # groups of the one before, and prunes from the start where an earlier one found it worth it.
    carry = Carry(node_data(model, node, pools_for(model, node)))
    for claim in claims:
        s = Search(model, node, [claim], allocated, Limits(budget - steps, limits.deadline, limits.clock), carry)
        ok = s.run()
        steps += s.steps
        if not ok:
            return False, results, _why(s), steps, False
        got = s.results[0]
        results.append(got)
        fold_results(allocated, got, model.gates)
        carry.use = s.use.carried([r.device for r in got], [r.admin for r in got])
    return True, results, [], steps, True


def fold_results(allocated: AllocatedState, got: list[DeviceResult], gates: FeatureGates) -> None:
    """``allocated.add_results`` of these results as ``status`` holds them; without capacity
    shares that is only marking the devices without admin access as held, done directly."""
    if any(r.share_id for r in got):
        allocated.add_results([status_result(r) for r in got], gates)
    else:
        allocated.dedicated.update(r.device.dkey for r in got if not r.admin)


def _why(s: Search) -> list[Reason]:
    """The three most useful reasons of a failed search (most frequent first within a rank),
    then the pool defects, or "cannot allocate all claims" when there is nothing to say."""
    reasons = sorted(s.reasons.items(), key=lambda kv: (rank(kv[0]), -kv[1], text(kv[0])))
    out = [r._replace(number=n) if r.code == Code.SELECTOR_FALSE else r for r, n in reasons[:3]]
    out += [Reason(Code.POOL_INCOMPLETE, pool=p.label()) for p in s.pools if p.incomplete and _relevant(s, p)]
    invalid = [p for p in s.invalid_pools() if _relevant(s, p)]
    if invalid:
        out.append(Reason(Code.POOL_INVALID, pool=invalid[0].label(), detail=invalid[0].invalid_reason))
    return out or [Reason(Code.NO_ALLOCATION)]


def _relevant(s: Search, pool: Pool) -> bool:
    """Whether some request of the search could select a device the pool publishes (in any of
    its slices, gate-filtered or not): reasons never name pools a request could not use."""
    leaves = [leaf for c in s.claims for r in c.requests
              for leaf in ((r.leaf,) if r.leaf is not None else r.subrequests)]
    key = (pool.driver, pool.name)
    return any(s.could_select(leaf, d) for sl in s.model.all_slices if sl.pool_key() == key
               for d in sl.devices for leaf in leaves)


OUT_OF_TIME = note("deadline reached before every device was checked")


def eligible_devices(request: dict[str, Any], model: Model,
                     deadline: float | None = None) -> list[Device] | Reason:
    """Devices anywhere in the model that could serve ``request`` if nothing were in use.

    ``request`` is an ``exactly`` body or a subrequest (deviceClassName, selectors, capacity).
    Checks class and request selectors, binding-condition gates and the static capacity fit;
    ignores nodes, pools' completeness and current usage. Returns the reason on a fatal
    problem (unknown class, CEL error) and ``OUT_OF_TIME`` when ``deadline`` (a
    ``time.monotonic()`` value) passes first: selectors are CEL and can be slow.
    """
    try:
        leaf: Leaf = parse_leaf(request, "request", "request", "eligibility", model)
    except AllocError as e:
        return e.reason
    binding_on = model.gates.enabled(Gate.DRA_DEVICE_BINDING_CONDITIONS) and model.gates.enabled(
        Gate.DRA_RESOURCE_CLAIM_DEVICE_STATUS)
    cc = model.gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY)
    out = []
    try:
        with _cel_deadline(deadline):  # CEL evaluations stop at the deadline too
            for sl in model.slices:
                for d in sl.devices:
                    if deadline is not None and time.monotonic() > deadline:
                        return OUT_OF_TIME
                    if d.binding and not binding_on:
                        continue
                    if not all(selector_matches(model, s, d) for s in leaf.class_selectors + leaf.selectors):
                        continue
                    if cc and isinstance(consumed_capacity(d, leaf.capacity, model.gates), Reason):
                        continue
                    out.append(d)
    except BudgetExceeded:  # a CEL evaluation reached the deadline
        return OUT_OF_TIME
    except AllocError as e:
        return e.reason
    except CapacityError as e:
        return fatal(str(e))
    return out


def _cel_deadline(deadline: float | None) -> Any:
    """``webhook.cel.deadline_scope``, imported when first needed like the rest of CEL here."""
    from webhook.cel import deadline_scope
    return deadline_scope(deadline)


def claims_from_template(tpl: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A ResourceClaim built from a ResourceClaimTemplate (spec copied, name derived)."""
    meta = as_dict(tpl.get("metadata"))
    spec = as_dict(as_dict(tpl.get("spec")).get("spec"))
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name or f"{meta.get('name', 'template')}-claim",
                         "namespace": meta.get("namespace", "default")},
            "spec": spec}


