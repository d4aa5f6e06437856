"""The raw ResourceSlices of one snapshot indexed by node and by pool, and the splices that update
what a model derived from its predecessor when one slice changed (``model.Model``). Pure."""

from __future__ import annotations

from typing import Any, TypeVar

from webhook.allocator.devices import interned_str
from webhook.raw import as_dict, as_list

T = TypeVar("T")


def without(d: dict[str, T], key: str) -> dict[str, T]:
    """A copy of ``d`` without ``key`` (a C-speed copy: ``d`` may hold every node)."""
    got = dict(d)
    got.pop(key, None)
    return got


def splice(items: tuple[T, ...] | None, i: int, old: T | None, new: T | None, size: int) -> tuple[T, ...] | None:
    """``items`` with ``old`` (at ``i``) replaced by ``new``, removed, or ``new`` inserted at
    ``i``; None (built again when asked) when ``items`` is None, does not have ``size`` items
    (``size`` -1: any), or ``old`` is not at ``i`` (``i`` -1: ``old`` is not in it)."""
    if items is None or (size >= 0 and len(items) != size):
        return None
    if i < 0:
        return items
    if old is not None:
        if i >= len(items) or items[i] is not old:
            return None
        return items[:i] + ((new,) if new is not None else ()) + items[i + 1:]
    return items[:i] + ((new,) if new is not None else ()) + items[i:]


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
        self.by_node = by_node
        self.unnamed = unnamed
        self.pools = pools
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
        by_node = dict(self.by_node)
        mine = [raw for raw in by_node.get(node, ()) if raw is not old]
        if new is not None:
            mine.append(new)
            mine.sort(key=_name)  # the snapshot's order: by name (cluster-scoped)
        if mine:
            by_node[node] = mine
        else:
            by_node.pop(node, None)
        got.by_node = by_node
        pools = dict(self.pools)
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


