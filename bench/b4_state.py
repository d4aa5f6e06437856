"""B4: one watch event applied to a 500-node state, against rebuilding the state from scratch.

Incremental: ``SnapshotStore.apply_event`` (MODIFIED of one ResourceSlice: a driver republishing
its devices) producing the next ``ClusterSnapshot``. Rebuild: a fresh store filled by ``replace``
per kind (what a relist does), and ``ClusterSnapshot.from_objects`` for context. One more row
shows what a consumer pays next: the allocator model of the new snapshot with every slice
converted, against the same after a relist (new dicts: nothing converted before is reused).
"""

from __future__ import annotations

import copy
import time
from collections import defaultdict
from typing import Any

from bench import gen
from bench.common import Row, fmt_time, measure

NAME = "B4"
TARGET = 10.0


def run(quick: bool) -> list[Row]:
    try:
        from webhook.state.base import ClusterSnapshot
        from webhook.state.live import SnapshotStore
    except ImportError as e:
        return [Row.na(NAME, "state", f"{e.name} missing")]
    nodes = 20 if quick else 500
    iterations, seconds = (20, 0.5) if quick else (200, 4.0)
    objs = gen.cluster(nodes)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in objs:
        by_kind[o["kind"]].append(o)

    def rebuild() -> Any:
        store = SnapshotStore()
        for i, (kind, items) in enumerate(by_kind.items()):
            store.replace(kind, items, str(i + 1))
        return store.snapshot()

    store = SnapshotStore()
    for i, (kind, items) in enumerate(by_kind.items()):
        store.replace(kind, items, str(i + 1))
    target = next(o for o in objs if o["kind"] == "ResourceSlice" and "devices" in o["spec"])
    variants = []
    for gen_no in (2, 3):
        v = copy.deepcopy(target)
        v["spec"]["pool"]["generation"] = gen_no
        v["metadata"]["resourceVersion"] = str(1000 + gen_no)
        variants.append({"type": "MODIFIED", "object": v})
    counter = [0]

    def incremental() -> Any:
        counter[0] += 1
        return store.apply_event("ResourceSlice", variants[counter[0] % 2])

    inc = measure(incremental, iterations=iterations * 5, max_seconds=seconds)
    reb = measure(rebuild, iterations=iterations // 10 + 3, max_seconds=seconds)
    frm = measure(lambda: ClusterSnapshot.from_objects(objs), iterations=iterations // 10 + 3,
                  max_seconds=seconds)
    speedup = reb.median / inc.median if inc.median > 0 else None
    rows = [Row(NAME, f"{nodes} nodes: apply 1 event → next snapshot", fmt_time(inc.median),
                fmt_time(reb.median), speedup, f"≥ {TARGET:g}× faster than rebuild",
                None if speedup is None else speedup >= TARGET,
                f"ratio = rebuild / incremental; event p99 {fmt_time(inc.p99)} (n={inc.n}); rebuild p99 "
                f"{fmt_time(reb.p99)} (n={reb.n}); from_objects p50 {fmt_time(frm.median)}; {len(objs)} objects")]
    try:
        from webhook.allocator import model as model_mod
        from webhook.allocator.model import model_for
        from webhook.gates import FeatureGates
    except ImportError as e:
        rows.append(Row.na(NAME, f"{nodes} nodes: allocator model after 1 event", f"{e.name} missing"))
        return rows
    gates = FeatureGates.parse(gen.GATES)
    _ = model_for(store.snapshot(), gates).slices

    def model_after_event() -> Any:
        return model_for(incremental(), gates).slices  # every slice converted: a whole-cluster question

    def model_rebuilt() -> Any:
        # A relist delivers new dicts: nothing converted before can be reused.
        for name in ("_SLICES", "_NODES", "_LAST"):
            getattr(model_mod, name, {}).clear()
        return model_for(rebuild(), gates).slices
    m = measure(model_after_event, iterations=iterations, max_seconds=seconds, warmup=1)
    full = measure(model_rebuilt, iterations=3, max_seconds=seconds, warmup=0)
    ratio = full.median / m.median if m.median > 0 else None
    rows.append(Row(NAME, f"{nodes} nodes: 1 event → snapshot + allocator model", fmt_time(m.median),
                    fmt_time(full.median), ratio, f"≥ {TARGET:g}× faster than rebuild",
                    None if ratio is None else ratio >= TARGET,
                    f"ratio = rebuild / incremental, both up to every slice converted; rebuild = relist + "
                    f"model from new dicts (n={full.n}); event p99 {fmt_time(m.p99)} (n={m.n})"))
    return rows + scale_rows(quick)


SCALE_SHAPES = (("8 devices a node", 1, 500, 5_000), ("64 devices a node", 8, 500, 2_000))
"""(label, GPUs a node, smaller and larger node count) of issue 30's scale rows: one GPU (8 GPU
devices and 2 NICs a node) at 500 and 5,000 nodes; B3's 8 GPUs (66 devices) at 500 and 2,000."""
SLOPE_TARGET, EVENT_TARGET = 1.1, 2.0


def _loaded(nodes: int, gpus: int) -> tuple[Any, list[dict[str, Any]]]:
    """A store filled as a reflector fills it (each LIST page prepared, then replaced), and the
    generated objects (with resourceVersions, as listed)."""
    from webhook.state.live import SnapshotStore
    objs = gen.cluster(nodes, gpus=gpus)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i, o in enumerate(objs):
        o["metadata"]["resourceVersion"] = str(i + 1)
        by_kind[o["kind"]].append(o)
    store = SnapshotStore()
    for i, (kind, items) in enumerate(by_kind.items()):
        if hasattr(store, "prepare"):
            store.replace(kind, store.prepare(kind, items), str(i + 1), prepared=True)
        else:  # a tree before pages were prepared (a before/after run)
            store.replace(kind, items, str(i + 1))
    return store, objs


def _scale_point(nodes: int, gpus: int, seconds: float) -> dict[str, float]:
    """Cold model build (every slice converted, caches emptied) and the costs of one watch event
    (a slice republished): to the next snapshot, to its model with every slice converted, and
    to the first feasibility check of a grouped claim after it (node classes of the new model)."""
    import gc

    from webhook.allocator import feasibility_warnings, warm
    from webhook.allocator import model as model_mod
    from webhook.allocator.model import model_for
    from webhook.gates import FeatureGates
    gates = FeatureGates.parse(gen.GATES)
    store, objs = _loaded(nodes, gpus)
    for name in ("_SLICES", "_NODES", "_LAST"):
        getattr(model_mod, name).clear()
    gc.collect()
    t0 = time.perf_counter()
    model = model_for(store.snapshot(), gates)
    for sl in model.slices:
        _ = sl.devices
    build = time.perf_counter() - t0
    warm(store.snapshot(), gates)
    target = next(o for o in objs if o["kind"] == "ResourceSlice" and "devices" in o["spec"])
    variants = []
    for gen_no in (2, 3):
        v = copy.deepcopy(target)
        v["spec"]["pool"]["generation"] = gen_no
        v["metadata"]["resourceVersion"] = str(10**8 + gen_no)
        variants.append({"type": "MODIFIED", "object": v})
    counter = [0]

    def event() -> Any:
        counter[0] += 1
        return store.apply_event("ResourceSlice", variants[counter[0] % 2])
    claim = gen.grouped_claim()
    calls = {"event": event, "model": lambda: model_for(event(), gates).slices,
             "check": lambda: feasibility_warnings(claim, event(), gates, deadline=time.monotonic() + 30,
                                                   max_steps=200_000)}
    out = {"build": build}
    for k, fn in calls.items():
        out[k] = measure(fn, iterations=40, max_seconds=seconds, warmup=2).median
    return out


def scale_rows(quick: bool) -> list[Row]:
    """Issue 30 target 4: the model build grows linearly (slope ≤ 1.1 between the two sizes) and
    one watch event at the larger size costs at most twice what it costs at the smaller (full
    mode only: the sizes take a minute to build)."""
    import math
    if quick:
        return []
    rows = []
    for label, gpus, small, large in SCALE_SHAPES:
        a, b = _scale_point(small, gpus, 4.0), _scale_point(large, gpus, 4.0)
        k = math.log(b["build"] / a["build"]) / math.log(large / small)
        rows.append(Row(NAME, f"{label}: model build {small}→{large} nodes (cold, every slice converted)",
                        f"k = {k:.2f}", "k = 1 (linear)", None, f"≤ linear (k ≤ {SLOPE_TARGET:g})", k <= SLOPE_TARGET,
                        f"{small}: {fmt_time(a['build'])}, {large}: {fmt_time(b['build'])}"))
        for key, what in (("event", "1 event → next snapshot"), ("model", "1 event → snapshot + model"),
                          ("check", "1 event → snapshot + model + first claim check")):
            r = b[key] / a[key]
            rows.append(Row(NAME, f"{label}: {what}, {large} vs {small} nodes", fmt_time(b[key]), fmt_time(a[key]),
                            r, f"≤ {EVENT_TARGET:g}× at {small}", r <= EVENT_TARGET,
                            f"floor: the same at {small} nodes (median of up to 40)"))
    return rows
