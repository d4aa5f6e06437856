"""Pool gathering for one node (docs/allocator.md §2): relevance, generations, completeness, validity.

Pure. Input is the gate-filtered model (§2.1 steps 2-3 are applied once in ``Model``); output is
the sorted list of pools the search walks for that node.
"""

from __future__ import annotations

from fractions import Fraction

from webhook.allocator.devices import placed_on
from webhook.allocator.model import Device, Model, NodeInfo, Slice
from webhook.allocator.variant import STABLE
from webhook.gates import Gate


class Pool:
    """One gathered pool. ``incomplete``/``invalid`` pools carry no candidate devices."""

    __slots__ = ("driver", "name", "incomplete", "invalid", "invalid_reason", "targeting",
                 "not_targeting", "counter_sets", "has_binding", "candidates")

    def __init__(self, driver: str, name: str) -> None:
        self.driver = driver
        self.name = name
        self.incomplete = False
        self.invalid = False
        self.invalid_reason = ""
        self.targeting: list[Slice] = []
        self.not_targeting: list[Slice] = []
        self.counter_sets: dict[str, dict[str, int | Fraction]] = {}
        self.has_binding = False
        self.candidates: tuple[Device, ...] = ()

    def label(self) -> str:
        return f"{self.driver}/{self.name}"

    def all_devices(self) -> list[Device]:
        """Devices of every slice of the pool, targeting this node or not (counters, groups)."""
        return [d for sl in self.targeting + self.not_targeting for d in sl.devices]


def slice_relevant(sl: Slice, node: NodeInfo, stable: bool = False) -> bool:
    if stable and sl.has_counters:
        return True  # the stable allocator takes counter sets into every node's view
    placed = placed_on(sl, node)
    if placed is not None:
        return placed
    if sl.per_device:
        return any(d.matches_node(node) for d in sl.devices)
    # A slice that only holds counter sets (and no node selection) still belongs to its pool;
    # the whole-pool lookup below attaches it. Anything else uses an unknown mode: ignored.
    return False


def pools_for(model: Model, node: NodeInfo) -> list[Pool]:
    """The gathered pools for a node (§2), cached in the model per node name."""
    got: list[Pool] | None = model.pools_cache.get(node.name)
    if got is None:
        got = gather_pools(model, node)
        if len(model.pools_cache) < 4096:
            model.pools_cache[node.name] = got
    return got


def gather_pools(model: Model, node: NodeInfo) -> list[Pool]:
    """§2: the pools (sorted; binding-condition pools last) that can serve ``node``."""
    pd = model.gates.enabled(Gate.DRA_PARTITIONABLE_DEVICES)
    cg = model.gates.enabled(Gate.DRA_DEVICE_COMPATIBILITY_GROUPS)
    stable = model.variant == STABLE
    others = [sl for sl in model.slices if sl.has_counters and sl.node_name not in ("", node.name)] if stable else []
    kept: dict[tuple[str, str], list[Slice]] = {}
    for sl in [*model.node_slices(node.name), *model.unnamed_slices(), *others]:
        if not slice_relevant(sl, node, stable):
            continue
        key = sl.pool_key()
        cur = kept.get(key)
        if cur is None or sl.generation > cur[0].generation:
            kept[key] = [sl]
        elif sl.generation == cur[0].generation:
            cur.append(sl)
    pools: list[Pool] = []
    for (driver, name), slices in kept.items():
        pool = Pool(driver, name)
        gen = slices[0].generation
        want = slices[0].count
        if len(slices) != want:
            everything = model.pool_slices((driver, name))  # also the slices the gates hide
            if any(s.generation > gen for s in everything):
                continue  # obsolete: a newer generation exists elsewhere; not even incomplete
            same = [s for s in everything if s.generation == gen and (cg or not s.has_groups)]
            if len(same) != want:
                pool.incomplete = True
                pools.append(pool)
                continue
            ids = {id(s) for s in slices}
            pool.not_targeting = sorted((s for s in same if id(s) not in ids), key=lambda s: s.name)
        pool.targeting = sorted(slices, key=lambda s: s.name)
        _finish(pool, pd)
        pools.append(pool)
    pools.sort(key=lambda p: (p.has_binding, p.driver.encode(), p.name.encode()))
    return pools


def _finish(pool: Pool, pd: bool) -> None:
    """Counter sets, validity (§2.4) and the candidate list of a complete pool."""
    candidates: list[Device] = []
    names: set[str] = set()
    for sl in pool.targeting:
        for d in sl.devices:
            if d.name in names:
                pool.invalid, pool.invalid_reason = True, f"duplicate device name {d.name}"
            names.add(d.name)
            candidates.append(d)  # per-device node selection is checked after the selectors (F7)
    pool.has_binding = any(sl.has_binding for sl in pool.targeting)  # goes last: targeting slices only
    if pd:
        for sl in pool.targeting + pool.not_targeting:
            for cs in sl.counter_set_names:
                if cs in pool.counter_sets:
                    pool.invalid, pool.invalid_reason = True, f"duplicate counter set {cs}"
                pool.counter_sets[cs] = sl.counter_sets[cs]
        if not pool.invalid:
            for sl in pool.targeting + pool.not_targeting:
                for d in sl.devices:
                    for cs, counters, _ in d.consumes:
                        have = pool.counter_sets.get(cs)
                        if have is None:
                            pool.invalid = True
                            pool.invalid_reason = f"device {d.name} references unknown counter set {cs}"
                        else:
                            for c, _v in counters:
                                if c not in have:
                                    pool.invalid = True
                                    pool.invalid_reason = (f"device {d.name} references unknown counter "
                                                           f"{c} in counter set {cs}")
    pool.candidates = () if pool.invalid else tuple(candidates)
