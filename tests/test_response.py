"""Responses the apiserver accepts: uid echo, Invalid status, patches, warning hygiene."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import SLICE, review
from webhook import BadReview
from webhook.admission.body import decode_body
from webhook.admission.envelope import parse_review
from webhook.admission.response import _already_clean, _clean, build_response, json_body, sanitize_warnings
from webhook.fielderrors import invalid, required


@pytest.mark.parametrize(("given_", "want"), [
    pytest.param(["a", "a", "b"], ["a", "b"], id="dedupe"),
    pytest.param(["line1\nline2\ttab"], ["line1 line2 tab"], id="control-chars-become-spaces"),
    pytest.param(["x" * 200], ["x" * 119 + "…"], id="truncated-to-120"),
    pytest.param(["", "   ", "\n"], [], id="empty-dropped"),
    pytest.param(["bell\x07", "esc\x1b[31mred"], ["bell", "esc [31mred"], id="escapes"),
    pytest.param([f"w{i}" for i in range(15)], [f"w{i}" for i in range(9)] + ["6 more warnings suppressed"],
                 id="capped"),
])
def test_sanitize_warnings(given_, want):
    assert sanitize_warnings(given_) == want


@given(st.lists(st.text(), max_size=30))
def test_sanitized_warnings_are_always_clean(ws):
    out = sanitize_warnings(ws)
    assert len(out) <= 10
    assert len(set(out)) == len(out)
    for w in out:
        assert 0 < len(w) <= 120
        assert w == w.strip()
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in w)
        w.encode("utf-8")


@given(st.text(), st.integers(min_value=0, max_value=200))
def test_the_shortcut_only_passes_warnings_cleaning_would_keep(w, max_length):
    if _already_clean(w, max_length):
        assert _clean(w, max_length) == w


@pytest.mark.parametrize("w", [
    pytest.param("", id="empty"),
    pytest.param(" lead", id="leading-space"),
    pytest.param("trail ", id="trailing-space"),
    pytest.param("two  spaces", id="space-run"),
    pytest.param("tab\there", id="tab"),
    pytest.param("nbsp\u00a0here", id="no-break-space"),
    pytest.param("line\u2028sep", id="line-separator"),
    pytest.param("zero\u200bwidth", id="format-char"),
    pytest.param("x" * 121, id="too-long"),
])
def test_the_shortcut_leaves_unclean_warnings_to_cleaning(w):
    assert not _already_clean(w, 120)
    assert sanitize_warnings([w]) == ([_clean(w, 120)] if _clean(w, 120) else [])


@pytest.mark.parametrize(("doc", "want"), [
    pytest.param({"b": 1, "a": "é"}, '{"a":"é","b":1}\n'.encode(), id="sorted-compact-utf8"),
    pytest.param({"a": "\ud800"}, b'{"a":"\\ud800"}\n', id="lone-surrogate-escaped"),
])
def test_json_body_encodes_as_jsonify(doc, want):
    assert json_body(doc) == want


def test_denial_mirrors_the_apiserver_invalid_status():
    errs = [required("spec.driver"), invalid("spec.nodeName", "", "must be either unset or a non-empty string")]
    out = build_response("u-1", allowed=False, errors=errs, kind="ResourceSlice", group="resource.k8s.io",
                         name="s")
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    r = out["response"]
    assert r["uid"] == "u-1" and r["allowed"] is False
    st_ = r["status"]
    assert st_["code"] == 422 and st_["reason"] == "Invalid" and st_["status"] == "Failure"
    assert st_["message"] == ('ResourceSlice.resource.k8s.io "s" is invalid: [spec.driver: Required value, '
                              'spec.nodeName: Invalid value: "": must be either unset or a non-empty string]')
    assert st_["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.driver"},
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "": must be either unset or a non-empty string',
         "field": "spec.nodeName"},
    ]
    assert "patch" not in r and "patchType" not in r


def test_patch_is_base64_jsonpatch_with_type():
    ops = [{"op": "remove", "path": "/spec/x"}]
    r = build_response("u", allowed=True, patch=ops)["response"]
    assert r["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(r["patch"])) == ops


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(b"not json", "not valid JSON", id="not-json"),
    pytest.param(b"\xff\xfe\x00", "not valid UTF-8", id="not-utf8"),
    pytest.param(b"[" * 150 + b"]" * 150, "nested deeper than 100", id="deep-nesting"),
])
def test_bad_bodies(body, message):
    with pytest.raises(BadReview, match=message):
        decode_body(body)


def test_deep_brackets_inside_strings_do_not_count():
    doc = {"s": "[" * 500, "l": [[[1]]]}
    assert decode_body(json.dumps(doc).encode()) == doc


@pytest.mark.parametrize(("doc", "message"), [
    pytest.param([], "not an AdmissionReview object", id="list"),
    pytest.param({"kind": "AdmissionReview"}, "apiVersion", id="no-apiversion"),
    pytest.param({**review(SLICE), "apiVersion": "admission.k8s.io/v1beta1"}, "apiVersion", id="v1beta1"),
    pytest.param({**review(SLICE), "request": {**review(SLICE)["request"], "uid": ""}}, "uid", id="empty-uid"),
    pytest.param({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {k: v for k, v in review(SLICE)["request"].items() if k != "uid"}},
                 "uid", id="missing-uid"),
    pytest.param({**review(SLICE), "request": {**review(SLICE)["request"], "operation": "PATCH"}},
                 "operation", id="bad-operation"),
    pytest.param({**review(SLICE), "request": {**review(SLICE)["request"], "object": None}},
                 "object is required", id="create-without-object"),
])
def test_bad_reviews(doc, message):
    with pytest.raises(BadReview, match=message):
        parse_review(doc)


envelopes = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(
        ["apiVersion", "kind", "request", "uid", "operation", "object", "dryRun", "group", "x"]), kids, max_size=4),
    max_leaves=20)


@given(st.one_of(envelopes, st.builds(lambda r, k, v: {**review(SLICE), "request": {**review(SLICE)["request"], k: v}},
                                      st.none(), st.sampled_from(["uid", "kind", "operation", "dryRun", "object",
                                                                  "name", "oldObject", "subResource"]), envelopes)))
def test_compiled_envelope_check_agrees_with_jsonschema(doc):
    from webhook.admission.envelope import _is_valid_envelope, _validator
    assert _is_valid_envelope(doc) == _validator().is_valid(doc)


def test_compiled_schema_refuses_unknown_keywords():
    from webhook.admission.envelope import compile_schema
    with pytest.raises(ValueError, match="unsupported keyword 'pattern'"):
        compile_schema({"type": "string", "pattern": "x"})


def test_a_patch_with_a_lone_surrogate_is_still_encoded():
    import base64
    import json

    from webhook.admission.response import build_response

    patch = [{"op": "replace", "path": "/spec", "value": {"\ud800": None}}]
    resp = build_response("u", allowed=True, patch=patch)
    assert json.loads(base64.b64decode(resp["response"]["patch"])) == patch
