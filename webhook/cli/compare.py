"""``--compare-gates``: the same objects with named gates on and off, side by side.

``review --compare-gates`` compares what gets stripped, the verdict and causes, and warnings;
``simulate --compare-gates`` compares per-claim feasibility, chosen devices and reasons (pools
that become incomplete or skipped show up there). Both sides are computed here as data and
compared as data; ``render`` prints them (``-o json``: ``{"gates", "on", "off", "differences"}``).
Exit code: 1 when either side is denied / infeasible, else 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from webhook.cli import render
from webhook.cli.common import EXIT_DENIED, EXIT_OK
from webhook.cli.results import Comparison, Reviewed, Simulation
from webhook.config import Settings
from webhook.gates import FeatureGates


def _with(settings: Settings, names: list[str], value: bool) -> Settings:
    """The settings with ``names`` on or off (and what they require on / what requires them off)."""
    return replace(settings, gates=settings.gates.toggled(names, value))


def summarise(r: Reviewed) -> dict[str, Any]:
    """One side of a review comparison for one object."""
    return {
        "object": _ident(r.obj),
        "allowed": r.answer.allowed,
        "causes": [f"{e.field}: {e.body()}" for e in (r.outcome.errors if not r.answer.allowed else [])],
        "patch": [f"{op['op']} {op['path']}" for op in r.answer.patch],
        "warnings": list(r.answer.warnings),
    }


def diff(label: str, on: list[str], off: list[str]) -> list[str]:
    """``<label> only with gates on/off: x`` for each item on one side only."""
    out = [f"{label} only with gates on: {x}" for x in on if x not in off]
    out += [f"{label} only with gates off: {x}" for x in off if x not in on]
    return out


def compare_review(review: Callable[[Settings], list[Reviewed]], settings: Settings,
                   names: list[str]) -> Comparison:
    """``review(settings)`` with the named gates on, then off."""
    sides = {side: [summarise(r) for r in review(_with(settings, names, value))]
             for side, value in (("on", True), ("off", False))}
    differences: list[str] = []
    for on, off in zip(sides["on"], sides["off"], strict=True):
        who = on["object"]
        if on["allowed"] != off["allowed"]:
            differences.append(f"{who}: verdict {render.verdict(on)} with gates on, "
                               f"{render.verdict(off)} with gates off")
        for key, label in (("patch", "stripped/patched"), ("causes", "cause"), ("warnings", "warning")):
            differences += [f"{who}: {d}" for d in diff(label, on[key], off[key])]
    code = EXIT_DENIED if any(not x["allowed"] for s in sides.values() for x in s) else EXIT_OK
    return Comparison(names, sides["on"], sides["off"], differences, code)


def compare_simulate(simulate: Callable[[FeatureGates], Simulation], settings: Settings,
                     names: list[str]) -> Comparison:
    """``simulate(gates)`` with the named gates on, then off."""
    on, off = (render.simulation_doc(simulate(_with(settings, names, v).gates)) for v in (True, False))
    differences: list[str] = []
    if on["feasible"] != off["feasible"]:
        differences.append(f"feasible: {on['feasible']} with gates on, {off['feasible']} with gates off")
    differences += diff("allocation", render.placements(on), render.placements(off))
    differences += diff("reason", on["reasons"], off["reasons"])
    code = EXIT_OK if on["feasible"] and off["feasible"] else EXIT_DENIED
    return Comparison(names, on, off, differences, code)


def _ident(o: dict[str, Any]) -> str:
    meta = meta_raw if isinstance(meta_raw := o.get("metadata"), dict) else {}
    return f"{o.get('kind')} {meta.get('name') or meta.get('generateName') or ''}"
