"""Every published manifest the corpus marks valid, in a version 1.37 can serve, is admitted end to end.

This runs the whole pipeline as `dra-webhook review` does (apiserver defaults, mutate, validate the
mutated object) with the entry's gates (plus GenericWorkload for scheduling kinds). A false
denial of a real manifest is the worst mistake a validating webhook can make.
"""

from __future__ import annotations

import json

import pytest

from tests.differential.manifests import CORPUS, SERVED
from webhook.admission.offline import build_review, with_defaults
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import FeatureGates


def _entries():
    if not CORPUS.exists():  # the corpus lives beside the repo (../shared); CI lays it out the same way
        pytest.fail(f"corpus not found at {CORPUS}")
    for e in json.loads(CORPUS.read_text()):
        obj = e["object"]
        if obj.get("apiVersion") in SERVED and e["intendedValid"] is True:
            yield pytest.param(e, id=e["id"])


def _gates(entry) -> FeatureGates:
    gates = dict(entry["gates"])
    if entry["object"]["apiVersion"].startswith("scheduling.k8s.io/"):
        gates["GenericWorkload"] = True
    return FeatureGates().with_overrides(gates)


@pytest.mark.parametrize("entry", list(_entries()))
def test_valid_published_manifest_is_admitted(entry):
    settings = Settings(gates=_gates(entry), feasibility=False)
    obj = with_defaults(entry["object"])
    resp, out = review(build_review(obj, None, "CREATE", False), settings, None, endpoint="review")
    r = resp["response"]
    assert r["allowed"], r.get("status", {}).get("message")
    assert out.handled or entry["object"]["kind"] == "DeviceClass"


def test_corpus_covers_every_served_kind():
    kinds = {p.values[0]["object"]["kind"] for p in _entries()}
    assert kinds >= {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "PodGroup", "Workload"}
