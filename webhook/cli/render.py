"""Every CLI output format in one place: commands return results, these functions word them.

Text is for people, JSON for tools (the shapes DESIGN.md documents). Nothing here decides
anything, and nothing parses what another function printed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypedDict

from webhook.allocator.reasons import text as reason_text

if TYPE_CHECKING:
    from webhook.cli.compare import Comparison
    from webhook.cli.review import Reviewed
    from webhook.cli.simulate import Simulation

COLUMN = 50
"""Width of the ON column in ``--compare-gates`` tables; longer cells end in ``…``."""


def dump(obj: Any) -> str:
    """JSON as every command prints it: indented, UTF-8 as is."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


# ---------------------------------------------------------------- gates

class GateRow(TypedDict):
    """One row of ``dra-webhook gates`` (also its JSON output)."""

    name: str
    stage: str
    default: bool
    locked: bool
    enabled: bool
    effect: str


def gates_json(rows: list[GateRow]) -> str:
    return json.dumps({"featureGates": rows}, indent=2)


def gates_text(rows: list[GateRow]) -> str:
    width = max(len(r["name"]) for r in rows)
    lines = [f"{'GATE':<{width}}  {'STAGE':<5}  {'1.37':<5}  {'NOW':<5}  EFFECT IN DRA-WEBHOOK"]
    for r in rows:
        mark = "" if r["enabled"] == r["default"] else " *"
        lock = " (locked)" if r["locked"] else ""
        lines.append(f"{r['name']:<{width}}  {r['stage']:<5}  {_onoff(r['default']):<5}  "
                     f"{_onoff(r['enabled']) + mark:<5}  {r['effect']}{lock}")
    return "\n".join(lines)


def _onoff(v: bool) -> str:
    return "on" if v else "off"


# ---------------------------------------------------------------- review

def reviews_json(results: list[Reviewed]) -> str:
    """The AdmissionReview of one object, or a ``kind: List`` of them."""
    if len(results) == 1:
        return dump(results[0].answer.review)
    return dump({"apiVersion": "v1", "kind": "List", "items": [r.answer.review for r in results]})


def reviews_text(results: list[Reviewed]) -> str:
    return "\n".join(review_text(r) for r in results)


def review_text(r: Reviewed) -> str:
    """A readable report of one review: verdict, causes, patch, warnings."""
    req, out, ans = r.outcome.request, r.outcome, r.answer
    ns = f"{req.namespace}/" if req.namespace else ""
    api = "/".join(filter(None, (req.group, req.version)))
    lines = [f"{req.kind} {ns}{req.display_name} ({api}, {req.operation}"
             f"{', dry-run' if req.dry_run else ''}): {'ALLOWED' if ans.allowed else 'DENIED'}"]
    if not out.handled:
        lines.append("  (no rules for this kind: passed through)")
    if not ans.allowed:
        lines.append("  causes:")
        lines.extend(f"    {e.field}: {e.body()}" for e in out.errors)
    if ans.patch:
        lines.append("  patch:")
        for op in ans.patch:
            value = f" {json.dumps(op['value'], ensure_ascii=False)}" if "value" in op else ""
            lines.append(f"    {op['op']} {op['path']}{value}")
    if ans.warnings:
        lines.append("  warnings:")
        lines.extend(f"    - {w}" for w in ans.warnings)
    return "\n".join(lines)


def verdict(side: dict[str, Any]) -> str:
    return "allowed" if side["allowed"] else "denied"


def review_comparison(cmp: Comparison, output: str) -> str:
    if output == "json":
        return dump_plain({"gates": cmp.gates, "on": cmp.on, "off": cmp.off, "differences": cmp.differences})
    lines = [f"gates compared: {', '.join(cmp.gates)}"]
    for on, off in zip(cmp.on, cmp.off, strict=True):
        lines.append(f"{on['object']}")
        lines.append(f"  {'':<10} {'ON':<{COLUMN}} OFF")
        lines.append(f"  {'verdict':<10} {verdict(on):<{COLUMN}} {verdict(off)}")
        for key in ("patch", "causes", "warnings"):
            for i in range(max(len(on[key]), len(off[key]))):
                a = on[key][i] if i < len(on[key]) else ""
                b = off[key][i] if i < len(off[key]) else ""
                lines.append(f"  {key if i == 0 else '':<10} {_cut(a):<{COLUMN}} {_cut(b)}")
    return "\n".join(lines + _differences(cmp.differences))


def dump_plain(obj: Any) -> str:
    """JSON as ``--compare-gates -o json`` has always printed it (ASCII-escaped)."""
    return json.dumps(obj, indent=2)


def _differences(differences: list[str]) -> list[str]:
    return ["differences:" if differences else "differences: none"] + [f"  - {d}" for d in differences]


def _cut(text: str, n: int = COLUMN) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------- simulate

def simulation(sim: Simulation, output: str) -> str:
    if output == "json":
        return json.dumps(simulation_doc(sim), indent=2)
    return simulation_text(sim)


def simulation_doc(sim: Simulation) -> dict[str, Any]:
    """The DESIGN.md shape: feasible, node, allocations, reasons (worded, most useful first)."""
    outcome = sim.outcome
    reasons = outcome.reason_texts()
    if not outcome.feasible and outcome.message and outcome.message not in reasons:
        reasons.append(outcome.message)
    return {"feasible": outcome.feasible, "node": outcome.node, "allocations": outcome.allocations(),
            "reasons": reasons}


def placements(doc: dict[str, Any]) -> list[str]:
    """``claim request -> pool/device`` for each allocated device of a simulation document."""
    return [f"{a['claim']} {r['request']} -> {r['pool']}/{r['device']}"
            for a in doc["allocations"] for r in a["results"]]


def simulation_text(sim: Simulation) -> str:
    outcome = sim.outcome
    how = f", {sim.mode} over {sim.claims} claims" if sim.claims > 1 else ""
    if outcome.feasible:
        lines = [f"feasible: yes, on node {outcome.node} ({outcome.steps} steps{how})"]
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
    lines = [f"feasible: no ({outcome.kind}: {outcome.message or 'cannot allocate all claims'}; "
             f"{outcome.steps} steps, {outcome.nodes_tried} node(s){how})"]
    by_node: dict[str, list[str]] = {}
    for r in outcome.ranked():
        if r.node:
            by_node.setdefault(r.node, []).append(reason_text(r))
        else:
            lines.append(f"  {reason_text(r)}")
    for node in sorted(by_node):
        lines.append(f"node {node}:")
        lines.extend(f"  - {r}" for r in by_node[node])
    return "\n".join(lines) + "\n"


def simulation_comparison(cmp: Comparison, output: str) -> str:
    if output == "json":
        return dump_plain({"gates": cmp.gates, "on": cmp.on, "off": cmp.off, "differences": cmp.differences})
    on, off = cmp.on, cmp.off
    a_on, a_off = placements(on), placements(off)
    lines = [f"gates compared: {', '.join(cmp.gates)}",
             f"  {'':<12} {'ON':<{COLUMN}} OFF",
             f"  {'feasible':<12} {str(on['feasible']):<{COLUMN}} {off['feasible']}"]
    for i in range(max(len(a_on), len(a_off))):
        lines.append(f"  {'allocations' if i == 0 else '':<12} {_cut(a_on[i] if i < len(a_on) else ''):<{COLUMN}} "
                     f"{_cut(a_off[i] if i < len(a_off) else '')}")
    for side, doc in (("on", on), ("off", off)):
        if doc["reasons"]:
            lines.append(f"  reasons with gates {side}:")
            lines += [f"    - {r}" for r in doc["reasons"]]
    return "\n".join(lines + _differences(cmp.differences))
