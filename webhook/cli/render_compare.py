"""The outputs of ``--compare-gates``: a side-by-side table for people; JSON or YAML
(``{"gates", "on", "off", "differences"}``) and, for ``review``, JUnit (one testcase per
difference) for tools. Words the comparisons ``compare`` builds; decides nothing.
"""

from __future__ import annotations

from typing import Any

from webhook.cli.render import Case, dump, junit, simulation_doc, yaml_dump
from webhook.cli.results import Difference, ReviewComparison, Reviewed, SimulationComparison

COLUMN = 50
"""Width of the ON column in ``--compare-gates`` tables; longer cells end in ``…``."""

LABELS = {"patch": "stripped/patched", "cause": "cause", "warning": "warning", "allocation": "allocation",
          "reason": "reason"}
"""How an item kind (``Difference.what``) is named in a difference."""


def item_text(what: str, item: Any) -> str:
    """One item of a side: a patch op, a cause, an allocated device, a warning or reason as is."""
    if what == "patch":
        return f"{item['op']} {item['path']}"
    if what == "cause":
        return f"{item.field}: {item.body()}"
    if what == "allocation":
        claim, r = item
        return f"{claim} {r['request']} -> {r['pool']}/{r['device']}"
    return str(item)


def _verdict(allowed: bool) -> str:
    return "allowed" if allowed else "denied"


def difference_text(d: Difference) -> str:
    """``Kind name: warning only with gates off: ...``; ``feasible: True with gates on, ...``."""
    return f"{d.subject}: {_what_differs(d)}" if d.subject else _what_differs(d)


def _what_differs(d: Difference) -> str:
    if d.what == "verdict":
        return f"verdict {_verdict(d.on)} with gates on, {_verdict(d.off)} with gates off"
    if d.what == "feasible":
        return f"feasible: {d.on} with gates on, {d.off} with gates off"
    side, item = ("on", d.on) if d.on is not None else ("off", d.off)
    return f"{LABELS[d.what]} only with gates {side}: {item_text(d.what, item)}"


def review_side(r: Reviewed) -> dict[str, Any]:
    """One object on one side, as the JSON ``on``/``off`` lists and the table show it."""
    return {
        "object": r.subject,
        "allowed": r.answer.allowed,
        "causes": [item_text("cause", e) for e in (r.outcome.errors if not r.answer.allowed else [])],
        "patch": [item_text("patch", op) for op in r.answer.patch],
        "warnings": list(r.answer.warnings),
    }


def _doc(gates: list[str], on: Any, off: Any, differences: list[Difference]) -> dict[str, Any]:
    return {"gates": gates, "on": on, "off": off, "differences": [difference_text(d) for d in differences]}


def review_comparison(cmp: ReviewComparison, output: str) -> str:
    """``review --compare-gates -o text|json|yaml|junit``."""
    if output in ("json", "yaml"):
        doc = _doc(cmp.gates, [review_side(r) for r in cmp.on], [review_side(r) for r in cmp.off], cmp.differences)
        return dump(doc) if output == "json" else yaml_dump(doc)
    if output == "junit":
        return review_comparison_junit(cmp)
    lines = [f"gates compared: {', '.join(cmp.gates)}"]
    for on, off in zip(map(review_side, cmp.on), map(review_side, cmp.off), strict=True):
        lines.append(f"{on['object']}")
        lines.append(f"  {'':<10} {'ON':<{COLUMN}} OFF")
        lines.append(f"  {'verdict':<10} {_verdict(on['allowed']):<{COLUMN}} {_verdict(off['allowed'])}")
        for key in ("patch", "causes", "warnings"):
            for i in range(max(len(on[key]), len(off[key]))):
                a = on[key][i] if i < len(on[key]) else ""
                b = off[key][i] if i < len(off[key]) else ""
                lines.append(f"  {key if i == 0 else '':<10} {_cut(a):<{COLUMN}} {_cut(b)}")
    return "\n".join(lines + _differences(cmp.differences))


def review_comparison_junit(cmp: ReviewComparison) -> str:
    """One testcase per difference, failing when its object is denied on a side (the run then
    exits 1); an object denied on both sides alike, which no difference names, gets a failing
    testcase of its own, so that the report fails exactly when the run does."""
    cases = [Case(d.subject, _what_differs(d), failure=f"denied with gates {d.failing}" if d.failing else "")
             for d in cmp.differences]
    named = {d.subject for d in cmp.differences}
    cases += [Case(subject, "verdict the same", failure=f"denied with gates {sides}")
              for subject, sides in cmp.failing if subject not in named]
    return junit(f"dra-webhook review --compare-gates {','.join(cmp.gates)}", cases)


def simulation_comparison(cmp: SimulationComparison, output: str) -> str:
    """``simulate --compare-gates -o text|json``."""
    if output == "json":
        return dump(_doc(cmp.gates, simulation_doc(cmp.on), simulation_doc(cmp.off), cmp.differences))
    a_on = [item_text("allocation", x) for x in cmp.on.allocated]
    a_off = [item_text("allocation", x) for x in cmp.off.allocated]
    lines = [f"gates compared: {', '.join(cmp.gates)}",
             f"  {'':<12} {'ON':<{COLUMN}} OFF",
             f"  {'feasible':<12} {str(cmp.on.feasible):<{COLUMN}} {cmp.off.feasible}"]
    for i in range(max(len(a_on), len(a_off))):
        lines.append(f"  {'allocations' if i == 0 else '':<12} {_cut(a_on[i] if i < len(a_on) else ''):<{COLUMN}} "
                     f"{_cut(a_off[i] if i < len(a_off) else '')}")
    for side, sim in (("on", cmp.on), ("off", cmp.off)):
        if sim.reasons:
            lines.append(f"  reasons with gates {side}:")
            lines += [f"    - {r}" for r in sim.reasons]
    return "\n".join(lines + _differences(cmp.differences))


def _differences(differences: list[Difference]) -> list[str]:
    return ["differences:" if differences else "differences: none"] + [f"  - {difference_text(d)}"
                                                                     for d in differences]


def _cut(text: str, n: int = COLUMN) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
