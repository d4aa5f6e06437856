"""Timing, statistics and the results table shared by every benchmark.

Each benchmark returns ``Row`` objects. A row carries the figure of the case, the floor measured
in the same run, their ratio and the target; ``met`` is reported, never asserted.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timing:
    """Per-call wall times in seconds."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    @property
    def n(self) -> int:
        return len(self.samples)


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile (no interpolation: p99 of 100 samples is the largest but one)."""
    if not samples:
        return float("nan")
    s = sorted(samples)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def measure(fn: Callable[[], Any], *, iterations: int, max_seconds: float, warmup: int = 3) -> Timing:
    """Call ``fn`` up to ``iterations`` times (at least 5) or until ``max_seconds`` pass.

    The garbage collector runs between calls, not inside them, so no single sample pays for
    another's garbage; a serving process pays for it too, which the HTTP benchmark shows.
    """
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    gc.collect()
    enabled = gc.isenabled()
    end = time.perf_counter() + max_seconds
    try:
        gc.disable()
        while len(samples) < iterations and (len(samples) < 5 or time.perf_counter() < end):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
            if len(samples) % 50 == 0:
                gc.collect()
    finally:
        if enabled:
            gc.enable()
    return Timing(samples)


def interleaved(fns: dict[str, Callable[[], Any]], *, iterations: int, max_seconds: float,
                rounds: int = 5) -> dict[str, Timing]:
    """Measure several functions in alternating rounds so drift (other load on a shared machine)
    affects case and floor alike."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    per = max(1, iterations // rounds)
    for _ in range(rounds):
        for k, fn in fns.items():
            out[k] += measure(fn, iterations=per, max_seconds=max_seconds / rounds,
                              warmup=1).samples
    return {k: Timing(v) for k, v in out.items()}


def fmt_time(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "–"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@dataclass
class Row:
    bench: str
    case: str
    value: str = "–"
    """The case's figure (median, throughput...), with units."""
    floor: str = "–"
    """The floor's figure in the same units."""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    context: str = ""
    """Medians/p99/counts for context."""

    @classmethod
    def na(cls, bench: str, case: str, why: str) -> Row:
        return cls(bench, case, context=f"n/a: {why}")

    @classmethod
    def timed(cls, bench: str, case: str, t: Timing, floor: Timing, *, max_ratio: float | None,
              target: str | None = None, extra: str = "") -> Row:
        ratio = t.median / floor.median if floor.median > 0 else None
        met = None if (ratio is None or max_ratio is None) else ratio <= max_ratio
        ctx = (f"p50 {fmt_time(t.median)} p99 {fmt_time(t.p99)} (n={t.n}); "
               f"floor p50 {fmt_time(floor.median)} p99 {fmt_time(floor.p99)} (n={floor.n})")
        return cls(bench, case, fmt_time(t.median), fmt_time(floor.median), ratio,
                   target if target is not None else (f"≤ {max_ratio:g}×" if max_ratio else ""),
                   met, f"{ctx}; {extra}" if extra else ctx)


@dataclass
class Report:
    quick: bool
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def table(self, before: dict[tuple[str, str], tuple[str, str]] | None = None) -> str:
        """The markdown table; with ``before`` ((bench, case) -> (value, ratio) of an earlier run),
        a column puts the earlier figure beside each row of the same case."""
        cols = ["bench", "case", "value", "floor", "ratio", *(["before"] if before is not None else []),
                "target", "met", "context"]
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in self.rows:
            ratio = f"{r.ratio:.2f}×" if r.ratio is not None else "–"
            met = {True: "met", False: "NOT met", None: "–"}[r.met]
            cells = [r.bench, r.case, r.value, r.floor, ratio]
            if before is not None:
                old = before.get((r.bench, r.case))
                cells.append(f"{old[0]} ({old[1]})" if old and old[1] != "–" else old[0] if old else "–")
            cells += [r.target, met, r.context.replace("|", "/")]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def read_table(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(bench, case) -> (value, ratio) of the rows of a results table written by ``Report.table``."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    head: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None or cells[:2] == ["bench", "case"]:
            head = cells
            continue
        row = dict(zip(head, cells, strict=False))
        if "bench" in row and "case" in row:
            out[(row["bench"], row["case"])] = (row.get("value", "–"), row.get("ratio", "–"))
    return out


def machine() -> dict[str, str]:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        cores = str(len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        cores = str(os.cpu_count())
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        load = "?"
    return {"cpu": cpu, "cores (nproc)": cores, "python": sys.version.split()[0],
            "implementation": platform.python_implementation(), "os": platform.platform(),
            "load average at start": load}


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size from /proc (Linux); 0 when unavailable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
