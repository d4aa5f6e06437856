"""Regression against real manifests: the corpus's ResourceSlices, the seed document's examples
and our own examples/resourceslices, run through mutate → apply → validate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from webhook.gates import FeatureGates
from webhook.rules.context import RuleContext
from webhook.rules.slices import resourceslice as rs

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "corpus.json"  # ../shared beside the repo

# intendedValid=null entries whose defect (per their notes) validation catches.
EXPECTED_DENIALS = {
    "kep4815-rs-counter-slice": {("spec", "FieldValueRequired")},
    "kep5963-rs-ex3-counters-no-node-selection": {("spec", "FieldValueRequired")},
    "k8s-sched-perf-rs-consumablecapacity-v1beta2-old--v1": {("spec", "FieldValueInvalid")},
    "kep4815-rs-multihost-perdevice": None,  # several causes; only "denied" is asserted
}


def _entries(valid: bool | None) -> list[Any]:
    if not CORPUS.exists():
        return []
    return [
        pytest.param(e, id=e["id"])
        for e in json.loads(CORPUS.read_text())
        if e["object"].get("kind") == "ResourceSlice"
        and e["object"].get("apiVersion") == "resource.k8s.io/v1"
        and e["intendedValid"] is valid
    ]


def admit(obj: dict[str, Any], gates: FeatureGates) -> tuple[list[Any], list[str], dict[str, Any]]:
    ctx = RuleContext(gates)
    m = rs.mutate(obj, ctx)
    patched = jsonpatch.apply_patch(obj, m.ops)
    return rs.validate(patched, ctx), m.warnings + rs.warnings(patched, ctx), patched


@pytest.mark.parametrize("entry", _entries(True))
def test_corpus_valid_entries_are_admitted(entry: dict[str, Any]) -> None:
    errs, _, _ = admit(entry["object"], FeatureGates.defaults().with_overrides(entry["gates"]))
    assert errs == []


@pytest.mark.parametrize("entry", _entries(None))
def test_corpus_defective_entries(entry: dict[str, Any]) -> None:
    errs, _, _ = admit(entry["object"], FeatureGates.defaults().with_overrides(entry["gates"]))
    print(entry["id"], [str(e) for e in errs])
    if entry["id"] in EXPECTED_DENIALS:
        assert errs, entry["notes"]
        expected = EXPECTED_DENIALS[entry["id"]]
        if expected is not None:
            assert {(e.field, e.type.value) for e in errs} == expected


def test_corpus_has_resourceslices() -> None:
    if not CORPUS.exists():
        pytest.skip("shared corpus not available")
    assert len(_entries(True)) >= 15


def _docs(pattern: str) -> list[Any]:
    out = []
    for path in sorted(ROOT.glob(pattern)):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if doc and doc.get("kind") == "ResourceSlice":
                out.append(pytest.param(doc, id=f"{path.stem}-{i}"))
    return out


SEED_DOCS = _docs("examples/seeds/seed-000-resourceslice-*.yaml")
EXAMPLE_DOCS = _docs("examples/resourceslices/*.yaml")


def test_seed_examples_present() -> None:
    assert len(SEED_DOCS) == 5  # two counter/device pairs and the eth1 slice


@pytest.mark.parametrize(
    "gates", ["", "DRADeviceCompatibilityGroups=true"], ids=["default-gates", "groups-on"]
)
@pytest.mark.parametrize("doc", SEED_DOCS + EXAMPLE_DOCS)
def test_examples_are_admitted(doc: dict[str, Any], gates: str) -> None:
    errs, warnings, patched = admit(doc, FeatureGates.parse(gates))
    assert errs == []
    has_groups = "compatibilityGroups" in json.dumps(doc)
    if gates:
        assert patched == doc and warnings == []
    elif has_groups:
        assert "compatibilityGroups" not in json.dumps(patched)
        assert len(warnings) == 1 and warnings[0].startswith("DRADeviceCompatibilityGroups is off: removed")


def test_seed_compatibility_group_warning_text() -> None:
    doc = [d.values[0] for d in SEED_DOCS if d.values[0]["metadata"]["name"] == "gpu-devices"][0]
    _, warnings, _ = admit(doc, FeatureGates.defaults())
    assert warnings == [
        "DRADeviceCompatibilityGroups is off: removed compatibilityGroups from 2 consumesCounters entries"
    ]
