"""When a one-shot allocation may stop at its first fit: no later node can fail the attempt.

Pure. ``engine.allocate`` searches every candidate node after the first fit, as kube-scheduler
filters them all, because a fatal error on any node (``claims.AllocError``) fails the whole
attempt. After a fit, a later node can change the answer only by such an error, and the search
raises one in few places: a CEL runtime error in a class or request selector, a derived
attribute that fails to evaluate, an ``All`` request over an incomplete or invalid pool or
against a constraint, and the capacity arithmetic (a capacity request that cannot be
represented, or a negative capacity value or default under DRAConsumableCapacity). ``settles``
rules every one of them out before the search stops:

- every request (or subrequest) is ``ExactCount``, with no capacity request and no derived
  attributes (so no ``All``, no capacity request arithmetic, no derived attribute);
- no class or request selector raises on any device of the state (every node's: the check is
  conservative), each chain evaluated once per device shape (``celproof``). A selector that
  only compares ``device.driver`` with a string still raises on a device whose attribute value
  is unsupported or whose capacity does not parse (every selector does): that is checked too;
- with DRAConsumableCapacity on, no device declares a negative capacity value or default (only
  the drivers the selectors admit count when every selector is exactly ``device.driver ==
  "<name>"``).

The per-node device limit of a claim (``DEVICES_PER_CLAIM_MAX``) is the same on every node for
``ExactCount`` requests: the node that fit passed it. Where any condition fails the search goes
on as before: settling only skips searches whose outcome cannot change the answer.

``cheap_one_shot`` is the one-shot form of ``engine.CHEAP_FIT_STEPS``: a one-shot call keeps no
node classes for a later call, so a first fit within a ``ONE_SHOT_SHARE``-th of the node's
candidate devices turns them off too (keying a node reads every device of its pools).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from webhook.allocator.celproof import device_shapes, quiet, read_names
from webhook.allocator.claims import EXACT, Claim, Leaf
from webhook.allocator.devices import CapSpec
from webhook.allocator.model import Model, NodeInfo
from webhook.allocator.pools import pools_for
from webhook.gates import Gate
from webhook.raw import as_dict

ONE_SHOT_SHARE = 4
"""A one-shot call's first fit within a quarter of its node's candidates turns node classes off."""

_DRIVER_IS = re.compile(r"""\s*device\s*\.\s*driver\s*==\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*""")
"""The driver compared with a plain string literal: when every selector is of this shape, only
the drivers they name count for the negative-capacity check."""

ANY_DRIVER = None
"""``drivers``' answer when some request takes devices of any driver (no selector at all)."""


def settles(claims: Iterable[Claim], model: Model) -> bool:
    """Whether no node can raise a fatal error for ``claims`` (see the module doc): a search
    that found a fit may stop there with the answer a search of every node gives. Selectors are
    evaluated once per device shape (``celproof``); call it inside the call's CEL deadline scope
    (out of time, it answers False)."""
    claims = list(claims)
    leaves = [leaf for c in claims for r in c.requests for leaf in ((r.leaf,) if r.leaf is not None
                                                                     else r.subrequests)]
    if not all(_plain(leaf) for leaf in leaves):
        return False
    chains = [leaf.class_selectors + leaf.selectors for leaf in leaves]
    names = read_names(chains)
    multi = any("allowMultipleAllocations" in sel.expr for sels in chains for sel in sels)
    shapes = device_shapes(model, names, multi) if names is not None else None
    if shapes is None or not quiet(chains, model, shapes):
        return False
    if not model.gates.enabled(Gate.DRA_CONSUMABLE_CAPACITY):
        return True
    # Every capacity map of the state is a shape's (a shape holds its map by identity); only the
    # drivers the selectors can admit matter, when they name them.
    found = drivers(claims)
    return not any(_negative_map(dev.get("capacity")) for driver, dev in shapes
                   if found is ANY_DRIVER or found is False or driver in found)


def _plain(leaf: Leaf) -> bool:
    """``ExactCount``, no capacity request, no derived attributes (see the module doc)."""
    return leaf.mode == EXACT and leaf.capacity is None and not leaf.derived


def drivers(claims: Iterable[Claim]) -> frozenset[str] | None | Literal[False]:
    """The drivers whose devices the claims' requests can select (``ANY_DRIVER``: every driver),
    or False when some request or selector is not exactly ``device.driver == "<name>"``."""
    out: set[str] = set()
    every = False
    for claim in claims:
        for req in claim.requests:
            for leaf in (req.leaf,) if req.leaf is not None else req.subrequests:
                got = _leaf_driver(leaf)
                if got is False:
                    return False
                if got is ANY_DRIVER:
                    every = True
                else:
                    out.add(got)
    return ANY_DRIVER if every else frozenset(out)


def _leaf_driver(leaf: Leaf) -> str | None | Literal[False]:
    """The one driver ``leaf``'s selectors admit ("" when two disagree: none), ``ANY_DRIVER``
    without selectors, False when the leaf is not of the settling kind."""
    if not _plain(leaf):
        return False
    names = set()
    for sel in leaf.class_selectors + leaf.selectors:
        m = _DRIVER_IS.fullmatch(sel.expr)
        if m is None:
            return False
        names.add(m.group(1) if m.group(1) is not None else m.group(2))
    if not names:
        return ANY_DRIVER
    return names.pop() if len(names) == 1 else ""


def _negative_map(caps: Any) -> bool:
    """Whether a raw capacity map declares a negative value or default."""
    return any(isinstance(entry, dict) and _negative(CapSpec(entry)) for entry in as_dict(caps).values())


def _negative(spec: CapSpec) -> bool:
    return spec.value < 0 or (spec.default is not None and spec.default < 0)


def cheap_one_shot(model: Model, node: NodeInfo, steps: int) -> bool:
    """Whether a first fit in ``steps`` is cheap enough, in a one-shot call, to turn node
    classes off (``ONE_SHOT_SHARE``)."""
    return steps * ONE_SHOT_SHARE <= sum(len(p.candidates) for p in pools_for(model, node))
