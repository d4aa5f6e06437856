"""apply_patch: RFC 6902 add/remove/replace, copy-on-write, never touching its input."""

from __future__ import annotations

import copy

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.patch import PatchError, apply_patch, op_add, op_remove, op_replace, pointer

DOC = {"spec": {"devices": [{"name": "a", "x": 1}, {"name": "b"}], "m": {"k/1": "v"}}, "status": {"s": 1}}


@pytest.mark.parametrize("ops", [
    pytest.param([op_remove("/status")], id="remove-key"),
    pytest.param([op_remove("/spec/devices/0/x"), op_remove("/spec/devices/1")], id="remove-nested-and-item"),
    pytest.param([op_add("/spec/devices/-", {"name": "c"})], id="append"),
    pytest.param([op_add("/spec/devices/0", {"name": "z"})], id="insert"),
    pytest.param([op_replace(pointer("spec", "m", "k/1"), "w")], id="escaped-key"),
    pytest.param([op_add("/spec/new", {"a": [1]}), op_replace("/spec/new/a/0", 2)], id="add-then-edit"),
])
def test_matches_jsonpatch_and_leaves_input_alone(ops):
    before = copy.deepcopy(DOC)
    got = apply_patch(DOC, ops)
    assert DOC == before
    assert got == jsonpatch.apply_patch(copy.deepcopy(DOC), ops)


@pytest.mark.parametrize("op", [
    pytest.param(op_remove("/nope"), id="missing-member"),
    pytest.param(op_remove("/spec/devices/7"), id="index-out-of-range"),
    pytest.param(op_add("/spec/devices/01", 1), id="leading-zero-index"),
    pytest.param({"op": "move", "from": "/a", "path": "/b"}, id="move-not-supported"),
    pytest.param(op_add("/status/s/x", 1), id="scalar-parent"),
])
def test_bad_ops_raise_patch_error(op):
    with pytest.raises(PatchError):
        apply_patch(DOC, [op])
    assert DOC["spec"]["devices"][0] == {"name": "a", "x": 1}


json_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
    max_leaves=15)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=3), json_values, min_size=1, max_size=4), st.data())
def test_random_removes_and_replaces_agree_with_jsonpatch(doc, data):
    paths = [p for p in _paths(doc) if p]
    chosen = data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3))
    ops = []
    for p in chosen:
        replace = data.draw(st.booleans())
        ops.append(op_replace(pointer(*p), data.draw(json_values)) if replace else op_remove(pointer(*p)))
    before = copy.deepcopy(doc)
    try:
        want = jsonpatch.apply_patch(copy.deepcopy(doc), ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        with pytest.raises(PatchError):
            apply_patch(doc, ops)
    else:
        assert apply_patch(doc, ops) == want
    assert doc == before
