"""Every field of every example and corpus object, replaced in turn by values of other JSON types,
through the pipeline as CREATE, as an UPDATE from and to it, and as a ``/status`` update: every
review is answered with a well-formed AdmissionReview (an envelope the apiserver could not have
sent is a BadReview, the 400 path). Deterministic, unlike the fuzz test, so a red run always
means a change; it found the wrong-typed names of ``test_wrong_type_keys.py``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.strategies import check_response, fields, replaced
from webhook import BadReview
from webhook.admission.pipeline import review
from webhook.config import Settings
from webhook.gates import KNOWN, FeatureGates

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "corpus.json"  # ../shared beside the repo
PLURALS = {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims",
           "ResourceClaimTemplate": "resourceclaimtemplates", "DeviceClass": "deviceclasses",
           "PodGroup": "podgroups", "Workload": "workloads"}
GATES = {"all-on": FeatureGates().with_overrides({n: True for n, g in KNOWN.items() if not g.locked}),
         "defaults": FeatureGates()}
#: Values of other JSON types put in place of each field (a scalar is also wrapped in a list).
WRONG = ({"x": [1]}, 7, None, "x", True, [[]], [{"name": ["a"]}], {"name": {"a": 1}})


def _objects() -> list[Any]:
    found: list[Any] = []
    seen: set[Path] = set()
    for f in sorted([*ROOT.glob("webhook/examples/**/*.yaml"), *ROOT.glob("examples/**/*.yaml")]):
        if f.resolve() in seen:
            continue  # examples/cluster is a link to the package data: read once
        seen.add(f.resolve())
        for i, doc in enumerate(yaml.safe_load_all(f.read_text())):
            if isinstance(doc, dict) and doc.get("kind") in PLURALS:
                found.append(pytest.param(doc, id=f"{f.relative_to(ROOT)}:{i}"))
    if CORPUS.exists():
        found += [pytest.param(e["object"], id=f"corpus:{e['id']}") for e in json.loads(CORPUS.read_text())
                  if isinstance(e.get("object"), dict) and e["object"].get("kind") in PLURALS]
    return found


def _envelope(obj: Any, old: Any, operation: str, subresource: str) -> dict[str, Any]:
    kind = obj["kind"]
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    req: dict[str, Any] = {
        "uid": "0f5c2a9e-0000-4000-8000-00000000000a", "operation": operation, "userInfo": {"username": "sweep"},
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": PLURALS[kind]},
        "name": meta.get("name") if isinstance(meta.get("name"), str) else "",
        "namespace": meta.get("namespace") if isinstance(meta.get("namespace"), str) else "",
        "object": obj, "oldObject": old}
    if subresource:
        req["subResource"] = subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


@pytest.mark.parametrize("obj", _objects())
def test_every_field_of_another_type_is_answered(obj: dict[str, Any]) -> None:
    answered = 0
    for path, value in fields(obj):
        if path[0] in ("apiVersion", "kind"):
            continue  # those choose the rules; wrong ones are the envelope's and decode's cases
        for wrong in (*WRONG, *([[value]] if not isinstance(value, dict | list) else [])):
            bad = replaced(obj, path, wrong)
            for operation, new, old, sub in (("CREATE", bad, None, ""), ("UPDATE", obj, bad, ""),
                                             ("UPDATE", bad, bad, ""), ("UPDATE", bad, obj, "status")):
                doc = _envelope(copy.deepcopy(new), copy.deepcopy(old), operation, sub)
                for gates in GATES.values():
                    for endpoint in ("validate", "mutate"):
                        try:
                            out, _ = review(doc, Settings(gates=gates), endpoint=endpoint)
                        except BadReview:
                            continue
                        check_response(doc, out, endpoint)
                        answered += 1
    assert answered > 0
