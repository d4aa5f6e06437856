"""What the searches of one node share: within a call (per-pod mode runs one search per claim)
and, kept in the model (``node_data``), across requests.

Pure. Everything in a ``NodeData`` depends on the node's candidates, the gates and a request's
*content* only, never on what is in use: per-device answers keyed by content (eligibility,
capacity, ``All`` sets, attribute values by position), and each content's static fit with
nothing in use, which a search redoes only for the devices its allocated state touches.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from webhook.allocator.capacity import CapacityError, Consumed
from webhook.allocator.claims import Selector
from webhook.allocator.constraints import Value
from webhook.allocator.model import Device, Model, NodeInfo
from webhook.allocator.pools import Pool
from webhook.allocator.reasons import Reason


class NodeData:
    """What every search on one node of one model can share: the candidates, and per device what
    depends only on the device, the gates and a request's *content* (never on what is in use).
    Per-pod mode runs one search per claim on a node, so the claims of a PodGroup made from one
    template evaluate each device once, not once per claim; and the model keeps it per node
    (``node_data``), so later requests with the same content do not evaluate it again."""

    __slots__ = ("pools", "flat", "misfits", "consumed", "all_sets", "attr_pos", "attr_at", "base", "pos_of",
                 "consumers")

    def __init__(self, pools: list[Pool]) -> None:
        self.pools = pools
        self.flat: tuple[Device, ...] = tuple(chain.from_iterable(p.candidates for p in pools))
        """The candidates in search order: every complete pool's, pool by pool."""
        self.misfits: dict[tuple[int, int], Selector | str | None] = {}
        """(Leaf.sel_id, device uid) -> ``Candidates.misfit``."""
        self.consumed: dict[tuple[int, int], Consumed | Reason | CapacityError] = {}
        """(Leaf.cap_id, device uid) -> ``consumed_capacity`` (or its error)."""
        self.all_sets: dict[tuple[int, int], list[Device]] = {}
        """(Leaf.sel_id, Leaf.cap_id) -> the devices an ``All`` request takes."""
        self.attr_pos: dict[str, dict[Value | None, list[int]]] = {}
        """Attribute name -> positions in ``flat`` per value (``Pruner.values``)."""
        self.attr_at: dict[str, list[Value | None]] = {}
        """Attribute name -> value per position in ``flat`` (``Pruner.values_at``)."""
        self.base: dict[tuple[Any, ...], tuple[list[bool], list[Any]] | None] = {}
        """``prune.content(leaf)`` -> per candidate: statically usable with nothing in use, and its
        eligibility and capacity answer (``Pruner.state_free``); None when some candidate raises."""
        self.pos_of: dict[tuple[str, str, str], int] | None = None
        """Device key -> position in ``flat``, on first use."""
        self.consumers: dict[tuple[str, str], tuple[Device, ...]] = {}
        """Per pool, its devices that consume counters (``pooluse.PoolUse``)."""

    def size(self) -> int:
        return (len(self.misfits) + len(self.consumed) + len(self.all_sets) + len(self.base) + len(self.attr_pos)
                + len(self.attr_at))


NODE_DATA_MAX = 2_000
"""Entries one node's kept ``NodeData`` may hold before it starts afresh (~30 distinct request
contents on a node of 66 devices; a PodGroup's claims from one template are one content)."""
NODE_DATA_NODES = 64
"""Nodes whose ``NodeData`` a model keeps (the oldest goes first). Entries take ~170 bytes, so
what a burst of distinct requests can make one model hold stays under ~25 MiB per worker."""


def node_data(model: Model, node: NodeInfo, pools: list[Pool]) -> NodeData:
    """The ``NodeData`` of ``node``, kept in the model while the node has the same pools (the
    model's cached ones): everything in it depends on the node's candidates, the gates and
    request content only, so every later request on that model shares its evaluations. Serving
    threads may share one: each entry is written whole, and two writers write equal values."""
    kept = model.node_data
    got: NodeData | None = kept.get(node.name)
    if got is None or got.pools is not pools or got.size() > NODE_DATA_MAX:
        got = NodeData(pools)
        with model.lock:
            kept.pop(node.name, None)
            while len(kept) >= NODE_DATA_NODES:
                del kept[next(iter(kept))]
            kept[node.name] = got
    return got
