"""Generated allocator scenarios: our `simulate` (joint mode, every node) against `dra-allocate`.

Each scenario (`gen_alloc.scenarios`) goes to upstream's structured allocator through one
`dra-allocate --batch -` process and to our `run_simulate` in process, the code `dra-webhook
simulate` runs. The verdict (feasible or not) must be the same in every scenario. Where upstream's
answer is determined by its search order, the node and every device (request, driver, pool,
device, admin access, consumed capacity by value) must be the same too:

- incubating and experimental (every profile but `stable`): nodes by name, pools sorted by driver
  and pool name (pools with binding conditions last), slices by name, devices in slice order, a
  depth-first search that keeps the first solution: the whole answer is determined (shareIDs are
  random and not compared).
- stable: pools come out of a Go map, in random order. The devices are determined only when the
  state holds a single pool, and the verdict too when nothing can fail fatally on the way (a
  selector erring at run time, `All` over an unusable pool): both depend on which devices the
  search reaches first.

`DIFF_SCALE` multiplies the count (2,000 in `make test`); `DIFF_REPORT=FILE` writes every
disagreement with the scenario as a `dra-allocate --batch` line, for reproducing it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from tests.differential.conftest import scale
from tests.differential.gen_alloc import Scenario, our_gates, scenarios
from tests.differential.generated import draw_many
from tests.differential.oracle import AllocOracle, OracleError
from webhook.cli.simulate import run_simulate
from webhook.gates import FeatureGates
from webhook.quantity import try_parse
from webhook.state.base import ClusterSnapshot

COUNT = 2000
SALT = 0xA110C


@dataclass
class AllocDisagreement:
    scenario: Scenario
    what: str
    ours: dict[str, Any]
    upstream: dict[str, Any]

    def __str__(self) -> str:
        def brief(r: dict[str, Any]) -> str:
            allocs = [(a["claim"], [(x["request"], x["pool"], x["device"], x.get("consumedCapacity"))
                                    for x in a["results"]]) for a in r.get("allocations") or []]
            return json.dumps({"feasible": r.get("feasible"), "node": r.get("node"), "allocations": allocs,
                               "reasons": (r.get("reasons") or [])[:4]})
        return (f"{self.scenario.id} [{self.scenario.profile}] {self.what}\n  ours:     {brief(self.ours)}\n"
                f"  upstream: {brief(self.upstream)}\n  scenario: {json.dumps(self.scenario.wire())}")


def ours(s: Scenario) -> dict[str, Any]:
    """Our simulate on the scenario, in process: joint mode, no --node, JSON output."""
    snap = ClusterSnapshot.from_objects(s.state, source=s.id)
    gates = FeatureGates().with_overrides(our_gates(s.profile))
    _, text = run_simulate(json.loads(json.dumps(s.objects)), snap, gates, None, output="json")
    out: dict[str, Any] = json.loads(text)
    return out


def _pools(s: Scenario) -> set[tuple[str, str]]:
    return {(o["spec"]["driver"], o["spec"]["pool"]["name"]) for o in s.state if o["kind"] == "ResourceSlice"}


def _results(r: dict[str, Any]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    out = []
    for a in r.get("allocations") or []:
        rows = []
        for x in a["results"]:
            consumed = {k: _value(v) for k, v in (x.get("consumedCapacity") or {}).items()}
            rows.append((x["request"], x["driver"], x["pool"], x["device"], bool(x.get("adminAccess")),
                         tuple(sorted(consumed.items()))))
        out.append((a["claim"], rows))
    return out


def _value(v: Any) -> Any:
    q = try_parse(v)
    return q.value if q is not None else v


#: Reasons of a fatal error (it ends the attempt on every node): where the search meets one first
#: depends on the order it walks the devices in.
FATAL = ("CEL runtime error", "asks for all devices", "claim constraint would not be satisfied")


def _fatal(r: dict[str, Any]) -> bool:
    return any(f in reason for reason in r.get("reasons") or [] for f in FATAL)


def compare(s: Scenario, mine: dict[str, Any], up: dict[str, Any]) -> AllocDisagreement | None:
    if up.get("error"):
        raise OracleError(f"dra-allocate refused scenario {s.id}: {up['error']}\n{json.dumps(s.wire())}")
    # stable walks the pools in Go map order (random): with several pools only answers that do not
    # depend on which device the search meets first are determined.
    random_order = s.profile == "stable" and len(_pools(s)) > 1
    if mine["feasible"] != up["feasible"]:
        if random_order and (_fatal(mine) or _fatal(up)):
            return None
        return AllocDisagreement(s, "verdict", mine, up)
    if not mine["feasible"] or random_order:
        return None
    if mine["node"] != up["node"]:
        return AllocDisagreement(s, "node", mine, up)
    if _results(mine) != _results(up):
        return AllocDisagreement(s, "devices", mine, up)
    return None


def test_generated_alloc(alloc_oracle: AllocOracle) -> None:
    n = COUNT * scale()
    t0 = time.perf_counter()
    drawn: list[Scenario] = draw_many(scenarios(), n, SALT)
    for i, s in enumerate(drawn):
        s.id = f"alloc#{i}"
    t1 = time.perf_counter()
    upstream = [alloc_oracle.allocate(s.wire()) for s in drawn]
    t2 = time.perf_counter()
    found = [d for s, up in zip(drawn, upstream, strict=True) if (d := compare(s, ours(s), up)) is not None]
    t3 = time.perf_counter()
    feasible = sum(1 for up in upstream if up["feasible"])
    summary = (f"{len(drawn)} scenarios ({feasible} feasible upstream): generate {t1 - t0:.1f} s, "
               f"dra-allocate {t2 - t1:.1f} s, ours {t3 - t2:.1f} s")
    if path := os.environ.get("DIFF_REPORT"):
        with open(path, "a", encoding="utf-8") as f:
            f.write(summary + "\n\n" + "\n\n".join(str(d) for d in found) + "\n\n")
    assert len(drawn) >= n * 0.95, f"the generator made only {len(drawn)} of {n} scenarios"
    by_kind: dict[str, int] = {}
    for d in found:
        by_kind[f"{d.what}/{d.scenario.profile}"] = by_kind.get(f"{d.what}/{d.scenario.profile}", 0) + 1
    shown = "\n\n".join(str(d) for d in found[:10])
    assert not found, (f"{len(found)} disagreements with upstream in {len(drawn)} scenarios {by_kind}; "
                       f"{summary}\n\n{shown}")
