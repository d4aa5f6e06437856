"""Corpus regression: every published resource.k8s.io/v1 claim, template and class meant to be
valid is admitted (apply_defaults → mutate → validate with the entry's gates).

The ``intendedValid: null`` entries have a known defect (see their notes); what happens to each
is pinned in NULL_OUTCOMES so a change in behaviour shows up as a test failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.gates import FeatureGates
from webhook.patch import apply_patch
from webhook.rules.claims import deviceclass, resourceclaim, resourceclaimtemplate
from webhook.rules.context import RuleContext

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "corpus.json"  # ../shared beside the repo
MODULES = {
    "ResourceClaim": resourceclaim,
    "ResourceClaimTemplate": resourceclaimtemplate,
    "DeviceClass": deviceclass,
}
SERVED = "resource.k8s.io/v1"


def entries(intended: bool | None) -> list[Any]:
    if not CORPUS.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CORPUS} not present"), id="no-corpus")]
    return [
        pytest.param(e, id=e["id"])
        for e in json.loads(CORPUS.read_text())
        if e["object"].get("kind") in MODULES
        and e["object"].get("apiVersion") == SERVED
        and e["intendedValid"] is intended
    ]


def admit(entry: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(field errors rendered, warnings) for one corpus object as the CLI would judge it."""
    mod = MODULES[entry["object"]["kind"]]
    gates = FeatureGates.defaults().with_overrides(
        {k: v for k, v in entry["gates"].items() if k not in ("DRAPrioritizedList", "DRAAdminAccess")}
    )
    ctx = RuleContext(gates)
    obj = mod.apply_defaults(entry["object"])
    m = mod.mutate(obj, ctx)
    obj = apply_patch(obj, m.ops)
    return [str(e) for e in mod.validate(obj, ctx)], m.warnings + mod.warnings(obj, ctx)


@pytest.mark.parametrize("entry", entries(True))
def test_published_valid_object_is_admitted(entry: dict[str, Any]) -> None:
    errors, _ = admit(entry)
    assert errors == []


# id -> expected field paths of the denial (empty = admitted anyway, with the reason as comment)
NULL_OUTCOMES: dict[str, set[str]] = {
    # `expression:` indented beside `cel:` → selectors[0].cel is null → Required (as upstream).
    "intel-doc-gpu-rct-misindented-selector": {"spec.spec.devices.requests[0].exactly.selectors[0].cel"},
    "website-example-rc-misindented-selector": {"spec.devices.requests[0].exactly.selectors[0].cel"},
    # deviceClassName at request level (v1beta1 position): `exactly` lacks it → Required.
    "intel-doc-gaudi-rc-misplaced-deviceclassname": {"spec.devices.requests[0].exactly.deviceClassName"},
    # v1beta1 request shape under v1: neither exactly nor firstAvailable → Required.
    "kep5963-rc-pod-a-v1beta1-shape": {"spec.devices.requests[0]"},
    # Unqualified derived-attribute name in matchAttribute: not fully qualified → Invalid (twice).
    "kep6080-rc-derived-attributes": {"spec.devices.constraints[0].matchAttribute"},
    # Template shape (spec.spec) in a claim: the apiserver drops the unknown field and an empty
    # claim is valid, so it is admitted; our warnings() says spec.spec is not a claim field.
    "kep4815-rc-mig-devices-wrong-shape": set(),
}


@pytest.mark.parametrize("entry", entries(None))
def test_defective_object_outcome_is_pinned(entry: dict[str, Any]) -> None:
    errors, warns = admit(entry)
    fields = {e.split(":")[0] for e in errors}
    if entry["id"] == "kep4815-rc-mig-devices-wrong-shape":
        assert any("spec.spec" in w for w in warns)
    assert fields == NULL_OUTCOMES.get(entry["id"], {"<unpinned>"}), errors
