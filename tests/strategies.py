"""Hypothesis strategies for fuzzing the admission pipeline.

Valid objects of every handled kind (inline seeds plus every example under ``examples/``), then
mutated: wrong types, missing fields, huge lists, odd Unicode, invalid quantities, deep nesting.
``admission_reviews()`` wraps them in AdmissionReview envelopes (sometimes broken ones too), and
``check_response`` states what the apiserver requires of every answer.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
from hypothesis import strategies as st

from webhook.state.files import load_objects_from_file

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# Seeds: one valid object per kind written here, plus the shipped examples.
# ---------------------------------------------------------------------------------------------

_INLINE: list[dict[str, Any]] = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
     "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
              "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-0",
                           "attributes": {"model": {"string": "a100"}, "index": {"int": 0},
                                          "gpu.example.com/numa": {"int": 1}, "ok": {"bool": True},
                                          "ver": {"version": "1.2.3"}},
                           "capacity": {"memory": {"value": "40Gi"},
                                        "bandwidth": {"value": "10G", "requestPolicy": {
                                            "default": "1G", "validRange": {"min": "1G", "step": "1G"}}}},
                           "allowMultipleAllocations": True}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "c", "namespace": "default"},
     "spec": {"devices": {
         "requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                                         "count": 2, "selectors": [{"cel": {"expression":
                                             'device.attributes["gpu.example.com"].model == "a100"'}}],
                                         "capacity": {"requests": {"memory": "10Gi"}}}},
             {"name": "nic", "firstAvailable": [
                 {"name": "fast", "deviceClassName": "resource.example.com", "count": 1},
                 {"name": "any", "deviceClassName": "resource.example.com", "allocationMode": "All"}]}],
         "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "gpu.example.com/numa"}],
         "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                     "parameters": {"sharing": {"strategy": "TimeSlicing"}}}}]}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "t", "namespace": "default"},
     "spec": {"metadata": {"labels": {"a": "b"}},
              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
     "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
              "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
              "extendedResourceName": "example.com/gpu"}},
    {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
     "metadata": {"name": "pg", "namespace": "default"},
     "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"single": {}},
              "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "one-gpu"}]}},
    {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
     "metadata": {"name": "w", "namespace": "default"},
     "spec": {"podGroupTemplates": [{"name": "worker", "schedulingPolicy": {"basic": {}}}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
     "spec": {"schedulingGroup": {"podGroupName": "pg"},
              "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "one-gpu"}],
              "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpus"}]}}]}},
]


def _example_objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        try:
            out.extend(o for o in load_objects_from_file(path) if isinstance(o, dict))
        except Exception:  # noqa: BLE001 - an example being edited right now must not break fuzzing
            continue
    return out


SEEDS: list[dict[str, Any]] = _INLINE + [o for o in _example_objects() if o.get("kind") in {
    "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "PodGroup", "Workload", "Pod"}]

# ---------------------------------------------------------------------------------------------
# Leaf values
# ---------------------------------------------------------------------------------------------

ODD_STRINGS = [
    "", " ", "\x00", "a\nb", "\t", "\r\n", "\u202eevil", "\u200b", "\ufeff", "e\u0301", "İ", "ß", "ǅ",
    "\U0001f600", "１２３", "²", "٣", "\ud800", "\udfff", "\uffff", "\U0010ffff", "null", "true", "0",
    "-", ".", "..", "a" * 64, "a" * 254, "a" * 10_000, "A" * 63 + ".example.com", "x/y/z", "<script>",
    "${jndi:ldap://x}", "' OR 1=1 --", "%s%s%n", "\\", '"', "device.driver == 1", "a.b.c/" + "d" * 100,
]

BAD_QUANTITIES = [
    "", "1.", ".", "+", "-1", "1e", "1E", "1e9999", "1e-9999", "0x10", "１Gi", "1 Gi", "1gi", "1KiB",
    "1.5.5", "9" * 40 + "Ei", "1e18E", "NaN", "Infinity", "1/2", "--1", "+-1", "1m1", "²", " 1", "1 ",
    "0.000000000000000000001", "9223372036854775807", "9223372036854775808", "1Ei", "8Ei",
]

HUGE_INTS = [2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, -1, 0]


def odd_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(ODD_STRINGS), st.text(max_size=40),
                     st.text(alphabet=st.characters(codec="utf-8"), max_size=20))


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                     st.sampled_from(HUGE_INTS), st.floats(allow_nan=False, allow_infinity=False),
                     odd_text(), st.sampled_from(BAD_QUANTITIES))


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    return st.recursive(scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(odd_text(), inner, max_size=4)),
        max_leaves=max_leaves)


# ---------------------------------------------------------------------------------------------
# Mutations of a JSON document
# ---------------------------------------------------------------------------------------------


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (root included) in ``doc``; capped so huge documents stay cheap."""
    out = [prefix]
    stack = [(doc, prefix)]
    while stack and len(out) < 2000:
        node, p = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out.append((*p, k))
            stack.append((v, (*p, k)))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def fields(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every field below ``value``, depth first, in document order (uncapped)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*at, key), child
        yield from fields(child, (*at, key))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of ``doc`` with the field at ``path`` (not the root) set to a copy of ``value``."""
    out = copy.deepcopy(doc)
    _get(out, path[:-1])[path[-1]] = copy.deepcopy(value)
    return out


def removed(doc: Any, path: tuple[Any, ...]) -> Any:
    """A deep copy of ``doc`` without the field at ``path`` (not the root)."""
    out = copy.deepcopy(doc)
    del _get(out, path[:-1])[path[-1]]
    return out


def broken_variants(doc: Any, bad: list[Any]) -> Iterator[Any]:
    """Every field of ``doc`` in turn set to each value of ``bad``, then removed (``doc`` itself
    not included): what a shortcut that claims "certainly valid" must refuse or prove right."""
    for path, _ in fields(doc):
        for value in bad:
            yield replaced(doc, path, value)
        yield removed(doc, path)


def _nest(value: Any, depth: int, use_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if use_list else {"x": value}
    return value


MUTATIONS = ("replace", "delete", "null", "wrap", "huge-list", "extra-key", "odd-string",
             "bad-quantity", "deep", "number", "type-swap")


@st.composite
def mutate_doc(draw: st.DrawFn, doc: Any, max_mutations: int = 3) -> Any:
    """``doc`` (deep-copied) with 1..max_mutations random changes at random places."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        cur = _get(doc, path)
        how = draw(st.sampled_from(MUTATIONS))
        if how == "replace":
            doc = _set(doc, path, draw(json_values()))
        elif how == "delete" and path:
            parent = _get(doc, path[:-1])
            del parent[path[-1]]
        elif how == "null":
            doc = _set(doc, path, None)
        elif how == "wrap":
            doc = _set(doc, path, draw(st.sampled_from([[cur], {"value": cur}, json.dumps(cur)])))
        elif how == "huge-list":
            n = draw(st.sampled_from([33, 65, 129, 257, 1025, 5000]))
            item = cur[0] if isinstance(cur, list) and cur else cur
            # Keep the document near the 3 MiB body cap (some just over it), not far beyond.
            n = max(2, min(n, 3_500_000 // max(1, len(json.dumps(item)))))
            doc = _set(doc, path, [copy.deepcopy(item) if i < 3 else item for i in range(n)])
        elif how == "extra-key" and isinstance(cur, dict):
            cur[draw(odd_text())] = draw(json_values(4))
        elif how == "odd-string":
            doc = _set(doc, path, draw(odd_text()))
        elif how == "bad-quantity":
            doc = _set(doc, path, draw(st.sampled_from(BAD_QUANTITIES)))
        elif how == "deep":
            depth = draw(st.integers(10, 120))
            doc = _set(doc, path, _nest(cur, depth, draw(st.booleans())))
        elif how == "number":
            doc = _set(doc, path, draw(st.one_of(st.sampled_from(HUGE_INTS), st.floats(allow_nan=False,
                                                                                      allow_infinity=False))))
        elif how == "type-swap":
            doc = _set(doc, path, draw(st.sampled_from([[], {}, "", 0, True, 1.5, "1"])))
    return doc


def seed_objects() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(SEEDS).map(copy.deepcopy)


def objects() -> st.SearchStrategy[Any]:
    """A seed object, unchanged (1 in 5) or mutated."""
    return seed_objects().flatmap(lambda o: st.one_of(st.just(o), mutate_doc(o), mutate_doc(o),
                                                      mutate_doc(o), mutate_doc(o)))


# ---------------------------------------------------------------------------------------------
# AdmissionReview envelopes
# ---------------------------------------------------------------------------------------------

_KINDS = [("resource.k8s.io", "ResourceSlice"), ("resource.k8s.io", "ResourceClaim"),
          ("resource.k8s.io", "ResourceClaimTemplate"), ("resource.k8s.io", "DeviceClass"),
          ("scheduling.k8s.io", "PodGroup"), ("scheduling.k8s.io", "Workload"), ("", "Pod"),
          ("", "ConfigMap")]


def _gvk(o: Any) -> tuple[str, str, str]:
    api = o.get("apiVersion") if isinstance(o, dict) else None
    kind = o.get("kind") if isinstance(o, dict) else None
    group, _, version = str(api or "").rpartition("/")
    return group, version, str(kind or "")


@st.composite
def admission_reviews(draw: st.DrawFn, broken_envelopes: bool = True) -> dict[str, Any]:
    """An AdmissionReview v1 for a (usually mutated) object; sometimes a broken envelope."""
    obj = draw(objects())
    op = draw(st.sampled_from(["CREATE", "CREATE", "UPDATE", "UPDATE", "DELETE", "CONNECT"]))
    group, version, kind = _gvk(obj)
    if draw(st.integers(0, 9)) == 0:  # request kind that does not match the object
        group, kind = draw(st.sampled_from(_KINDS))
        version = draw(st.sampled_from(["v1", "v1beta1", "v1beta2", "v1alpha3", ""]))
    if not kind:
        kind = draw(st.sampled_from(_KINDS))[1]
    old = None
    if op == "UPDATE":
        old = draw(st.one_of(st.just(copy.deepcopy(obj)), objects(), mutate_doc(obj) if obj is not None
                             else st.none()))
    if op == "DELETE":
        old, obj = obj, None
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name")
    ns = meta.get("namespace")
    doc: dict[str, Any] = {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": draw(st.one_of(st.uuids().map(str), st.text(min_size=1, max_size=256))),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "subResource": draw(st.sampled_from(["", "", "", "status"])),
            "name": name if isinstance(name, str) else "",
            "namespace": ns if isinstance(ns, str) else "",
            "operation": op,
            "userInfo": {"username": "fuzz"},
            "object": obj,
            "oldObject": old,
            "dryRun": draw(st.booleans()),
            "options": None,
        },
    }
    if not doc["request"]["subResource"]:
        del doc["request"]["subResource"]
    if broken_envelopes and draw(st.integers(0, 7)) == 0:
        doc = draw(mutate_doc(doc, 2))
    return doc


# ---------------------------------------------------------------------------------------------
# What the apiserver requires of an answer
# ---------------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def request_uid(doc: Any) -> Any:
    return doc["request"]["uid"]


def check_response(doc: dict[str, Any], out: dict[str, Any], endpoint: str) -> None:
    """Assert ``out`` is an answer the apiserver accepts for ``doc`` on ``endpoint``."""
    assert out.get("apiVersion") == "admission.k8s.io/v1", out
    assert out.get("kind") == "AdmissionReview", out
    resp = out["response"]
    assert resp["uid"] == request_uid(doc)
    assert isinstance(resp["allowed"], bool)
    if endpoint == "validate":
        assert "patch" not in resp and "patchType" not in resp, "validating answer with a patch"
    else:
        assert resp["allowed"] is True, "/mutate never denies"
    if "patch" in resp or "patchType" in resp:
        assert resp.get("patchType") == "JSONPatch" and resp.get("patch"), resp
        ops = json.loads(base64.b64decode(resp["patch"], validate=True))
        assert isinstance(ops, list) and ops
        obj = doc["request"]["object"]
        jsonpatch.apply_patch(obj, ops)  # raises when the patch does not apply
    if not resp["allowed"]:
        status = resp["status"]
        assert status["code"] == 422 and status["reason"] == "Invalid"
        assert isinstance(status["message"], str) and status["message"]
        causes = status["details"]["causes"]
        assert causes and all(isinstance(c.get("field"), str) and c.get("reason", "").startswith("FieldValue")
                              for c in causes), causes
    warnings = resp.get("warnings", [])
    assert isinstance(warnings, list) and len(warnings) <= 10, warnings
    assert len(set(warnings)) == len(warnings), warnings
    for w in warnings:
        assert isinstance(w, str) and w and len(w) <= 120, w
        assert not _CONTROL.search(w), repr(w)
        w.encode("utf-8")  # no lone surrogates: the apiserver drops invalid UTF-8
    json.dumps(out, allow_nan=False)  # JSON the apiserver can decode
