"""What-if snapshots: nodes added (copies of a node, with its slices) or drained away.

Pure: a new ``ClusterSnapshot`` from an old one; the objects that do not change are shared.
``add_nodes`` copies node N as ``N-copy-1`` ... ``N-copy-K``: the Node (its
``kubernetes.io/hostname`` label too) and every ResourceSlice published for N alone
(``spec.nodeName: N``), renamed, with the pool renamed the same way (N's name inside the pool
name replaced, else ``-copy-i`` appended). Slices that select nodes by labels or serve every
node are shared already and are not copied. ``drain`` removes node N, the slices published for
it and the pods bound to it (their claims stay allocated: their devices went with the node).
"""

from __future__ import annotations

import copy
from typing import Any

from webhook import BadInput
from webhook.raw import as_dict
from webhook.state.base import ClusterSnapshot

HOSTNAME = "kubernetes.io/hostname"
COPIES_MAX = 10_000
"""Nodes one ``--add-nodes`` may add at most."""


def _name(obj: Any) -> str:
    return str(as_dict(as_dict(obj).get("metadata")).get("name") or "")


def _node(snapshot: ClusterSnapshot, name: str) -> dict[str, Any]:
    for n in snapshot.of("Node"):
        if _name(n) == name:
            return n
    known = sorted(_name(n) for n in snapshot.of("Node"))
    shown = ", ".join(known[:5]) + (", ..." if len(known) > 5 else "")
    raise BadInput(f"node {name} is not in the cluster state (nodes: {shown or 'none'})")


def _with(snapshot: ClusterSnapshot, **kinds: tuple[dict[str, Any], ...]) -> ClusterSnapshot:
    objects = {**snapshot.objects, **kinds}
    return ClusterSnapshot(objects, f"{snapshot.source} (what-if)", snapshot.synced_at, snapshot.version)


def _renamed(text: str, old: str, new: str, suffix: str) -> str:
    return text.replace(old, new) if old in text else f"{text}{suffix}"


def _slice_copy(raw: dict[str, Any], old: str, new: str, suffix: str) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    meta, spec = out.setdefault("metadata", {}), out.setdefault("spec", {})
    meta["name"] = _renamed(_name(raw), old, new, suffix)
    for k in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences"):
        meta.pop(k, None)
    spec["nodeName"] = new
    pool = spec.get("pool")
    if isinstance(pool, dict) and isinstance(pool.get("name"), str):
        pool["name"] = _renamed(pool["name"], old, new, suffix)
    return out


def add_nodes(snapshot: ClusterSnapshot, node: str, count: int) -> ClusterSnapshot:
    """``snapshot`` with ``count`` copies of ``node`` and of the slices published for it."""
    if not 1 <= count <= COPIES_MAX:
        raise BadInput(f"--add-nodes {node}={count}: the count must be between 1 and {COPIES_MAX}")
    raw = _node(snapshot, node)
    taken = {_name(n) for n in snapshot.of("Node")}
    own = [s for s in snapshot.of("ResourceSlice") if as_dict(s.get("spec")).get("nodeName") == node]
    nodes, slices = list(snapshot.of("Node")), list(snapshot.of("ResourceSlice"))
    i = 0
    for _ in range(count):
        i += 1
        while f"{node}-copy-{i}" in taken:
            i += 1
        new = f"{node}-copy-{i}"
        n = copy.deepcopy(raw)
        meta = n.setdefault("metadata", {})
        meta["name"] = new
        for k in ("uid", "resourceVersion", "creationTimestamp"):
            meta.pop(k, None)
        labels = meta.get("labels")
        if isinstance(labels, dict) and HOSTNAME in labels:
            labels[HOSTNAME] = new
        nodes.append(n)
        slices += [_slice_copy(s, node, new, f"-copy-{i}") for s in own]
    return _with(snapshot, Node=tuple(nodes), ResourceSlice=tuple(slices))


def drain(snapshot: ClusterSnapshot, node: str) -> ClusterSnapshot:
    """``snapshot`` without ``node``, the slices published for it and the pods bound to it."""
    _node(snapshot, node)
    return _with(snapshot,
                 Node=tuple(n for n in snapshot.of("Node") if _name(n) != node),
                 ResourceSlice=tuple(s for s in snapshot.of("ResourceSlice")
                                     if as_dict(s.get("spec")).get("nodeName") != node),
                 Pod=tuple(p for p in snapshot.of("Pod") if as_dict(p.get("spec")).get("nodeName") != node))


def parse_add(spec: str) -> tuple[str, int]:
    """``NODE=K`` -> (NODE, K); BadInput otherwise."""
    name, sep, k = spec.partition("=")
    if not sep or not name or not k.isdigit():
        raise BadInput(f"--add-nodes {spec!r}: want NODE=K (K a positive count)")
    return name, int(k)
