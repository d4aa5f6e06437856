"""The raw ResourceSlices of one snapshot indexed by node and by pool; after one slice changed,
the next snapshot's index shares all but that node's entries (``persist.Layered``). Pure."""

from __future__ import annotations

from typing import Any

from webhook.allocator.devices import interned_str
from webhook.allocator.persist import Layered
from webhook.raw import as_dict, as_list


class Index:
    """The raw slices of one snapshot by ``spec.nodeName`` ("" for the others), in snapshot order.
    Reading one key per slice, it costs far less than converting them."""

    __slots__ = ("raws", "by_node", "unnamed", "device_nodes", "pools")

    def __init__(self, raws: tuple[Any, ...]) -> None:
        self.raws = raws
        by_node: dict[str, list[dict[str, Any]]] = {}
        unnamed: list[dict[str, Any]] = []
        pools: dict[str, str] = {}
        for raw in raws:
            if not isinstance(raw, dict):
                continue
            spec = raw.get("spec")
            name = spec.get("nodeName") if isinstance(spec, dict) else None
            if name and isinstance(name, str):
                got = by_node.get(name)
                if got is None:
                    by_node[name] = [raw]
                else:
                    got.append(raw)
            else:
                name = ""
                unnamed.append(raw)
            key = _pool_name(raw)
            if pools.setdefault(key, name) != name:
                pools[key] = SEVERAL
        self.by_node: Layered[str, list[dict[str, Any]]] = Layered(by_node)
        self.unnamed = unnamed
        self.pools: Layered[str, str] = Layered(pools)
        """Pool name -> the one node whose slices hold it ("": slices without a node name), or
        ``SEVERAL``: what tells whether a slice event touches other nodes' pools (``Model._carry``)."""
        # Nodes named only by devices (per-device node selection) of slices without a node.
        self.device_nodes = {interned_str(d.get("nodeName")) for raw in unnamed
                             for d in as_list(as_dict(raw.get("spec")).get("devices")) if isinstance(d, dict)}
        self.device_nodes.discard("")

    def changed(self, raws: tuple[Any, ...], node: str, old: dict[str, Any] | None,
                new: dict[str, Any] | None) -> Index:
        """This index after one slice of ``node`` was replaced, added or removed (``raws``: the
        new tuple): only that node's list is rebuilt; the others are shared."""
        got = Index.__new__(Index)
        got.raws = raws
        got.unnamed, got.device_nodes = self.unnamed, self.device_nodes
        by_node = self.by_node.child()
        mine = [raw for raw in by_node.get(node, ()) if raw is not old]
        if new is not None:
            mine.append(new)
            mine.sort(key=_name)  # the snapshot's order: by name (cluster-scoped)
        if mine:
            by_node[node] = mine
        else:
            by_node.pop(node, None)
        got.by_node = by_node
        pools = self.pools.child()
        for key in {_pool_name(raw) for raw in (old, new) if raw is not None}:
            here = any(_pool_name(raw) == key for raw in mine)
            had = pools.get(key)
            if had is None or had == node:
                if here:
                    pools[key] = node
                else:
                    pools.pop(key, None)
            elif here:
                pools[key] = SEVERAL
        got.pools = pools
        return got

    def node_local(self, node: str, raws: tuple[dict[str, Any] | None, ...]) -> bool:
        """Whether the pools of these slices have slices on ``node`` alone (or none left)."""
        return all(self.pools.get(_pool_name(raw), node) == node for raw in raws if raw is not None)


def _name(raw: dict[str, Any]) -> str:
    return interned_str(as_dict(raw.get("metadata")).get("name"))


def _pool_name(raw: dict[str, Any]) -> str:
    return interned_str(as_dict(as_dict(raw.get("spec")).get("pool")).get("name"))


SEVERAL = "\0several"
"""``Index.pools``' value for a pool name with slices on several nodes, or without a node name
(pools of two drivers with one name count as one: that only keeps a model from taking over)."""


