"""Gate-toggling experiments: the same objects with named gates on and off, side by side.

``review --compare-gates`` compares what gets stripped, the verdict and causes, and warnings;
``simulate --compare-gates`` compares per-claim feasibility, chosen devices and reasons (pools
that become incomplete or skipped show up there). ``-o json`` gives
``{"gates": [...], "on": ..., "off": ..., "differences": [...]}``.
Exit code: 1 when either side is denied / infeasible, else 0.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from webhook.admission.response import decode_patch
from webhook.config import Settings
from webhook.state.base import ClusterSnapshot, StateSource

EXIT_OK, EXIT_BAD = 0, 1


def _settings(settings: Settings, names: list[str], value: bool) -> Settings:
    return replace(settings, gates=settings.gates.with_overrides({n: value for n in names}))


def _summarise_review(resp: dict[str, Any]) -> dict[str, Any]:
    r = resp["response"]
    return {
        "allowed": r["allowed"],
        "causes": [f"{c['field']}: {c['message']}" for c in r.get("status", {}).get("details", {})
                   .get("causes", [])],
        "patch": [f"{op['op']} {op['path']}" for op in decode_patch(resp)],
        "warnings": list(r.get("warnings", [])),
    }


def _diff(label: str, on: list[str], off: list[str]) -> list[str]:
    out = [f"{label} only with gates on: {x}" for x in on if x not in off]
    out += [f"{label} only with gates off: {x}" for x in off if x not in on]
    return out


def compare_review(objs: list[dict[str, Any]], old: dict[str, Any] | None, operation: str,
                   dry_run: bool, settings: Settings, state: StateSource | None, names: list[str],
                   output: str) -> tuple[int, str]:
    from webhook.review_cmd import _review_all

    sides: dict[str, list[dict[str, Any]]] = {}
    for side, value in (("on", True), ("off", False)):
        results = _review_all(objs, old, operation, dry_run, _settings(settings, names, value), state)
        sides[side] = [{"object": _ident(o), **_summarise_review(r)} for o, (r, _) in zip(objs, results, strict=True)]
    differences: list[str] = []
    for on, off in zip(sides["on"], sides["off"], strict=True):
        who = on["object"]
        if on["allowed"] != off["allowed"]:
            differences.append(f"{who}: verdict {_verdict(on)} with gates on, {_verdict(off)} with gates off")
        for key, label in (("patch", "stripped/patched"), ("causes", "cause"), ("warnings", "warning")):
            differences += [f"{who}: {d}" for d in _diff(label, on[key], off[key])]
    code = EXIT_BAD if any(not x["allowed"] for s in sides.values() for x in s) else EXIT_OK
    if output == "json":
        return code, json.dumps({"gates": names, **sides, "differences": differences}, indent=2)
    lines = [f"gates compared: {', '.join(names)}"]
    for on, off in zip(sides["on"], sides["off"], strict=True):
        lines.append(f"{on['object']}")
        lines.append(f"  {'':<10} {'ON':<50} OFF")
        lines.append(f"  {'verdict':<10} {_verdict(on):<50} {_verdict(off)}")
        for key in ("patch", "causes", "warnings"):
            rows = max(len(on[key]), len(off[key]))
            for i in range(rows):
                a = on[key][i] if i < len(on[key]) else ""
                b = off[key][i] if i < len(off[key]) else ""
                lines.append(f"  {key if i == 0 else '':<10} {_cut(a):<50} {_cut(b)}")
    lines.append("differences:" if differences else "differences: none")
    lines += [f"  - {d}" for d in differences]
    return code, "\n".join(lines)


def compare_simulate(objs: list[dict[str, Any]], snapshot: ClusterSnapshot, settings: Settings,
                     names: list[str], node: str | None, mode: str, output: str) -> tuple[int, str]:
    from webhook.simulate import run_simulate

    sides: dict[str, Any] = {}
    for side, value in (("on", True), ("off", False)):
        gates = _settings(settings, names, value).gates
        _, text = run_simulate(objs, snapshot, gates, node, podgroup_mode=mode, output="json")
        sides[side] = json.loads(text)
    on, off = sides["on"], sides["off"]
    differences: list[str] = []
    if on.get("feasible") != off.get("feasible"):
        differences.append(f"feasible: {on.get('feasible')} with gates on, {off.get('feasible')} with gates off")
    a_on, a_off = _placements(on), _placements(off)
    differences += _diff("allocation", a_on, a_off)
    differences += _diff("reason", list(on.get("reasons", [])), list(off.get("reasons", [])))
    code = EXIT_OK if on.get("feasible") and off.get("feasible") else EXIT_BAD
    if output == "json":
        return code, json.dumps({"gates": names, **sides, "differences": differences}, indent=2)
    lines = [f"gates compared: {', '.join(names)}",
             f"  {'':<12} {'ON':<50} OFF",
             f"  {'feasible':<12} {str(on.get('feasible')):<50} {off.get('feasible')}"]
    rows = max(len(a_on), len(a_off))
    for i in range(rows):
        lines.append(f"  {'allocations' if i == 0 else '':<12} {_cut(a_on[i] if i < len(a_on) else ''):<50} "
                     f"{_cut(a_off[i] if i < len(a_off) else '')}")
    for side, result in (("on", on), ("off", off)):
        reasons = result.get("reasons") or []
        if reasons:
            lines.append(f"  reasons with gates {side}:")
            lines += [f"    - {r}" for r in reasons]
    lines.append("differences:" if differences else "differences: none")
    lines += [f"  - {d}" for d in differences]
    return code, "\n".join(lines)


def _placements(result: dict[str, Any]) -> list[str]:
    out = []
    for a in result.get("allocations") or []:
        for r in a.get("results", []):
            out.append(f"{a.get('claim')} {r.get('request')} -> {r.get('pool')}/{r.get('device')}")
    return out


def _ident(o: dict[str, Any]) -> str:
    meta = meta_raw if isinstance(meta_raw := o.get("metadata"), dict) else {}
    return f"{o.get('kind')} {meta.get('name') or meta.get('generateName') or ''}"


def _verdict(s: dict[str, Any]) -> str:
    return "allowed" if s["allowed"] else "denied"


def _cut(text: str, n: int = 50) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
