"""Node classes under a held state: per ``allocate`` call (``Failures``) and across the calls of
one placement (``ClassMemo``).

Pure. ``classes.py`` keys each node once per model, under the model's allocated state. Devices
that earlier pods took (``held``) change the view of the nodes whose pools hold them: those
nodes get a class of their own view (``_held_class``: their class under the model's state plus
the devices whose state differs), the others keep their class. ``Failures`` keeps, per class,
the outcome of the first node of the class searched in one call: a failure is reused, renamed,
for the others, with the same step count; a fit tells that the others fit too, with no fatal
error. ``ClassMemo`` carries the views, fits and failures from one call to the next while the
calls ask for claims of the same content (the replicas of a workload).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from webhook.allocator.claims import Claim
from webhook.allocator.classes import class_number, class_of, nodes_of_pools, transferable
from webhook.allocator.model import AllocatedState, Model, NodeInfo
from webhook.allocator.pools import pools_for
from webhook.allocator.reasons import Reason


def changed_pools(model: Model, held: AllocatedState) -> dict[tuple[str, str], tuple[str, ...]]:
    """The pools (driver, pool) of the devices whose allocated state differs between the model's
    and ``held`` (the model's plus what earlier pods or allocated input claims hold), each with
    the names of those devices, sorted."""
    base = model.allocated
    if held is base:
        return {}
    keys = (held.dedicated ^ base.dedicated) | (held.shared ^ base.shared)
    keys |= {k for k in held.aggregated.keys() | base.aggregated.keys()
             if held.aggregated.get(k) != base.aggregated.get(k)}
    out: dict[tuple[str, str], list[str]] = {}
    for k in keys:
        out.setdefault((k[0], k[1]), []).append(k[2])
    return {p: tuple(sorted(names)) for p, names in out.items()}


def _differ(model: Model, held: AllocatedState, pool: tuple[str, str], names: Iterable[str]) -> tuple[str, ...]:
    """Those of the devices ``names`` of ``pool`` whose state in ``held`` differs from the model's."""
    base = model.allocated
    out = []
    for name in names:
        k = (pool[0], pool[1], name)
        if (k in held.dedicated) != (k in base.dedicated) or (k in held.shared) != (k in base.shared) or \
                held.aggregated.get(k) != base.aggregated.get(k):
            out.append(name)
    return tuple(out)


FAILS_MAX = 4096
"""Failed classes ``ClassMemo.fails`` holds at most."""

FITS = None
"""``Failures.lookup``'s ``why`` for a node whose class fits (its search found an allocation)."""


HELD_KEYS_MAX = 50_000
"""Class numbers a model keeps at most before ``_held_class`` stops adding any (a serving process
keeps a model while the state does not change, and every placement may add a few)."""


def _held_class(model: Model, node: NodeInfo, held: AllocatedState,
                changed: dict[tuple[str, str], tuple[str, ...]]) -> int | None:
    """The class of ``node`` under ``held``: its class under the model's allocated state plus,
    per changed pool of the node, the devices whose state differs (``changed``: names, sorted),
    each by its pool's place in the node's pools and its name (nodes of one class hold the same
    names at the same places). Nodes whose views agree get one number; it never equals a class
    of the model's state (tagged), which costs some sharing, never soundness. Much cheaper than
    keying every device again: only the devices that differ are read."""
    base = class_of(model, node.name)
    if base is None or len(model.class_data.get("numbers", ())) >= HELD_KEYS_MAX:
        return None  # past the cap the node is searched: keys of placements must not grow a model without end
    delta = []
    for i, p in enumerate(pools_for(model, node)):
        for name in changed.get((p.driver, p.name), ()):
            k = (p.driver, p.name, name)
            agg = held.aggregated.get(k)
            delta.append((i, name, k in held.dedicated, k in held.shared, tuple(sorted(agg.items())) if agg else ()))
    return class_number(model, ("held", base, tuple(delta)))


class ClassMemo:
    """Node classes under a held state that grows call by call (the pods of one placement), kept
    across those ``allocate`` calls: a node is keyed again only when a device of one of its pools
    changed since (``touch``). ``fits`` keeps the classes whose search found an allocation (and
    its steps), ``fails`` those whose search failed (reasons and steps), while the calls ask for
    claims of the same content (the replicas of a workload): the caller says which claims each
    call asks for (``same_claims``, before every call). A class number names a view that
    includes what is in use, so a fit or a failure stays true for it."""

    __slots__ = ("stamps", "keys", "fits", "fails", "claims", "usable", "answers", "diffs", "touched", "held")

    def __init__(self) -> None:
        self.stamps: dict[tuple[str, str], int] = {}
        self.keys: dict[str, tuple[tuple[int, ...], int | None]] = {}
        self.fits: dict[int, int] = {}
        self.fails: dict[int, tuple[list[Reason], int, tuple[str, ...]]] = {}
        """Class -> (reasons, steps, the labels of the claims they name, in claim order); once
        the answers are looked up, the failures kept with them (per model and content)."""
        self.claims: Any = None
        self.usable: bool | None = None
        """``transferable`` of the claims ``claims`` describes (their content decides it)."""
        self.answers: Any = None
        """The answers kept for the claims ``claims`` describes (``answers.py``), once looked up."""
        self.diffs: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}
        self.touched: dict[tuple[str, str], set[str]] = {}
        """Per pool, the devices ever touched: the only ones whose state can differ from the model's."""
        self.held: AllocatedState | None = None
        """What is in use after the latest ``touch``."""
        """Per touched pool: (its stamp, the devices whose state differs from the model's then)."""

    def same_claims(self, key: Any) -> None:
        """The next calls ask for claims described by ``key``; a new key forgets ``fits``."""
        if key != self.claims:
            self.claims = key
            self.fits = {}
            self.fails = {}
            self.usable = None
            self.answers = None

    def changed(self, model: Model, held: AllocatedState) -> dict[tuple[str, str], tuple[str, ...]]:
        """``changed_pools(model, held)``: for the ``held`` of the latest ``touch`` only the pools
        touched are looked at, each again only after it is touched again; any other ``held`` is
        compared device by device."""
        if held is model.allocated:
            return {}
        if held is not self.held:
            return changed_pools(model, held)
        out: dict[tuple[str, str], tuple[str, ...]] = {}
        for pool, stamp in self.stamps.items():
            hit = self.diffs.get(pool)
            if hit is None or hit[0] != stamp:
                hit = self.diffs[pool] = (stamp, _differ(model, held, pool, sorted(self.touched.get(pool, ()))))
            if hit[1]:
                out[pool] = hit[1]
        return out

    def touch(self, devices: Iterable[tuple[str, str, str]], held: AllocatedState) -> None:
        """The use of these devices ((driver, pool, name)) changed since the last call (taken or
        released): ``held`` is what is in use now, the model's allocated state plus every change
        told so far."""
        self.held = held
        for driver, pool, name in devices:
            p = (driver, pool)
            self.stamps[p] = self.stamps.get(p, 0) + 1
            self.touched.setdefault(p, set()).add(name)


class Failures:
    """The searches of one ``allocate`` call, per node class: failures (reasons and steps) and
    fits (steps), so that each class is searched once (see the module doc).

    ``held`` is what is in use for the call: the model's allocated state, or that plus the
    devices of earlier pods and of allocated input claims. A node whose pools hold none of the
    devices whose state differs keeps its class; the others get a class of their own view, keyed
    from their class under the model's state and what differs in their pools (``_held_class``),
    remembered in ``memo`` across calls while their pools stay untouched.
    """

    __slots__ = ("model", "claims", "by_class", "usable", "held", "changed", "dirty", "own", "memo")

    def __init__(self, model: Model, claims: list[Claim], held: AllocatedState | None = None,
                 memo: ClassMemo | None = None) -> None:
        self.model = model
        self.claims = claims
        self.by_class: dict[int, tuple[list[Reason] | None, int]] = {}
        self.usable: bool | None = None
        """``transferable``, decided at the first recorded search; False after ``stop``."""
        self.held = held if held is not None else model.allocated
        changed = self.changed = memo.changed(model, self.held) if memo is not None else changed_pools(model, self.held)
        index = nodes_of_pools(model) if changed else {}
        self.dirty = {n for p in changed for n in index.get(p, ())}
        """The nodes whose pools hold a device whose state differs from the model's."""
        self.own: dict[str, int | None] = {}
        self.memo = memo

    def class_of(self, name: str) -> int | None:
        """Node ``name``'s class under ``held`` (None: none, always searched)."""
        if name not in self.dirty:
            return class_of(self.model, name)
        if name in self.own:
            return self.own[name]
        node = self.model.node(name)
        memo = self.memo
        stamp = tuple(memo.stamps.get((p.driver, p.name), 0) for p in pools_for(self.model, node)) if memo else ()
        hit = memo.keys.get(name) if memo else None
        if hit is not None and hit[0] == stamp:
            got = hit[1]
        else:
            got = _held_class(self.model, node, self.held, self.changed)
            if memo is not None:
                memo.keys[name] = (stamp, got)
        self.own[name] = got
        return got

    def lookup(self, name: str) -> tuple[list[Reason] | None, int] | None:
        """(reasons, steps) of the search of node ``name``'s class in this call (or, for a fit,
        an earlier call of the same claims), if any; the reasons are ``FITS`` when that search
        found an allocation."""
        if not self.by_class and not self.remembers():
            return None
        cls = self.class_of(name)
        return None if cls is None else self.known(cls)

    def remembers(self) -> bool:
        """Whether ``memo`` holds searches of earlier calls (of claims of the same content)."""
        memo = self.memo
        return memo is not None and bool(memo.fits or memo.fails)

    def known(self, cls: int) -> tuple[list[Reason] | None, int] | None:
        got = self.by_class.get(cls)
        memo = self.memo
        if got is None and memo is not None:
            if cls in memo.fits:
                return FITS, memo.fits[cls]
            failed = memo.fails.get(cls)
            if failed is not None and len(failed[2]) == len(self.claims):
                why, steps, labels = failed  # an earlier replica's: its claims' names become these claims'
                names = dict(zip(labels, (c.label for c in self.claims), strict=True))
                got = self.by_class[cls] = ([r._replace(claim=names.get(r.claim, r.claim)) for r in why], steps)
        return got

    def transfers(self) -> bool:
        """Whether one node's search stands for its class in this call (``transferable``,
        decided once; False after ``stop``)."""
        if self.usable is None:
            memo = self.memo
            if memo is not None and memo.usable is not None:
                self.usable = memo.usable
            else:
                self.usable = transferable(self.model, self.claims)
                if memo is not None:
                    memo.usable = self.usable
        return self.usable

    def stop(self) -> None:
        """Record nothing from now on: the call's searches cost less than keying their nodes."""
        self.usable = False

    def record(self, name: str, why: list[Reason] | None, steps: int) -> None:
        """Node ``name`` failed with ``why`` (``FITS``: found an allocation) after ``steps`` steps."""
        if not self.transfers() or (why is not None and any(r.pool or r.detail for r in why)):
            return
        cls = self.class_of(name)
        if cls is not None:
            self.by_class[cls] = (why, steps)
            if self.memo is not None:
                if why is FITS:
                    self.memo.fits[cls] = steps
                else:
                    fails = self.memo.fails
                    if len(fails) >= FAILS_MAX:  # kept per model and content (``answers``): bounded
                        fails.clear()
                    fails[cls] = (why, steps, tuple(c.label for c in self.claims))
