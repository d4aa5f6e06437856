"""``dra-webhook simulate``: allocate claims (or a PodGroup's claims) against a cluster state.

``run_simulate`` returns (exit code, text): 0 feasible, 1 infeasible, 2 bad input. The CLI
parses arguments and files; this module only decides and renders (JSON as DESIGN.md specifies,
or a readable per-node explanation).
"""

from __future__ import annotations

import json
import time
from typing import Any

from webhook.allocator.engine import JOINT, PER_CLAIM, Outcome, allocate
from webhook.allocator.feasibility import claims_for
from webhook.allocator.model import model_for
from webhook.allocator.reasons import note, text
from webhook.gates import FeatureGates
from webhook.rules.registry import by_kind, feasibility_kinds
from webhook.state.base import ClusterSnapshot

MAX_STEPS = 1_000_000
TIMEOUT_SECONDS = 60.0


def collect_claims(objects: list[dict[str, Any]], snapshot: ClusterSnapshot
                   ) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """(claims in input order, notes, error). A PodGroup pulls its claims from the input or state."""
    claims: list[dict[str, Any]] = []
    notes: list[str] = []
    kinds = feasibility_kinds()
    for o in objects:
        kind = o.get("kind") if isinstance(o, dict) else None
        if kind not in kinds:
            return [], [], f"unsupported kind {kind!r}: simulate takes {', '.join(kinds)}"
    objects = [_defaulted(o) for o in objects]
    pods = [o for o in objects if o.get("kind") == "PodGroup"]
    if len(pods) > 1:
        return [], [], "simulate takes at most one PodGroup"
    if pods:
        got, notes = claims_for(pods[0], snapshot, extra=objects)
        claims.extend(got)
        return claims, notes, None
    for o in objects:
        got, more = claims_for(o, snapshot)
        claims.extend(got)
        notes.extend(more)
    return claims, notes, None


def _defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the apiserver's defaults (the caller's job: the allocator takes claims as given)."""
    rules = by_kind(str(obj.get("kind")))
    return rules.apply_defaults(obj) if rules is not None else obj


def run_simulate(objects: list[dict[str, Any]], snapshot: ClusterSnapshot, gates: FeatureGates,
                 node: str | None, podgroup_mode: str = JOINT, output: str = "text") -> tuple[int, str]:
    """Allocate the claims in ``objects`` together; (exit code, text to print)."""
    if podgroup_mode not in (JOINT, PER_CLAIM):
        return 2, f"unknown --podgroup-mode {podgroup_mode!r} (want {JOINT} or {PER_CLAIM})"
    if output not in ("json", "text"):
        return 2, f"unknown output format {output!r} (want json or text)"
    claims, notes, err = collect_claims(objects, snapshot)
    if err:
        return 2, err
    model = model_for(snapshot, gates)
    if node is not None and node not in model.nodes:
        notes.append(f"node {node} is not in the cluster state")
    if not claims:
        outcome = Outcome()
        outcome.summary = note("no claims to allocate")
        outcome.reasons = [note(n) for n in notes] or [outcome.summary]
    else:
        outcome = allocate(claims, model, node=node, mode=podgroup_mode, max_steps=MAX_STEPS,
                           deadline=time.monotonic() + TIMEOUT_SECONDS)
        outcome.reasons = [note(n) for n in notes] + outcome.reasons
    code = 0 if outcome.feasible else 1
    if output == "json":
        return code, json.dumps(as_json(outcome), indent=2)
    return code, as_text(outcome, podgroup_mode, len(claims))


def as_json(outcome: Outcome) -> dict[str, Any]:
    """The DESIGN.md shape: feasible, node, allocations, reasons."""
    reasons = outcome.reason_texts()
    if not outcome.feasible and outcome.message and outcome.message not in reasons:
        reasons.append(outcome.message)
    return {"feasible": outcome.feasible, "node": outcome.node, "allocations": outcome.allocations(),
            "reasons": reasons}


def as_text(outcome: Outcome, mode: str, n_claims: int) -> str:
    lines: list[str] = []
    how = f", {mode} over {n_claims} claims" if n_claims > 1 else ""
    if outcome.feasible:
        lines.append(f"feasible: yes, on node {outcome.node} ({outcome.steps} steps{how})")
        for alloc in outcome.allocations():
            lines.append(f"claim {alloc['claim']}:")
            for r in alloc["results"]:
                extra = ""
                if r.get("consumedCapacity"):
                    extra = "  consumes " + ", ".join(f"{k}={v}" for k, v in r["consumedCapacity"].items())
                if r.get("adminAccess"):
                    extra += "  (admin access)"
                lines.append(f"  {r['request']} -> {r['driver']}/{r['pool']}/{r['device']}{extra}")
        return "\n".join(lines) + "\n"
    lines.append(f"feasible: no ({outcome.kind}: {outcome.message or 'cannot allocate all claims'}; "
                 f"{outcome.steps} steps, {outcome.nodes_tried} node(s){how})")
    by_node: dict[str, list[str]] = {}
    for r in outcome.ranked():
        if r.node:
            by_node.setdefault(r.node, []).append(text(r))
        else:
            lines.append(f"  {text(r)}")
    for node in sorted(by_node):
        lines.append(f"node {node}:")
        lines.extend(f"  - {r}" for r in by_node[node])
    return "\n".join(lines) + "\n"
