"""Generated differential cases: hypothesis draws the objects, the oracle judges them in bulk.

Hypothesis generates (derandomized, a fixed seed per family, no shrinking: the oracle calls are
batched), then every object goes to the apiserver in two gate profiles (`all-on` and one of the
others, in turn) and to our pipeline, and every disagreement is reported with the object.
`DIFF_SCALE` (conftest) multiplies the count: 2,000 per family in `make test`, 50,000 in
`make differential`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.differential.compare import Disagreement, compare
from tests.differential.oracle import ApiOracle, Verdict
from tests.differential.ours import our_verdict
from tests.differential.profiles import profiles


def draw_many(strategy: st.SearchStrategy[Any], n: int, salt: int) -> list[Any]:
    """``n`` examples of ``strategy`` (fewer only if it cannot make that many), reproducibly."""
    out: list[Any] = []

    @seed(salt)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x: Any) -> None:
        out.append(x)

    collect()
    return out


def report(found: list[Disagreement], total: int) -> str:
    """The first disagreements in full (every one into $DIFF_REPORT when set)."""
    if path := os.environ.get("DIFF_REPORT"):
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n\n".join(str(d) for d in found) + "\n\n")
    shown = "\n\n".join(str(d) for d in found[:25])
    return f"{len(found)} disagreements with upstream in {total} comparisons:\n\n{shown}"


def judge(oracle: ApiOracle, family: str, objects: list[Any],
          profiles_of: Callable[[int], list[str]] | None = None) -> tuple[list[Disagreement], int]:
    """Compare every object in its profiles; (disagreements, comparisons made)."""
    profs = profiles()
    others = [p for p in profs if p != "all-on"]
    pick = profiles_of or (lambda i: ["all-on", others[i % len(others)]])
    oracle.prepare(o for o in objects if isinstance(o, dict))
    jobs = [(p, i, o) for i, o in enumerate(objects) for p in pick(i)]
    upstream: list[Verdict] = oracle.create_many([(p, o) for p, _, o in jobs])
    found, total = [], 0
    for (p, i, o), up in zip(jobs, upstream, strict=True):
        if not up.served:
            continue
        total += 1
        if (d := compare(f"{family}#{i}", p, o, our_verdict(o, profs[p]), up)) is not None:
            found.append(d)
    return found, total
