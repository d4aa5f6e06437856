"""Cluster-level allocation (allocator.md §9-§10): per node, joint or claim-by-claim, with reasons.

Pure. ``allocate`` answers "could these claims be allocated now, on which node, with which
devices — and if not, why?" Nodes are tried in name order; the first node that succeeds wins.
One step budget and one deadline cover the whole call (all nodes together).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from webhook.allocator.capacity import CapacityError, consumed_capacity
from webhook.allocator.claims import AllocError, Claim, Leaf, _leaf, claim_label, parse_claim
from webhook.allocator.model import Device, Model, NodeInfo, _d
from webhook.allocator.nodesel import parse_node_selector
from webhook.allocator.search import BudgetExceeded, DeviceResult, Search, selector_matches

JOINT, PER_CLAIM = "joint", "per-pod"
OK, UNSATISFIABLE, INVALID_POOL, ERROR, CUT_SHORT = "ok", "unsatisfiable", "invalid-pool", "error", "cut-short"


class Outcome:
    """The answer for a set of claims. ``results[i]`` belongs to ``claims[i]`` when feasible."""

    def __init__(self) -> None:
        self.feasible = False
        self.node: str | None = None
        self.claims: list[Claim] = []
        self.labels: list[str] = []
        self.results: list[list[DeviceResult]] = []
        self.kind = UNSATISFIABLE
        self.message = ""
        self.reasons: list[tuple[int, str]] = []   # (rank, "node: reason"), best first after sort
        self.steps = 0
        self.nodes_tried = 0

    def reason_texts(self) -> list[str]:
        return [r for _, r in sorted(self.reasons, key=lambda x: x[0])]

    def allocations(self) -> list[dict[str, Any]]:
        if not self.feasible:
            return []
        return [{"claim": label, "results": [r.as_dict() for r in res]}
                for label, res in zip(self.labels, self.results, strict=True)]


def rank(reason: str) -> int:
    """Most useful first: capacity-like exhaustion beats "in use" beats "selector false"."""
    for n, words in enumerate((("cut short", "CEL", "could not", "exceeds the claim", "asks for all",
                                "unsupported", "disabled", "missing device class", "empty"),
                               ("exhausted", "intersection empty", "violates", "exceeds", "constraint",
                                "not tolerated", "has no capacity"),
                               ("in use", "incomplete", "needs ", "invalid", "not available", "limit",
                                "counters (", "node operations"),
                               ("selector false", "no device matches"))):
        if any(w in reason for w in words):
            return n
    return 4


def _allocated_claim_fits(raw: dict[str, Any], node: NodeInfo) -> bool:
    sel = _d(_d(raw.get("status")).get("allocation")).get("nodeSelector")
    parsed = parse_node_selector(sel)
    return parsed is None or parsed.matches(node)


def allocate(raw_claims: list[dict[str, Any]], model: Model, *, node: str | None = None,
             mode: str = JOINT, max_steps: int = 100_000, deadline: float | None = None,
             clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Allocate ``raw_claims`` (defaulted ResourceClaims) on ``node`` or on any node.

    Claims that already carry ``status.allocation`` are not re-allocated; they only restrict
    the node (their ``nodeSelector``). Never raises on odd input: problems become the outcome.
    """
    out = Outcome()
    pending: list[dict[str, Any]] = []
    fixed: list[dict[str, Any]] = []
    for raw in raw_claims:
        (fixed if _d(_d(raw.get("status")).get("allocation")) else pending).append(raw)
    try:
        claims = [parse_claim(raw, model) for raw in pending]
    except AllocError as e:
        out.kind, out.message = ERROR, str(e)
        out.reasons.append((0, str(e)))
        return out
    out.claims = claims
    out.labels = [c.label for c in claims]
    names = [node] if node is not None else list(model.nodes)
    if not names:
        out.message = "no nodes in the cluster state"
        out.reasons.append((4, out.message))
        return out
    errors: list[str] = []
    for name in names:
        n = model.node(name)
        out.nodes_tried += 1
        if not all(_allocated_claim_fits(raw, n) for raw in fixed):
            bad = next(claim_label(r) for r in fixed if not _allocated_claim_fits(r, n))
            out.reasons.append((2, f"{name}: resourceclaim {bad} not available on the node"))
            continue
        budget = max_steps - out.steps
        try:
            with _cel_deadline(deadline):  # CEL evaluations stop at the deadline too
                ok, results, why, steps = _on_node(model, n, claims, mode, budget, deadline, clock)
        except BudgetExceeded as e:
            out.steps += e.steps
            out.kind = CUT_SHORT
            out.message = f"the check was cut short after {out.steps} steps ({e.why})"
            out.reasons.insert(0, (0, out.message))
            return out
        except AllocError as e:
            errors.append(f"{name}: {e}")
            out.reasons.append((0, f"{name}: {e}"))
            continue
        out.steps += steps
        if ok:
            out.feasible, out.node, out.results, out.kind = True, name, results, OK
            out.message = ""
            return out
        for r in why:
            out.reasons.append((rank(r), f"{name}: {r}"))
    if errors:
        out.kind, out.message = ERROR, errors[0]
    elif any("invalid resource pools" in r for _, r in out.reasons):
        out.kind, out.message = INVALID_POOL, "invalid resource pools were encountered"
    else:
        out.kind, out.message = UNSATISFIABLE, "cannot allocate all claims"
    return out


def _on_node(model: Model, node: NodeInfo, claims: list[Claim], mode: str, budget: int,
             deadline: float | None, clock: Callable[[], float]
             ) -> tuple[bool, list[list[DeviceResult]], list[str], int]:
    """(success, results per claim, reasons, steps) for one node. Raises AllocError/BudgetExceeded."""
    if mode != PER_CLAIM or len(claims) <= 1:
        s = Search(model, node, claims, model.allocated, max_steps=budget, deadline=deadline, clock=clock)
        ok = s.run()
        return ok, s.results, ([] if ok else _why(s)), s.steps
    allocated = model.allocated.copy()
    results: list[list[DeviceResult]] = []
    steps = 0
    for claim in claims:
        s = Search(model, node, [claim], allocated, max_steps=budget - steps, deadline=deadline,
                   clock=clock)
        ok = s.run()
        steps += s.steps
        if not ok:
            return False, results, _why(s), steps
        results.append(s.results[0])
        allocated.add_results([_as_status(r) for r in s.results[0]], model.gates)
    return True, results, [], steps


def _as_status(r: DeviceResult) -> dict[str, Any]:
    d = r.as_dict()
    if r.share_id:
        d["shareID"] = r.share_id
    return d


def _why(s: Search) -> list[str]:
    reasons = sorted(s.reasons.items(), key=lambda kv: (rank(kv[0]), -kv[1], kv[0]))
    out = [f"{r} for {n} devices" if r.endswith("selector false") and n > 1 else r
           for r, n in reasons[:3]]
    for p in s.pools:
        if p.incomplete:
            out.append(f"pool {p.label()} incomplete")
    if s.invalid_pools():
        p = s.invalid_pools()[0]
        out.append(f"invalid resource pools were encountered: {p.label()}: {p.invalid_reason}")
    if not out:
        out.append("cannot allocate all claims")
    return out


OUT_OF_TIME = "deadline reached before every device was checked"


def eligible_devices(request: dict[str, Any], model: Model, deadline: float | None = None) -> list[Device] | str:
    """Devices anywhere in the model that could serve ``request`` if nothing were in use.

    ``request`` is an ``exactly`` body or a subrequest (deviceClassName, selectors, capacity).
    Checks class and request selectors, binding-condition gates and the static capacity fit;
    ignores nodes, pools' completeness and current usage. Returns a reason string on a fatal
    problem (unknown class, CEL error) and ``OUT_OF_TIME`` when ``deadline`` (a
    ``time.monotonic()`` value) passes first: selectors are CEL and can be slow.
    """
    try:
        leaf: Leaf = _leaf(request, "request", "request", "eligibility", model, model.gates)
    except AllocError as e:
        return str(e)
    binding_on = model.gates.enabled("DRADeviceBindingConditions") and model.gates.enabled(
        "DRAResourceClaimDeviceStatus")
    cc = model.gates.enabled("DRAConsumableCapacity")
    out = []
    try:
        with _cel_deadline(deadline):
            for sl in model.slices:
                for d in sl.devices:
                    if deadline is not None and time.monotonic() > deadline:
                        return OUT_OF_TIME
                    if d.binding and not binding_on:
                        continue
                    if not all(selector_matches(model, s, d) for s in leaf.class_selectors + leaf.selectors):
                        continue
                    if cc and isinstance(consumed_capacity(d, leaf.capacity, model.gates), str):
                        continue
                    out.append(d)
    except BudgetExceeded:  # a CEL evaluation reached the deadline
        return OUT_OF_TIME
    except (AllocError, CapacityError) as e:
        return str(e)
    return out


def _cel_deadline(deadline: float | None) -> Any:
    """``webhook.cel.deadline_scope``, imported when first needed like the rest of CEL here."""
    from webhook.cel import deadline_scope
    return deadline_scope(deadline)


def claims_from_template(tpl: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A ResourceClaim built from a ResourceClaimTemplate (spec copied, name derived)."""
    meta = _d(tpl.get("metadata"))
    spec = _d(_d(tpl.get("spec")).get("spec"))
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name or f"{meta.get('name', 'template')}-claim",
                         "namespace": meta.get("namespace", "default")},
            "spec": spec}


