"""Body decoding: orjson's fast path means exactly what the standard parser means, errors included."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook import BadReview
from webhook.admission.body import _decode_standard, decode_body, too_deep


def standard(body: bytes) -> Any:
    """What the standard library alone makes of ``body`` (the meaning the fast path must keep)."""
    return _decode_standard(body)


@pytest.mark.parametrize("body", [
    pytest.param(b'{"a": [1, 2.5, -0, -0.0, true, null, "x"]}', id="plain"),
    pytest.param(b'{"n": 123456789012345678901234567890}', id="integer-past-64-bits"),
    pytest.param(b'{"n": -9223372036854775809}', id="integer-below-int64"),
    pytest.param(b'{"n": 18446744073709551615}', id="largest-uint64"),
    pytest.param(b'{"n": 9223372036854775807}', id="largest-int64"),
    pytest.param(b'{"s": "\\ud800"}', id="escaped-lone-surrogate"),
    pytest.param(b'{"s": "\\ud83d\\ude00 \xc3\xa9"}', id="escaped-pair-and-utf8"),
    pytest.param(b'{"a": 1, "a": 2}', id="duplicate-keys-last-wins"),
    pytest.param(b'{"f": 1.7976931348623157e308, "g": 4.9e-324, "h": 1E2}', id="float-edges"),
    pytest.param(b'{"id": "12345678901234567890123"}', id="long-digit-run-in-a-string"),
    pytest.param(b' \n\t{"a" : {} } \r\n', id="json-whitespace"),
])
def test_fast_path_gives_the_standard_value(body: bytes) -> None:
    got, want = decode_body(body), standard(body)
    assert got == want
    assert json.dumps(got) == json.dumps(want)  # same types too: an int stays an int


@pytest.mark.parametrize(("body", "message"), [
    pytest.param(b"not json", "not valid JSON: Expecting value", id="not-json"),
    pytest.param(b"\xff\xfe\x00", "not valid UTF-8", id="not-utf8"),
    pytest.param(b'{"a": "\xff"}', "not valid UTF-8", id="bad-utf8-in-a-string"),
    pytest.param(b"\xef\xbb\xbf{}", "not valid JSON: Unexpected UTF-8 BOM", id="byte-order-mark"),
    pytest.param(b"[1, NaN]", "NaN is not a JSON number", id="nan"),
    pytest.param(b"Infinity", "Infinity is not a JSON number", id="infinity"),
    pytest.param(b"[-Infinity]", "-Infinity is not a JSON number", id="minus-infinity"),
    pytest.param(b'{"x": 1e400}', "out of range for a double", id="float-overflow"),
    pytest.param(b'{"s": "\x01"}', "Invalid control character", id="control-character"),
    pytest.param(b"{} []", "Extra data", id="trailing-data"),
    pytest.param(b"", "Expecting value", id="empty"),
    pytest.param(b"[" * 150 + b"]" * 150, "nested deeper than 100", id="deep-nesting"),
])
def test_bad_bodies_are_worded_as_before(body: bytes, message: str) -> None:
    with pytest.raises(BadReview, match=message):
        decode_body(body)


def _depth_outside_strings(body: bytes) -> int:
    """The reference: a running count of brackets outside strings."""
    doc = json.loads(body)

    def depth(v: Any) -> int:
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0
    return depth(doc)


_text = st.text(alphabet=st.sampled_from('ab[]{}"\\\u00e9'), max_size=6)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | _text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(doc=_json, limit=st.integers(min_value=0, max_value=8))
def test_depth_bound_counts_brackets_outside_strings_only(doc: Any, limit: int) -> None:
    for body in (json.dumps(doc).encode(), json.dumps(doc, ensure_ascii=False).encode()):
        assert too_deep(body, limit) == (_depth_outside_strings(body) > limit)


@settings(max_examples=300, deadline=None)
@given(doc=_json)
def test_decoding_agrees_with_the_standard_parser(doc: Any) -> None:
    body = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        want = standard(body)
    except BadReview as e:
        with pytest.raises(BadReview) as got:
            decode_body(body, 1000)
        assert str(got.value) == str(e)
        return
    assert json.dumps(decode_body(body, 1000)) == json.dumps(want)


@pytest.mark.parametrize(("body", "limit", "deep"), [
    pytest.param(b'{"s": "[[[[[[", "l": [[1]]}', 3, False, id="brackets-inside-a-string"),
    pytest.param(b'["]]]]", [[[[1]]]]]', 4, True, id="closing-brackets-inside-a-string"),
    pytest.param(b'{"s": "\\"[[[[", "l": []}', 2, False, id="escaped-quote-before-brackets"),
    pytest.param(b"[[[]]", 2, True, id="unbalanced"),
])
def test_depth_bound_cases(body: bytes, limit: int, deep: bool) -> None:
    assert too_deep(body, limit) is deep


def test_finite_floats_stay_exact() -> None:
    body = json.dumps({"x": [0.1, 1 / 3, math.pi, 1e300, -5e-324]}).encode()
    assert decode_body(body) == json.loads(body)
