"""B9: a driver's whole publish in one `review`: 10,000 ResourceSlices (issue 27's bad input).

Cases (``--quick``: 200 slices, same code paths):
(1) 10,000 slices in 2,500 pools of 4, reviewed as one set in process (decode, defaults, the
    pipeline per slice, then the pool lint over the set): against the floor of the pipeline per
    slice alone, so the ratio is what judging pools as a whole adds;
(2) the pool lint alone on one pool of 10,000 slices with a wrong count and every device name
    defined twice (the worst case for attaching findings to slices) against the same pool shape
    with a quarter of the slices: the lint is linear in slices and findings;
(3) tracemalloc peak of (1) against the size of its input as JSON;
(4) `dra-webhook review -f DIR --strict -o json` end to end as a user runs it (files read,
    10,000 AdmissionReviews printed): wall time and the child's peak RSS.
"""

from __future__ import annotations

import copy
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.common import Row, fmt_bytes, fmt_time, interleaved

NAME = "B9"
SLICES_PER_POOL = 4
DEVICES_PER_SLICE = 4


def slices(n: int, *, one_pool: bool = False) -> list[dict[str, Any]]:
    """``n`` valid slices: pools of ``SLICES_PER_POOL`` (or one pool of all of them, its count
    wrong and every device name in two slices)."""
    out = []
    for i in range(n):
        pool = "everything" if one_pool else f"node-{i // SLICES_PER_POOL:05d}"
        first = 0 if one_pool else (i % SLICES_PER_POOL) * DEVICES_PER_SLICE
        names = [f"gpu-{(i // 2) * DEVICES_PER_SLICE + d}" if one_pool else f"gpu-{first + d}"
                 for d in range(DEVICES_PER_SLICE)]
        out.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{pool}-{i:05d}"},
            "spec": {"driver": "gpu.example.com", "nodeName": f"{pool}",
                     "pool": {"name": pool, "generation": 1,
                              "resourceSliceCount": n + 1 if one_pool else SLICES_PER_POOL},
                     "devices": [{"name": name, "attributes": {
                         "resource.kubernetes.io/pciBusID": {"string": f"0000:{d:02x}:00.0"},
                         "resource.kubernetes.io/numaNode": {"int": d % 2},
                         "model": {"string": "Example GPU"}},
                         "capacity": {"memory": {"value": "80Gi"}}} for d, name in enumerate(names)]}})
    return out


def _settings() -> Any:
    from webhook.config import Settings
    return Settings(feasibility=False, max_warning_length=sys.maxsize)


def review_set(objs: list[dict[str, Any]]) -> list[Any]:
    """What `review` does with the objects of its files (one set)."""
    from webhook.admission.offline import review_objects
    return review_objects([copy.copy(o) for o in objs], None, "CREATE", False, _settings(), None)


def pipeline_each(objs: list[dict[str, Any]]) -> list[Any]:
    """The floor: decode, defaults and the pipeline per slice, no pool lint, no response."""
    from webhook.admission import decode
    from webhook.admission.envelope import parse_review
    from webhook.admission.offline import build_review, with_defaults
    from webhook.admission.pipeline import evaluate
    settings = _settings()
    return [evaluate(parse_review(build_review(with_defaults(decode.decode(o).obj), None, "CREATE", False)),
                     settings, None, endpoint="review") for o in objs]


def lint(objs: list[dict[str, Any]]) -> list[Any]:
    from webhook.admission.pipeline import pool_findings
    from webhook.gates import FeatureGates
    return pool_findings(objs, (), FeatureGates(), complete=True)


def run(quick: bool) -> list[Row]:
    n = 200 if quick else 10_000
    rows: list[Row] = []
    many, one = slices(n), slices(n, one_pool=True)
    found = lint(one)
    assert sum(map(len, found)) >= n and not any(lint(many)), "the bench's pools are not what it says"
    reps = 3
    # Case and floor alternate, so the load of a shared machine weighs on both alike.
    t = interleaved({"full": lambda: review_set(many), "floor": lambda: pipeline_each(many)},
                    iterations=reps, max_seconds=0, rounds=reps)
    full, floor = t["full"], t["floor"]
    rows.append(Row.timed(NAME, f"{n} slices in {n // SLICES_PER_POOL} pools: review as one set", full, floor,
                          max_ratio=1.25, target="≤ 1.25× the pipeline per slice",
                          extra=f"{fmt_time(full.median / n)} per slice; floor: decode, defaults, pipeline "
                                f"per slice without the pool lint"))
    quarter = slices(n // 4, one_pool=True)
    t = interleaved({"big": lambda: lint(one), "small": lambda: lint(quarter)}, iterations=reps, max_seconds=0,
                    rounds=reps)
    rows.append(Row.timed(NAME, f"pool lint: one pool of {n} slices, every device twice", t["big"], t["small"],
                          max_ratio=5.0, target="≤ 5× a quarter of it (linear: 4×)",
                          extra=f"{sum(map(len, found))} findings attached; floor: the same pool shape with "
                                f"{n // 4} slices"))
    size = len(json.dumps(many).encode())
    tracemalloc.start()
    review_set(many)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(Row(NAME, f"{n} slices: review peak memory (tracemalloc)", fmt_bytes(peak), fmt_bytes(size),
                    peak / size, "≤ 20× its JSON", peak / size <= 20,
                    "floor = the slices as compact JSON; the review keeps every object, its defaulted copy, "
                    "its outcome and its AdmissionReview until it prints them"))
    rows.append(_end_to_end(many))
    return rows


def _end_to_end(objs: list[dict[str, Any]]) -> Row:
    case = f"`review -f DIR --strict -o json`, {len(objs)} slices, end to end"
    with tempfile.TemporaryDirectory(prefix="dra-bench-publish-") as tmp:
        d = Path(tmp)
        for i in range(0, len(objs), 100):  # a driver's files: 100 slices each
            (d / f"slices-{i // 100:03d}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                                       "items": objs[i:i + 100]}))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "webhook", "review", "-f", str(d), "--strict", "-o", "json",
                               "--no-feasibility"], capture_output=True, text=True, timeout=1800)
        took = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if done.returncode != 0:
        return Row.na(NAME, case, f"exit {done.returncode}: {done.stderr.strip()[-120:]}")
    answered = len(json.loads(done.stdout)["items"])
    note = "" if rss > before * 1024 else " (an earlier child's peak was higher: the figure is that one)"
    return Row(NAME, case, fmt_time(took), "–", None, "(context)", None,
               f"exit 0, {answered} AdmissionReviews printed; peak RSS of the process {fmt_bytes(rss)}{note}; "
               f"{fmt_time(took / len(objs))} per slice")

