"""Differential: resource.k8s.io v1beta1 and v1beta2, against the real 1.37 apiserver serving both.

Every object is sent in its own version (server-side dry run): the verdict and the (field,
reason) causes must be ours, with the paths the apiserver uses for that version. An object both
sides admit is then stored for real, read back at v1 and compared with the v1 object we judged:
that is the conversion, the version's defaults and the gate strips at once. UPDATEs store an
object in its version, edit it there (for real) and read it back at v1.

Objects: every manifest we have in those versions (the corpus has some), every v1 manifest and
generated slices and claims, each shown in v1beta1 (with v1beta1-only edits for half of the
generated ones: ``gen_versions``) and in v1beta2.
``versions_rows`` (one object per place the versions differ) must be the apiserver's answers.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from tests.differential import gen_claims
from tests.differential.compare import Disagreement, compare
from tests.differential.conftest import scale
from tests.differential.gen_slices import resource_slices
from tests.differential.gen_versions import as_v1beta1, as_v1beta2, older_versions
from tests.differential.generated import draw_many, report
from tests.differential.manifests import PREFERRED, SERVED, _label, _rename, _spec_edit, manifest_cases
from tests.differential.oracle import ApiOracle, Verdict
from tests.differential.ours import our_verdict
from tests.differential.profiles import profiles
from tests.differential.versions_rows import ROWS
from webhook.rules.registry import rules_for
from webhook.versions import v1beta1

pytestmark = pytest.mark.differential

#: Generated v1 objects per family (each gives a v1beta1 object, and every other one a v1beta2 one).
SLICES = 300
CLAIMS = 300
UPDATES = 80
V1 = "resource.k8s.io/v1"
GROUP = "resource.k8s.io/"


@functools.cache
def manifests() -> list[tuple[str, dict[str, Any]]]:
    """Every manifest we have in v1beta1 or v1beta2, and every v1 manifest of a resource.k8s.io
    kind shown in each of those versions its kind has (DeviceTaintRule: v1beta2 only)."""
    out = manifest_cases(SERVED - PREFERRED)
    for cid, o in manifest_cases():
        if o.get("apiVersion") == V1 and (rules := rules_for("resource.k8s.io", str(o.get("kind")))) is not None:
            out += [(f"{cid}@{v}", show(o)) for v, show in (("v1beta1", as_v1beta1), ("v1beta2", as_v1beta2))
                    if rules.serves(v)]
    return out


@functools.cache
def generated(n_slices: int, n_claims: int) -> list[dict[str, Any]]:
    rnd = random.Random(3_0027)
    base = draw_many(resource_slices(), n_slices, 3_0028) + draw_many(gen_claims.objects(), n_claims, 3_0029)
    return list(older_versions(rnd, [o for o in base if isinstance(o.get("spec", {}), dict)]))


def _picker() -> Callable[[int], list[str]]:
    others = [p for p in profiles() if p != "all-on"]
    return lambda i: ["all-on", others[i % len(others)]]


@pytest.fixture(scope="module")
def oracle(api_oracle: ApiOracle) -> ApiOracle:
    """The oracle, prepared once for every object of this module (namespaces in every profile:
    one kubectl apply per apiserver, seconds each)."""
    api_oracle.prepare([*(o for _, o in manifests()), *generated(SLICES * scale(), CLAIMS * scale()),
                        *(r.obj for r in ROWS)])
    return api_oracle


def judge(oracle: ApiOracle, cases: list[tuple[str, dict[str, Any]]]) -> tuple[list[Disagreement], int, int]:
    """Verdicts of every case in two profiles, then the read-back of what both admit:
    (disagreements, comparisons, objects read back at v1)."""
    profs = profiles()
    pick = _picker()
    jobs = [(p, cid, o) for i, (cid, o) in enumerate(cases) for p in pick(i)]
    upstream = oracle.create_many([(p, o) for p, _, o in jobs])
    ours = [our_verdict(o, profs[p]) for p, _, o in jobs]
    both = [k for k, (up, me) in enumerate(zip(upstream, ours, strict=True)) if up.allowed and me.allowed]
    read = oracle.stored_as_many([(jobs[k][0], jobs[k][2], f"conv-{k}") for k in both], V1)
    for k, back in zip(both, read, strict=True):
        upstream[k] = back if back.allowed else Verdict(False, code=back.code, message="stored for real: refused: "
                                                        + back.message)
    found, total = [], 0
    for (p, cid, o), up, me in zip(jobs, upstream, ours, strict=True):
        if not up.served:
            continue
        total += 1
        if (d := compare(cid, p, o, me, up)) is not None:
            found.append(d)
    return found, total, len(both)


def test_manifests_in_older_versions_agree_with_the_apiserver(oracle: ApiOracle) -> None:
    cases = manifests()
    assert len(cases) >= 400, len(cases)
    found, total, read_back = judge(oracle, cases)
    assert not found, report(found, total)
    assert total == 2 * len(cases)
    assert read_back >= len(cases), read_back  # most manifests are valid: most are read back, twice


def test_generated_objects_in_older_versions_agree_with_the_apiserver(oracle: ApiOracle) -> None:
    objects = generated(SLICES * scale(), CLAIMS * scale())
    cases = [(f"versions#{i}:{o['apiVersion'].rpartition('/')[2]}", o) for i, o in enumerate(objects)]
    found, total, read_back = judge(oracle, cases)
    assert not found, report(found, total)
    assert total == 2 * len(cases) and read_back >= len(cases) // 10, (total, read_back)


def test_rows_are_the_apiservers_answers(oracle: ApiOracle) -> None:
    """``versions_rows``: the recorded causes are upstream's (``tests/test_versions.py`` checks
    ours against them without Go)."""
    answers = oracle.create_many([("all-on", r.obj) for r in ROWS])
    wrong = [f"{r.id}: recorded {sorted(r.causes)}, upstream {sorted(up.causes)} (code {up.code})"
             for r, up in zip(ROWS, answers, strict=True) if up.causes != r.causes or up.allowed != (not r.causes)]
    assert not wrong, "\n".join(wrong)


# -- UPDATE ----------------------------------------------------------------------------------------

Obj = dict[str, Any]


def _in_version(edit_v1: Callable[[Obj], Obj | None]) -> Callable[[Obj], Obj]:
    """A v1 spec edit made to an object in an older version: through v1 and back, as a client
    that knows only v1 would (``kubectl edit`` of the v1 view, applied at the old version)."""
    def edit(stored: dict[str, Any]) -> dict[str, Any]:
        version = stored["apiVersion"]
        v1 = v1beta1.to_v1(stored) if version.endswith("/v1beta1") else {**stored, "apiVersion": V1}
        changed = edit_v1(v1) or v1
        return v1beta1.from_v1(changed) if version.endswith("/v1beta1") else {**changed, "apiVersion": version}
    return edit


def test_updates_in_older_versions_agree_with_the_apiserver(oracle: ApiOracle) -> None:
    profs = profiles()
    olds = [o for _, o in manifests() if our_verdict(o, profs["all-on"]).allowed][:UPDATES * scale()]
    assert len(olds) >= UPDATES, len(olds)
    edits: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = [
        ("label", _label), ("rename", _rename), ("spec", _in_version(_spec_edit))]
    others = [p for p in profs if p != "all-on"]
    jobs = [(others[i % len(others)] if i % 2 else "all-on", f"{o['apiVersion']}#{i}+{eid}", o, edit)
            for i, o in enumerate(olds) for eid, edit in edits]
    answers = oracle.update_many([(p, o, edit) for p, _, o, edit in jobs], read_as=V1)
    found, total = [], 0
    for (p, cid, _, _), (first, new, up) in zip(jobs, answers, strict=True):
        if new is None or first.stored is None or not up.served:
            continue
        total += 1
        ours = our_verdict(new, profs[p], old=first.stored)
        if (d := compare(cid, p, new, ours, up, old=first.stored)) is not None:
            found.append(d)
    assert not found, report(found, total)
    assert total >= 2 * len(olds), total


def test_the_generator_makes_both_versions_and_v1beta1_quirks() -> None:
    objects = generated(60, 60)
    versions = {o["apiVersion"] for o in objects}
    assert versions == {GROUP + "v1beta1", GROUP + "v1beta2"}
    dumped = [json.dumps(o) for o in objects if o["apiVersion"].endswith("/v1beta1")]
    assert any('"basic": null' in d for d in dumped) and any('"nodeName": ""' in d for d in dumped)
    assert any(o["kind"] == "ResourceSlice" for o in objects) and any(o["kind"] == "ResourceClaim" for o in objects)
