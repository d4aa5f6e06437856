"""Every CLI output format in one place: commands return results, these functions word them.

Text is for people, JSON for tools (the shapes DESIGN.md documents). Nothing here decides
anything, and nothing parses what another function printed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from webhook.allocator.reasons import text as reason_text
from webhook.cli.results import GateRow, Result, Reviewed, Simulation, Skipped, SuiteResult
from webhook.workloads import report

if TYPE_CHECKING:
    from webhook.workloads import Placement

def dump(obj: Any, indent: int | None = 2) -> str:
    """JSON as every command prints it: indented (``indent=None``: one line, for a value inside a
    line of text), characters as they are; only a string that cannot be written as UTF-8 (a lone
    surrogate copied from the input) makes the whole document fall back to ASCII escapes."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, indent=indent)
    return text


# ---------------------------------------------------------------- gates

def gates_json(rows: list[GateRow]) -> str:
    return dump({"featureGates": rows})


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

def reviews(results: list[Result], output: str) -> tuple[str, list[str]]:
    """(what to print on stdout, notes for stderr) for ``review -o OUTPUT``."""
    if output == "text":
        return "\n".join(review_text(r) if isinstance(r, Reviewed) else skipped_text(r) for r in results), []
    notes = [f"dra-webhook review: {r.problem}{': failed (--strict)' if r.strict else ': skipped'}"
             for r in results if isinstance(r, Skipped)]
    if output == "junit":
        return junit("dra-webhook review", [review_case(r) for r in results]), []
    docs = [review_doc(r) for r in results if isinstance(r, Reviewed)]
    doc: Any = docs[0] if len(docs) == 1 else {"apiVersion": "v1", "kind": "List", "items": docs}
    return (dump(doc) if output == "json" else yaml_dump(doc)), notes


def review_doc(r: Reviewed) -> dict[str, Any]:
    """The AdmissionReview with both the request we built and the response; for an object in an
    older version (resource.k8s.io v1beta1, v1beta2) also ``converted``, the v1 object it was
    judged as."""
    doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": r.request,
           "response": r.answer.review["response"]}
    if (converted := r.converted) is not None:
        doc["converted"] = converted
    return doc


def yaml_dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1 << 30).rstrip("\n")


def skipped_text(r: Skipped) -> str:
    return f"{r.problem}: {'FAILED (--strict)' if r.strict else 'skipped'}"


def review_title(r: Reviewed) -> str:
    """``Kind namespace/name``."""
    req = r.outcome.request
    return f"{req.kind} {req.namespace + '/' if req.namespace else ''}{req.display_name}"


def review_text(r: Reviewed) -> str:
    """A readable report of one review: verdict, causes, patch, warnings."""
    req, out, ans = r.outcome.request, r.outcome, r.answer
    api = "/".join(filter(None, (req.group, req.version)))
    verdict_ = "NOT CHECKED" if r.strict and r.problem else ("ALLOWED" if ans.allowed else "DENIED")
    if ans.allowed and r.findings:
        n = len(r.findings)
        verdict_ += f", {n} finding{'s' if n > 1 else ''}" + (" (FAILED, --strict)" if r.strict else "")
    lines = [f"{review_title(r)} ({api}, {req.operation}{', dry-run' if req.dry_run else ''}): {verdict_}"]
    if r.problem:
        lines.append(f"  {'error' if r.strict else 'note'}: {r.problem}"
                     + ("" if r.strict else " (passed through unchecked; --strict fails it)"))
    if r.refused:
        lines.append(f"  refused before validation (HTTP 400, as the apiserver): {r.refused}")
    elif not ans.allowed:
        lines.append("  causes:")
        lines.extend(f"    {e.field}: {e.body()}" for e in out.errors)
    if ans.patch:
        lines.append("  patch:")
        for op in ans.patch:
            value = f" {dump(op['value'], indent=None)}" if "value" in op else ""
            lines.append(f"    {op['op']} {op['path']}{value}")
    shown = [w for w in ans.warnings if w != r.problem]  # the note above says it already
    if shown:
        lines.append("  warnings:")
        lines.extend(f"    - {w}" for w in shown)
    return "\n".join(lines)


def review_case(r: Result) -> Case:
    """One JUnit testcase: a denial fails with its causes; an unchecked object is skipped (fails
    with --strict), and so do findings with --strict; warnings and notes go to system-out."""
    if isinstance(r, Skipped):
        return Case(r.origin, r.problem, failure=r.problem if r.strict else "",
                    skipped="" if r.strict else r.problem)
    causes = r.refused or "\n".join(f"{e.field}: {e.body()}" for e in r.outcome.errors)
    if not r.answer.allowed:
        failure = "denied"
    elif r.strict and r.problem:
        failure = r.problem
    elif r.strict and r.findings:
        failure, causes = f"{len(r.findings)} finding(s) (--strict)", "\n".join(r.findings)
    else:
        failure = ""
    return Case(r.origin, review_title(r), failure=failure, text=causes or r.problem,
                skipped=r.problem if r.problem and not failure else "", output="\n".join(r.answer.warnings))


@dataclass(frozen=True)
class Case:
    """One JUnit testcase."""

    classname: str
    name: str
    failure: str = ""
    """The failure message; "" when the case passed."""
    text: str = ""
    skipped: str = ""
    output: str = ""
    """``system-out``: warnings and notes."""


def junit(suite: str, cases: list[Case]) -> str:
    """A JUnit XML report with one ``testsuite``, as CI systems read it."""
    return junit_suites(suite, [(suite, cases)])


def junit_suites(name: str, suites: list[tuple[str, list[Case]]]) -> str:
    """A JUnit XML report: one ``testsuite`` per (name, cases)."""
    every = [c for _, cases in suites for c in cases]
    root = ET.Element("testsuites", name=name, tests=str(len(every)),
                      failures=str(sum(1 for c in every if c.failure)))
    for suite, cases in suites:
        _junit_suite(root, suite, cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _junit_suite(root: ET.Element, suite: str, cases: list[Case]) -> None:
    failures = sum(1 for c in cases if c.failure)
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)), failures=str(failures),
                       errors="0", skipped=str(sum(1 for c in cases if c.skipped)))
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.classname, name=c.name)
        if c.failure:
            ET.SubElement(tc, "failure", message=c.failure).text = c.text or c.failure
        elif c.skipped:
            ET.SubElement(tc, "skipped", message=c.skipped)
        if c.output:
            ET.SubElement(tc, "system-out").text = c.output


# ---------------------------------------------------------------- test suites

def suites(results: list[SuiteResult], output: str) -> str:
    """``dra-webhook test``: per suite, each resource that met its expectation or why not."""
    if output == "junit":
        return junit_suites("dra-webhook test", [
            (r.suite.name, [Case(c.origin, c.resource, failure="; ".join(c.failures), text="\n".join(c.failures),
                                 output="\n".join(c.warnings)) for c in r.cases]) for r in results])
    if output == "json":
        return dump({"passed": all(r.passed for r in results), "suites": [
            {"name": r.suite.name, "file": str(r.suite.file), "passed": r.passed,
             "cases": [{"resource": c.resource, "file": c.origin, "passed": c.passed, "failures": c.failures}
                       for c in r.cases]} for r in results]})
    lines = []
    for r in results:
        failed = [c for c in r.cases if not c.passed]
        lines.append(f"{'ok  ' if r.passed else 'FAIL'} {r.suite.name} ({r.suite.file}): {len(r.cases)} resources, "
                     f"{len(failed)} failed")
        for c in failed:
            lines.append(f"  {c.resource} ({c.origin}):")
            lines.extend(f"    - {f}" for f in c.failures)
    total = sum(len(r.cases) for r in results)
    bad = sum(1 for r in results for c in r.cases if not c.passed)
    lines.append(f"{len(results)} suite(s), {total} resources, {bad} failed")
    return "\n".join(lines)


# ---------------------------------------------------------------- simulate

def simulation(sim: Simulation, output: str) -> str:
    if output == "json":
        return dump(simulation_doc(sim))
    return simulation_text(sim)


def simulation_doc(sim: Simulation) -> dict[str, Any]:
    """The DESIGN.md shape: feasible, node, allocations, reasons (worded, most useful first),
    for pods ``pods`` (and for workloads ``placed``/``replicas``), and ``stats.allocateSeconds``
    (the allocation alone, as `dra-allocate` measures its own)."""
    if sim.placement is not None:
        return _placement_doc(sim, sim.placement)
    outcome = sim.outcome
    return {"feasible": outcome.feasible, "node": outcome.node, "allocations": sim.allocations,
            "reasons": sim.reasons, "stats": {"allocateSeconds": round(sim.seconds, 6)}}


def _placement_doc(sim: Simulation, p: Placement) -> dict[str, Any]:
    """Pods and workloads: ``node`` is the first pod's; ``allocations`` every claim allocated on
    the way; ``reasons`` the notes, then why the first pod that was not placed was not."""
    doc: dict[str, Any] = {
        "feasible": p.feasible, "node": p.pods[0].node if p.pods else None, "allocations": sim.allocations,
        "reasons": sim.reasons,
        "pods": [{"pod": x.pod, "node": x.node, "claims": x.claims} for x in p.pods]}
    if sim.workloads:
        doc["placed"], doc["replicas"] = p.placed, p.replicas
    doc["stats"] = {"allocateSeconds": round(sim.seconds, 6)}
    return doc


def _placement_text(sim: Simulation, p: Placement) -> str:
    """The summary line, one line per pod tried (node and claims), then why the last one did not fit."""
    lines = [f"feasible: {'yes' if p.feasible else 'no'} ({report.summary_line(p, sim.sources)}; {p.steps} steps)"]
    by_claim = {a["claim"]: a["results"] for a in p.allocations}
    for x in p.pods:
        lines.append(f"pod {x.pod} -> {x.node}" if x.node else f"pod {x.pod}: not placed")
        for c in x.claims:
            if x.node and c in by_claim:
                lines += [f"  claim {c}: {r['request']} -> {r['driver']}/{r['pool']}/{r['device']}"
                          for r in by_claim.pop(c)]
    if p.failed is not None:
        by_node: dict[str, list[str]] = {}
        for r in p.failed.outcome.ranked():
            if r.node:
                by_node.setdefault(r.node, []).append(reason_text(r))
            elif r != p.failed.outcome.summary:
                lines.append(f"  {reason_text(r)}")
        for node in sorted(by_node):
            lines.append(f"node {node}:")
            lines.extend(f"  - {r}" for r in by_node[node])
    return "\n".join(lines) + "\n"


def simulation_text(sim: Simulation) -> str:
    if sim.placement is not None:
        return _placement_text(sim, sim.placement)
    outcome = sim.outcome
    how = f", {sim.mode} over {sim.claims} claims" if sim.claims > 1 else ""
    if outcome.feasible:
        lines = [f"feasible: yes, on node {outcome.node} ({outcome.steps} steps{how})"]
        lines += [f"  note: {reason_text(r)}" for r in outcome.reasons]
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
