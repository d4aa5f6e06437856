"""Corpus regression: every published v1beta1 PodGroup/Workload meant to be valid is admitted.

Runs apply_defaults → mutate → validate with the entry's gates plus GenericWorkload. The
``intendedValid: null`` entries have a known defect; their outcome is pinned below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.context import RuleContext
from webhook.rules.scheduling import podgroup, workload

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "corpus.json"  # ../shared beside the repo
MODULES = {"PodGroup": podgroup, "Workload": workload}
SERVED = "scheduling.k8s.io/v1beta1"


def entries(intended: bool | None) -> list[Any]:
    if not CORPUS.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CORPUS} not present"), id="no-corpus")]
    out = []
    for e in json.loads(CORPUS.read_text()):
        obj = e["object"]
        if obj.get("kind") in MODULES and obj.get("apiVersion") == SERVED and e["intendedValid"] is intended:
            out.append(pytest.param(e, id=e["id"]))
    return out


def review(entry: dict[str, Any]) -> tuple[list[Any], list[str]]:
    obj = entry["object"]
    mod = MODULES[obj["kind"]]
    gates = FeatureGates.defaults().with_overrides({**entry["gates"], "GenericWorkload": True})
    ctx = RuleContext(gates)
    defaulted = mod.apply_defaults(obj)
    m = mod.mutate(defaulted, ctx)
    new = apply_patch(defaulted, m.ops)
    return mod.validate(new, ctx), m.warnings + mod.warnings(new, ctx)


@pytest.mark.parametrize("entry", entries(True))
def test_intended_valid_entries_are_admitted(entry: dict[str, Any]) -> None:
    errs, warns = review(entry)
    assert errs == []
    assert not any("GenericWorkload" in w for w in warns)


NULL_OUTCOMES = {
    # Uses the v1alpha2 spelling under v1beta1: mapped to spec.workloadRef with a warning.
    "kep4671-podgroup-v1beta1-template-ref": (set(), podgroup.SPELLING_WARNING),
    # No schedulingPolicy at all: denied, as the apiserver would.
    "kep5729-podgroup-v1beta1-claims-no-policy": ({("spec.schedulingPolicy", "FieldValueInvalid")}, None),
}


@pytest.mark.parametrize("entry", entries(None))
def test_null_entries_have_a_pinned_outcome(entry: dict[str, Any]) -> None:
    want_errs, want_warning = NULL_OUTCOMES[entry["id"]]
    errs, warns = review(entry)
    assert {(e.field, e.type.value) for e in errs} == want_errs
    if want_warning:
        assert want_warning in warns
