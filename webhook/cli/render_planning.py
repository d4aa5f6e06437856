"""The outputs of ``explain`` and ``capacity``: a table for people, the JSON DESIGN.md documents
for tools. Words reasons with ``allocator.reasons`` only; decides nothing."""

from __future__ import annotations

from typing import Any

from webhook.allocator.reasons import Reason, text
from webhook.cli.render import dump
from webhook.cli.results import Explained
from webhook.planning import Verdict

FITS = "fits"
"""The ``reason.code`` of a group of nodes the pod fits on."""
LABEL_MAX = 48


def reason_doc(r: Reason) -> dict[str, Any]:
    """A reason as JSON: its code, the fields it sets, and its words."""
    doc: dict[str, Any] = {"code": str(r.code)}
    doc.update({k: v for k, v in r._asdict().items() if k != "code" and v})
    return doc


def nodes_label(nodes: tuple[str, ...] | list[str]) -> str:
    """``worker-1``, or ``12 nodes like gpu-node-3`` for a group."""
    return nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes like {nodes[0]}"


def _verdict_doc(v: Verdict) -> dict[str, Any]:
    return {"nodes": list(v.nodes), "fits": v.fits,
            "reason": reason_doc(v.reason) if v.reason is not None else {"code": FITS},
            "text": text(v.reason) if v.reason is not None else FITS,
            "more": [text(m) for m in v.more]}


def explained(ex: Explained, output: str) -> str:
    return dump(explained_doc(ex)) if output == "json" else explained_text(ex)


def explained_doc(ex: Explained) -> dict[str, Any]:
    e = ex.explanation
    doc: dict[str, Any] = {
        "pod": e.pod, "fits": e.fits, "node": e.node, "placed": e.placed, "replicas": e.replicas,
        "summary": text(e.summary) if e.summary is not None else None,
        "blockers": [{**reason_doc(b), "text": text(b)} for b in e.blockers],
        "notes": [text(n) for n in e.notes],
        "nodes": [_verdict_doc(v) for v in e.verdicts]}
    if ex.live:
        doc["scheduler"] = ex.scheduler
    return doc


def _headline(ex: Explained) -> str:
    e = ex.explanation
    fitting = sum(len(v.nodes) for v in e.verdicts if v.fits)
    if e.replicas > 1:
        head = f"{e.placed} of {e.replicas} pods placed"
        return head + ("" if e.fits else f"; pod {e.pod} fits nowhere (the later replicas are the same pod)")
    if e.fits:
        where = f": the first is {e.node}" if e.node else ""
        return f"pod {e.pod} fits on {fitting} of {e.nodes} node{'' if e.nodes == 1 else 's'}{where}"
    return f"pod {e.pod} fits nowhere"


def explained_text(ex: Explained) -> str:
    e = ex.explanation
    lines = [_headline(ex)]
    if e.summary is not None:
        lines.append(f"  ours:      {text(e.summary)}")
    if ex.live:
        lines.append(f"  scheduler: {ex.scheduler or '(no FailedScheduling event)'}")
    lines += [f"  before any node: {text(b)}" for b in e.blockers]
    lines += [f"  note: {text(n)}" for n in e.notes]
    if e.verdicts:
        rows = [(nodes_label(v.nodes), text(v.reason) if v.reason is not None else FITS, v.more)
                for v in e.verdicts]
        width = min(LABEL_MAX, max(len("NODES"), *(len(r[0]) for r in rows)))
        lines.append(f"{'NODES':<{width}}  FIRST REASON")
        for label, why, more in rows:
            lines.append(f"{label:<{width}}  {why}")
            lines += [f"{'':<{width}}    then: {text(m)}" for m in more]
    return "\n".join(lines)
