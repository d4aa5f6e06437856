"""Differential 2, claims family: generated ResourceClaims, ResourceClaimTemplates and DeviceClasses
against the real apiserver, CREATE and UPDATE (spec edits of stored objects, and claim status
through the `/status` subresource). Zero disagreements.

Objects come from `gen_claims.py` (fixed seeds; `DIFF_SCALE` multiplies the counts). CREATEs go
through `generated.judge` (each object in `all-on` and one other profile in turn). UPDATEs start
from objects we admit, stored for real by the apiserver, then edited as a user (`kubectl edit`)
or a controller would; pairs whose old object upstream refuses are skipped, since that CREATE is
judged on its own.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.differential import gen_claims
from tests.differential.compare import Disagreement, compare, compare_status
from tests.differential.conftest import scale
from tests.differential.generated import draw_many, judge, report
from tests.differential.oracle import ApiOracle
from tests.differential.ours import our_status_verdict, our_verdict
from tests.differential.profiles import profiles

pytestmark = pytest.mark.differential

CREATES = 2000
UPDATES = 400
STATUS_UPDATES = 200
Edit = Callable[[dict[str, Any]], dict[str, Any]]


def distinct(strategy: Any, n: int, salt: int, key: Callable[[Any], Any] = lambda o: o) -> list[Any]:
    """``n`` examples that differ in more than their name. Hypothesis repeats the degenerate
    shapes (no spec, empty lists) often, so it draws more and drops the repeats."""
    out, seen = [], set()
    for x in draw_many(strategy, 2 * n, salt):
        k = json.dumps(_nameless(key(x)), sort_keys=True)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out[:n]


def _nameless(obj: Any) -> Any:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "name"}}
    return obj


def _profile_names(i: int) -> str:
    names = list(profiles())
    return names[i % len(names)]


def creates(oracle: ApiOracle) -> tuple[list[Disagreement], int]:
    """CREATE of generated objects: (disagreements, comparisons)."""
    objects = distinct(gen_claims.objects(), CREATES * scale(), salt=1502)
    assert len(objects) >= CREATES * scale() * 0.95, len(objects)
    assert {o["kind"] for o in objects} == {"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
    found, total = judge(oracle, "claims", objects)
    assert total == 2 * len(objects)
    return found, total


def test_generated_claims_create(api_oracle: ApiOracle) -> None:
    found, total = creates(api_oracle)
    assert not found, report(found, total)


# -- UPDATE of the main resource -------------------------------------------------------------------

def _set_spec(spec: Any) -> Edit:
    def edit(stored: dict[str, Any]) -> dict[str, Any]:
        stored["spec"] = copy.deepcopy(spec)
        return stored
    return edit


def _label(stored: dict[str, Any]) -> dict[str, Any]:
    stored["metadata"].setdefault("labels", {})["example.com/edited"] = "yes"
    return stored


def _respell(stored: dict[str, Any]) -> dict[str, Any]:
    """The same spec said another way: defaults dropped, empty lists and nulls added."""
    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            out = {k: walk(val) for k, val in x.items() if k != "allocationMode" or val != "ExactCount"}
            if "selectors" not in out and "deviceClassName" in out:
                out["selectors"] = []
            if "count" in out and out["count"] == 1:
                del out["count"]
            return out
        if isinstance(x, list):
            return [walk(i) for i in x]
        return x
    stored["spec"] = walk(stored.get("spec"))
    return stored


def _status_in_main(stored: dict[str, Any]) -> dict[str, Any]:
    """A status sent to the main resource: the apiserver keeps the stored one."""
    stored["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    return stored


def _add_selector(stored: dict[str, Any]) -> dict[str, Any]:
    spec = stored.setdefault("spec", {})
    if isinstance(spec, dict):
        sels = spec.get("selectors") if isinstance(spec.get("selectors"), list) else []
        spec["selectors"] = [*sels, {"cel": {"expression": 'device.driver == "x"'}}]
    return stored


def _reverse_selectors(stored: dict[str, Any]) -> dict[str, Any]:
    spec = stored.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("selectors"), list):
        spec["selectors"] = spec["selectors"][::-1]
    return stored


def _edits_for(obj: dict[str, Any], replacements: list[Any], i: int) -> list[tuple[str, Edit]]:
    """(id, edit) pairs for one stored object; ``replacements`` are specs of the same kind."""
    new_spec = replacements[i % len(replacements)]
    out: list[tuple[str, Edit]] = [("label", _label), ("respell", _respell), ("spec", _set_spec(new_spec))]
    if obj["kind"] == "ResourceClaim":
        out.append(("status-in-main", _status_in_main))
    if obj["kind"] == "DeviceClass":
        out += [("add-selector", _add_selector), ("reverse-selectors", _reverse_selectors)]
    return out


def _admitted(objects: list[dict[str, Any]], gates: dict[str, bool]) -> list[dict[str, Any]]:
    return [o for o in objects if our_verdict(o, gates).allowed]


def updates(api_oracle: ApiOracle) -> tuple[list[Disagreement], int]:
    """UPDATE of the main resource for stored generated objects: (disagreements, comparisons)."""
    profs = profiles()
    n = UPDATES * scale()
    pool = distinct(gen_claims.objects(), 10 * n, salt=1503)  # a fifth to a tenth is admitted
    on = profs["all-on"]
    olds = _admitted(pool, on)[:n]
    assert len(olds) >= n * 0.8, f"only {len(olds)} admitted objects to update"
    by_kind: dict[str, list[Any]] = {}
    for o in pool:
        by_kind.setdefault(o["kind"], []).append(o.get("spec"))
    api_oracle.prepare(olds)
    jobs = [(_profile_names(i), f"claims-update#{i}+{eid}", o, edit)
            for i, o in enumerate(olds) for eid, edit in _edits_for(o, by_kind[o["kind"]], i)]
    answers = api_oracle.update_many([(p, o, edit) for p, _, o, edit in jobs])
    found, total = [], 0
    for (p, cid, _, _), (first, new, up) in zip(jobs, answers, strict=True):
        if new is None or first.stored is None or not up.served:
            continue
        total += 1
        ours = our_verdict(new, profs[p], old=first.stored)
        if (d := compare(cid, p, new, ours, up, old=first.stored)) is not None:
            found.append(d)
    assert total >= len(olds) * 2, total
    return found, total


def test_generated_claims_update(api_oracle: ApiOracle) -> None:
    found, total = updates(api_oracle)
    assert not found, report(found, total)


# -- UPDATE of /status -----------------------------------------------------------------------------

def status_updates(api_oracle: ApiOracle) -> tuple[list[Disagreement], int]:
    """UPDATE of `/status` for stored generated claims: (disagreements, comparisons)."""
    profs = profiles()
    n = STATUS_UPDATES * scale()
    triples = distinct(gen_claims.claim_with_statuses(), 2 * n, salt=1504, key=lambda t: list(t))
    triples = [t for t in triples if our_verdict(t[0], profs["all-on"]).allowed][:n]
    assert len(triples) >= n * 0.5, f"only {len(triples)} admitted claims to update"
    api_oracle.prepare(t[0] for t in triples)
    jobs = [(_profile_names(i), f"claims-status#{i}", t) for i, t in enumerate(triples)]
    answers = list(api_oracle._pool.map(
        lambda j: api_oracle.status_update(j[0], *j[2], name=f"status-{j[1].rsplit('#', 1)[1]}"), jobs))
    found, total = [], 0
    for (p, cid, _), (old, new, up) in zip(jobs, answers, strict=True):
        if new is None or old.stored is None or not up.served:
            continue
        total += 1
        ours = our_status_verdict(new, profs[p], old.stored)
        if (d := compare_status(cid, p, new, ours, up, old.stored)) is not None:
            found.append(d)
    assert total >= len(triples) * 0.5, total
    return found, total


def test_generated_claim_status_update(api_oracle: ApiOracle) -> None:
    found, total = status_updates(api_oracle)
    assert not found, report(found, total)
