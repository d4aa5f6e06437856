"""Differential 1: every manifest we have, in every gate profile, CREATE and UPDATE.

`dra-webhook review`'s pipeline and the real kube-apiserver (server-side dry run, no webhook)
must agree on the verdict, on the (field, reason) causes and on what gets stored (what the
apiserver drops for a disabled gate, we strip). UPDATEs start from the object upstream stored.
"""

from __future__ import annotations

import os

import pytest

from tests.differential.compare import Disagreement, compare
from tests.differential.manifests import manifest_cases, update_edits
from tests.differential.oracle import ApiOracle
from tests.differential.ours import our_verdict
from tests.differential.profiles import profiles

pytestmark = pytest.mark.differential

CASES = manifest_cases()
#: UPDATE pairs run in these profiles (every edit of every manifest in each).
UPDATE_PROFILES = ("all-on", "defaults", "no-DRAPartitionableDevices", "no-DRAConsumableCapacity")


def _report(found: list[Disagreement], total: int) -> str:
    """The first disagreements in full (all of them into $DIFF_REPORT when set)."""
    if path := os.environ.get("DIFF_REPORT"):
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n\n".join(str(d) for d in found) + "\n\n")
    shown = "\n\n".join(str(d) for d in found[:25])
    return f"{len(found)} disagreements with upstream in {total} comparisons:\n\n{shown}"


def test_enough_manifests():
    kinds = {o["kind"] for _, o in CASES}
    assert kinds >= {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "PodGroup", "Workload"}
    assert len(CASES) >= 300, len(CASES)


def test_create_agrees_with_the_apiserver(api_oracle: ApiOracle):
    profs = profiles()
    api_oracle.prepare(o for _, o in CASES)
    jobs = [(p, cid, o) for p in profs for cid, o in CASES]
    upstream = api_oracle.create_many([(p, o) for p, _, o in jobs])
    found, total = [], 0
    for (p, cid, o), up in zip(jobs, upstream, strict=True):
        if not up.served:
            continue
        total += 1
        if (d := compare(cid, p, o, our_verdict(o, profs[p]), up)) is not None:
            found.append(d)
    assert not found, _report(found, total)
    assert total >= len(CASES) * 5


def test_update_agrees_with_the_apiserver(api_oracle: ApiOracle):
    profs = profiles()
    api_oracle.prepare(o for _, o in CASES)
    jobs = [(p, f"{cid}+{eid}", o, edit) for p in UPDATE_PROFILES for cid, o in CASES for eid, edit in update_edits(o)]
    answers = api_oracle.update_many([(p, o, edit) for p, _, o, edit in jobs])
    found, total = [], 0
    for (p, cid, _, _), (first, new, up) in zip(jobs, answers, strict=True):
        if new is None or first.stored is None or not up.served:
            continue  # the old object is not valid in this profile: nothing to update
        total += 1
        ours = our_verdict(new, profs[p], old=first.stored)
        if (d := compare(cid, p, new, ours, up, old=first.stored)) is not None:
            found.append(d)
    assert not found, _report(found, total)
    assert total >= 500, total
