"""B6: our allocator beside upstream's, on the same cluster and the same claims as B3.

The cluster of B3 (nodes × 8 GPUs × (1 whole + 7 partitions) on shared counters, two NICs each)
is written once as a JSON state directory; each B3 case is written as a claim file. Both tools
then run as the command a user runs, once per case and repetition, on the same files with the
same gates: `dra-webhook simulate -o json` and `dra-allocate` (upstream's structured allocator,
built from `upstream/`). Both print `"stats": {"allocateSeconds": ...}`: the allocation alone,
state loading excluded, so process start-up and JSON parsing do not count on either side. Each
run is a fresh process, so neither side has anything cached: this is the one-shot `simulate`
path, not the serving path (B3 measures that, with the model kept between requests).

The lean shape of issue 30 (500 nodes x 64 partitions of 8 GPUs, two attributes, one capacity
and one counter a device: ``gen.lean_cluster``) has its own four cases, feasible and infeasible.

The row's value is our median, the floor is upstream's median in the same run, the ratio ours
over theirs; issue 18's target is ours ≤ theirs on every case (docs/performance.md). Building
celpy's parser (~0.3 s, once per process; Go has its parser compiled in) is done before our
clock starts, as loading the state is.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import gen
from bench.common import Row, fmt_time

NAME = "B6"
ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".cache" / "upstream" / "bin" / "dra-allocate"
BUILD_TIMEOUT = 1800
RUN_TIMEOUT = 600
TARGET = 1.0


def cases() -> dict[str, list[dict[str, Any]]]:
    """B3's cases, as the objects of one `-f` file each."""
    return {
        "grouped-claim-2": [gen.grouped_claim()],
        "podgroup-4-claims": [gen.podgroup()],
        "infeasible-no-match": [gen.unmatchable_claim()],
        "infeasible-search": [gen.infeasible_claim()],
    }


def _build() -> str | None:
    """Build dra-allocate if `upstream/` changed; None when done, else why not."""
    try:
        done = subprocess.run([str(ROOT / "upstream" / "build.sh")], capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot build dra-allocate: {e}"
    if done.returncode != 0 or not BIN.exists():
        return f"cannot build dra-allocate: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    return None


def _run(cmd: list[str]) -> dict[str, Any]:
    """One run; its JSON result (exit 0 feasible, 1 infeasible)."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{Path(cmd[0]).name} exited {done.returncode}: {done.stderr[-500:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    if not isinstance(out.get("stats", {}).get("allocateSeconds"), (int, float)):
        raise RuntimeError(f"{Path(cmd[0]).name} printed no stats.allocateSeconds")
    return out


def _verdict(r: dict[str, Any]) -> str:
    if r["feasible"]:
        return f"feasible on {r['node']}"
    text = " ".join(r.get("reasons") or [])
    if "cut short" in text:
        return "infeasible (cut short by its step budget)"
    if "did not finish in time" in text:
        return "infeasible (stopped at its 60 s timeout)"
    return "infeasible"


def run(quick: bool) -> list[Row]:
    if (why := _build()) is not None:
        return [Row.na(NAME, "side by side with dra-allocate", why)]
    # Five one-shot runs a side: a median of three moved by ±15% between runs of the same code.
    nodes, reps = (10, 1) if quick else (500, 5)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="b6-") as tmp:
        shapes = [(gen.cluster(nodes), cases()),
                  (gen.lean_cluster(nodes), {case: [c] for case, c in gen.lean_claims().items()})]
        for i, (objs, claims) in enumerate(shapes):
            state = Path(tmp) / f"state-{i}"
            state.mkdir()
            (state / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
            for case, inputs in claims.items():
                rows.append(_case(Path(tmp), state, case, inputs, nodes, reps, gen.device_count(objs)))
    return rows


def _case(tmp: Path, state: Path, case: str, inputs: list[dict[str, Any]], nodes: int, reps: int,
          devices: int) -> Row:
    f = tmp / f"{case.replace(' ', '-')}.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": inputs}))
    common = ["--cluster-state", str(state), "-f", str(f), "--feature-gates", gen.GATES, "-o", "json"]
    ours_cmd = [sys.executable, "-m", "webhook", "simulate", *common]
    theirs_cmd = [str(BIN), *common]
    ours, theirs = [], []
    # Alternating, so load on the shared machine hits both alike. The search cases run into
    # upstream's limits (up to a minute): once is enough.
    for _ in range(1 if "search" in case or "too-many" in case else reps):
        ours.append(_run(ours_cmd))
        theirs.append(_run(theirs_cmd))
    o = statistics.median(r["stats"]["allocateSeconds"] for r in ours)
    t = statistics.median(r["stats"]["allocateSeconds"] for r in theirs)
    same = (ours[0]["feasible"], ours[0]["node"]) == (theirs[0]["feasible"], theirs[0]["node"])
    ratio = o / t if t > 0 else None
    return Row(NAME, f"{nodes} nodes: {case}", fmt_time(o), fmt_time(t), ratio,
               f"≤ {TARGET:g}× dra-allocate", None if ratio is None else ratio <= TARGET,
               f"ours {_verdict(ours[0])}, dra-allocate {_verdict(theirs[0])}"
               f"{'' if same else ' (verdicts differ!)'}; median of {len(ours)} one-shot runs each, "
               f"{devices} devices")
