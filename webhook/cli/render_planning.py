"""The outputs of ``explain`` and ``capacity``: a table for people, the JSON DESIGN.md documents
for tools. Words reasons with ``allocator.reasons`` only; decides nothing."""

from __future__ import annotations

from typing import Any

from webhook.allocator.reasons import Reason, amounts, full, text
from webhook.cli.render import dump
from webhook.cli.results import Explained
from webhook.planning import Capacity, Explanation, Member, PoolUse, Standing, Verdict
from webhook.quantity import readable as show

FITS = "fits"
"""The ``reason.code`` of a group of nodes the pod fits on."""
LABEL_MAX = 48
_AMOUNT_FIELDS = frozenset({"code", "need", "free", "total"})
"""Fields written by ``amounts`` (as quantities), or not as they are."""


def reason_doc(r: Reason) -> dict[str, Any]:
    """A reason as JSON: its code, the fields it sets, and its words."""
    doc: dict[str, Any] = {"code": str(r.code)}
    doc.update({k: v for k, v in r._asdict().items() if k not in _AMOUNT_FIELDS and v})
    doc.update(amounts(r))
    return doc


def nodes_label(nodes: tuple[str, ...] | list[str]) -> str:
    """``worker-1``, or ``12 nodes like gpu-node-3`` for a group."""
    return nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes like {nodes[0]}"


def _verdict_doc(v: Verdict) -> dict[str, Any]:
    return {"nodes": list(v.nodes), "fits": v.fits,
            "reason": reason_doc(v.reason) if v.reason is not None else {"code": FITS},
            "text": text(v.reason) if v.reason is not None else FITS,
            "more": [text(m) for m in v.more]}


def _member_doc(m: Member) -> dict[str, Any]:
    return {"pod": m.pod, "group": m.group, "verdict": str(m.standing), "node": m.node,
            "reason": reason_doc(m.reason) if m.reason is not None else None,
            "text": full(m.reason) if m.reason is not None else None}


def _standing(m: Member) -> str:
    """A member's verdict in the table: ``on NODE``, ``fits nowhere``, ``waits (fits on NODE)``."""
    if m.standing == Standing.PLACED:
        return f"on {m.node}"
    if m.standing == Standing.WAITS:
        return f"waits (fits on {m.node})"
    return "fits nowhere" if m.standing == Standing.BLOCKED else "not tried"


def _members_text(e: Explanation) -> list[str]:
    """The PodGroup members as a table: pod, verdict, first blocking reason."""
    if not e.members:
        return []
    rows = [(m.pod, _standing(m), full(m.reason) if m.reason is not None else "-") for m in e.members]
    pw = min(LABEL_MAX, max(len("MEMBER"), *(len(r[0]) for r in rows)))
    vw = max(len("VERDICT"), *(len(r[1]) for r in rows))
    groups = list(dict.fromkeys(m.group for m in e.members))
    lines = [f"PodGroup{'s' if len(groups) > 1 else ''} {', '.join(groups)}:",
             f"{'MEMBER':<{pw}}  {'VERDICT':<{vw}}  FIRST BLOCKING REASON"]
    lines += [f"{pod:<{pw}}  {verdict:<{vw}}  {why}" for pod, verdict, why in rows]
    return lines


def explained(ex: Explained, output: str) -> str:
    return dump(explained_doc(ex)) if output == "json" else explained_text(ex)


def explained_doc(ex: Explained) -> dict[str, Any]:
    e = ex.explanation
    doc: dict[str, Any] = {
        "pod": e.pod, "fits": e.fits, "node": e.node, "placed": e.placed, "replicas": e.replicas,
        "summary": text(e.summary) if e.summary is not None else None,
        "blockers": [{**reason_doc(b), "text": text(b)} for b in e.blockers],
        "notes": [text(n) for n in e.notes],
        "nodes": [_verdict_doc(v) for v in e.verdicts],
        "members": [_member_doc(m) for m in e.members]}
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
    lines += _members_text(e)
    return "\n".join(lines)


def _per_class(c: Capacity) -> list[tuple[list[str], int]]:
    """Nodes that took the same number of copies, together (most first, then by first node)."""
    groups: dict[int, list[str]] = {}
    for node, k in c.per_node.items():
        groups.setdefault(k, []).append(node)
    return sorted(((names, k) for k, names in groups.items()), key=lambda g: (-g[1], g[0][0]))


def _use(used: Any, total: Any) -> dict[str, str]:
    return {"used": show(used), "free": show(total - used), "total": show(total)}


def _pool_doc(p: PoolUse) -> dict[str, Any]:
    return {"driver": p.driver, "pool": p.pool, "devices": {"total": p.devices, "allocated": p.allocated},
            "counters": {cs: {c: _use(u, t) for c, (u, t) in vals.items()} for cs, vals in p.counters.items()},
            "capacity": {n: _use(u, t) for n, (u, t) in p.capacity.items()}}


def capacity_doc(c: Capacity) -> dict[str, Any]:
    return {"unit": c.unit, "fits": c.fits, "limit": c.limit, "capped": c.capped, "replicas": c.replicas,
            "stopped": text(c.stopped) if c.stopped is not None else None,
            "nodes": [{"node": n, "fits": k} for n, k in c.per_node.items()],
            "classes": [{"nodes": names, "fits": k} for names, k in _per_class(c)],
            "pools": [_pool_doc(p) for p in c.pools]}


def capacity(c: Capacity, output: str) -> str:
    return dump(capacity_doc(c)) if output == "json" else capacity_text(c)


def capacity_text(c: Capacity) -> str:
    head = f"{'at least ' if c.capped else ''}{c.fits} more {c.unit} fit"
    if c.replicas > 1:
        head += f" ({c.fits // c.replicas} whole workloads of {c.replicas} pods)"
    lines = [head]
    if c.capped:
        lines.append(f"  stopped at the limit of {c.limit} (--max): more may fit")
    elif c.stopped is not None:
        lines.append(f"  the next one: {text(c.stopped)}")
    rows = [(nodes_label(names), f"{k} each" if len(names) > 1 else str(k)) for names, k in _per_class(c)]
    width = min(LABEL_MAX, max([len("NODES"), *(len(r[0]) for r in rows)]))
    lines.append(f"{'NODES':<{width}}  FIT")
    lines += [f"{label:<{width}}  {k}" for label, k in rows]
    if c.pools:
        lines.append("POOL (devices allocated/total; counters and capacity used/total)")
        for p in c.pools:
            parts = [f"devices {p.allocated}/{p.devices}"]
            parts += [f"{cs}/{n} {show(u)}/{show(t)}" for cs, vals in p.counters.items() for n, (u, t) in vals.items()]
            parts += [f"{n} {show(u)}/{show(t)}" for n, (u, t) in p.capacity.items()]
            lines.append(f"  {p.driver}/{p.pool}: " + ", ".join(parts))
    return "\n".join(lines)
