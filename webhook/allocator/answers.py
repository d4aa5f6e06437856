"""The devices a search took on one node, taken again on another node of its class.

Pure. Two nodes of one class (``classes.py``), each under what is in use on it, hold the same
devices under the same names at the same places in their pools, and the search cannot tell
them apart: for claims of the same content it takes the devices of the same names at the same
places, in the same steps. So ``engine.allocate``, when it places the replicas of a workload
(calls that share a ``heldclasses.ClassMemo``), keeps per model and per content of the pending
claims (``content_key``: their namespaces and specs, and the mode) the answer of each class
whose search fit (``remember``), and gives it, moved to the node at hand, to the next node of
that class that is to be the answer (``recall``) instead of searching it. Each view of a node
(fresh, or filled as another node was) is then searched once per snapshot, whichever request
or replica gets there first.

The failures of classes (``heldclasses.ClassMemo.fails``: reasons, steps, the claims they name)
are kept beside the answers, per model and content, in the same way: a view that failed for
these claims fails again, in the same steps, whichever pod asks (renamed to its claims).

Not kept: an answer with a capacity share (each share gets a new id), and any answer when the
claims' selectors can read an identifying attribute (no classes then). An answer is reused
only within the step budget left, as the search it stands for would be.
"""

from __future__ import annotations

import json
from typing import Any

from webhook.allocator.frame import DeviceResult
from webhook.allocator.model import Device, Model, NodeInfo
from webhook.allocator.pools import pools_for
from webhook.raw import as_dict

ANSWERS_MAX = 64
"""Claim contents a model keeps answers for at most (the store is emptied past it)."""

Taken = tuple[tuple[tuple[int, str, str, bool], ...], ...]
"""Per claim, per device taken: (its pool's place among the node's pools, its name, the request, admin)."""
Answer = tuple[Taken, int, bool]
"""(the devices taken, the search's steps, whether it took each claim's first fit in order)."""


def content_key(claims: list[Any], mode: str) -> tuple[Any, ...]:
    """What the search reads of ``claims`` (parsed: ``claims.Claim``) besides their names."""
    return (mode, tuple((c.namespace, _spec_key(as_dict(c.raw.get("spec")))) for c in claims))


_SPECS: dict[int, tuple[dict[str, Any], str]] = {}
SPECS_MAX = 256
"""Claim specs whose key ``_spec_key`` keeps (the claims made from one template share its spec)."""


def _spec_key(spec: dict[str, Any]) -> str:
    """``spec`` as sorted JSON, kept per spec object: the claims of a template's replicas hold the
    template's own spec, so it is written once per template, not once per replica. The entry
    holds the spec, so its id names no other object while it is kept; specs are never changed
    in place (the claims are read, never written)."""
    hit = _SPECS.get(id(spec))
    if hit is None or hit[0] is not spec:
        if len(_SPECS) >= SPECS_MAX:
            _SPECS.clear()
        hit = _SPECS[id(spec)] = (spec, json.dumps(spec, sort_keys=True, default=repr))
    return hit[1]


def _store(run: Any) -> dict[int, Answer] | None:
    """The answers for ``run``'s claims (None: not kept for this call). ``run`` is the call's
    ``engine._Run`` (not imported: engine imports this module)."""
    classes = run.classes
    memo = classes.memo if classes is not None else None
    if classes is None or memo is None or run.fixed or not classes.transfers():
        return None
    if memo.answers is None:
        store: dict[Any, tuple[dict[int, Answer], dict[int, Any]]] = run.model.class_data.setdefault("answers", {})
        key = content_key(run.claims, run.call.mode)
        got = store.get(key)
        if got is None:
            if len(store) >= ANSWERS_MAX:
                store.clear()
            got = store[key] = ({}, {})
        memo.answers, fails = got
        if memo.fails is not fails:  # the failures of these claims' classes: kept alike
            fails.update(memo.fails)
            memo.fails = fails
    return memo.answers  # type: ignore[no-any-return]


def recall(run: Any, node: NodeInfo, budget: int) -> tuple[list[list[DeviceResult]], int, bool] | None:
    """(results per claim, steps, in order) of an earlier search of ``node``'s class, moved to
    ``node``, when there is one within ``budget`` steps."""
    store = _store(run)
    if not store or run.classes is None:
        return None
    cls = run.classes.class_of(node.name)
    hit = store.get(cls) if cls is not None else None
    if hit is None or hit[1] > budget:
        return None
    return moved(run.model, node, hit)


def moved(model: Model, node: NodeInfo, hit: Answer) -> tuple[list[list[DeviceResult]], int, bool] | None:
    """A kept answer taken on ``node`` (of the class it was kept for): (results per claim, steps,
    in order); None when a device is not found there."""
    taken, steps, in_order = hit
    pools = pools_for(model, node)
    named: dict[tuple[str, int], dict[str, Device]] = model.class_data.setdefault("named", {})
    results: list[list[DeviceResult]] = []
    for claim in taken:
        got = []
        for place, name, request, admin in claim:
            if place >= len(pools):
                return None
            devices = named.get((node.name, place))
            if devices is None:
                if len(named) >= NAMED_MAX:
                    named.clear()
                devices = named[(node.name, place)] = _by_name(pools[place])
            dev = devices.get(name)
            if dev is None:
                return None
            got.append(DeviceResult(request, dev, admin, None, None))
        results.append(got)
    return results, steps, in_order


NAMED_MAX = 8192
"""Pools of nodes whose devices ``moved`` keeps by name, per model, at most."""


def _by_name(p: Any) -> dict[str, Device]:
    """The devices of pool ``p`` (a ``pools.Pool``) by name: its candidates first, then those of
    its slices that do not target the node (the first of a name wins, as a search finds it)."""
    out: dict[str, Device] = {}
    for d in p.candidates:
        out.setdefault(d.name, d)
    for sl in p.not_targeting:
        for d in sl.devices:
            out.setdefault(d.name, d)
    return out


def remember(run: Any, node: NodeInfo, results: list[list[DeviceResult]], steps: int, in_order: bool) -> None:
    """Keep the answer a search of ``node`` found, for the nodes of its class."""
    if any(r.share_id is not None or r.consumed is not None for got in results for r in got):
        return
    store = _store(run)
    if store is None or run.classes is None:
        return
    cls = run.classes.class_of(node.name)
    if cls is None:
        return
    place = {(p.driver, p.name): i for i, p in enumerate(pools_for(run.model, node))}
    taken = []
    for got in results:
        claim = []
        for r in got:
            i = place.get((r.device.slice.driver, r.device.slice.pool))
            if i is None:
                return
            claim.append((i, r.device.name, r.request, r.admin))
        taken.append(tuple(claim))
    store[cls] = (tuple(taken), steps, in_order)


def forget(model: Model) -> None:
    """Drop every kept answer of ``model`` (tests that compare with and without them)."""
    model.class_data.pop("answers", None)
