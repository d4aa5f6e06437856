"""Field paths and field-error rendering, as the apiserver renders them."""

from __future__ import annotations

import pytest

from webhook.fielderrors import (
    FieldPath,
    aggregate_message,
    duplicate,
    duplicates_by,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from webhook.quantity import parse_quantity

DEV0 = FieldPath.root("spec").child("devices").index(0)


@pytest.mark.parametrize(("path", "text", "pointer"), [
    pytest.param(FieldPath.root(), "", "", id="root"),
    pytest.param(FieldPath.root("spec").child("driver"), "spec.driver", "/spec/driver", id="fields"),
    pytest.param(DEV0.child("capacity").key("bandwidth"), "spec.devices[0].capacity[bandwidth]",
                 "/spec/devices/0/capacity/bandwidth", id="map-key"),
    pytest.param(DEV0.child("attributes").key("dra.example.com/model"),
                 "spec.devices[0].attributes[dra.example.com/model]",
                 "/spec/devices/0/attributes/dra.example.com~1model", id="key-with-slash-escaped"),
    pytest.param(FieldPath.root("a~b"), "a~b", "/a~0b", id="tilde-escaped"),
])
def test_path_renders_like_upstream(path, text, pointer):
    assert str(path) == text
    assert path.pointer() == pointer


@pytest.mark.parametrize(("err", "text"), [
    pytest.param(required("spec.driver"), "spec.driver: Required value", id="required"),
    pytest.param(invalid("spec.nodeName", "", "must be either unset or a non-empty string"),
                 'spec.nodeName: Invalid value: "": must be either unset or a non-empty string',
                 id="invalid-string-quoted"),
    pytest.param(invalid("spec.pool.generation", -1, "must be greater than or equal to zero"),
                 "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
                 id="invalid-int-plain"),
    pytest.param(invalid("x", parse_quantity("1536Mi"), "too big"), "x: Invalid value: 1536Mi: too big",
                 id="invalid-quantity-canonical"),
    pytest.param(too_many("spec.devices", 129, 128),
                 "spec.devices: Too many: 129: must have at most 128 items", id="too-many"),
    pytest.param(too_long("spec.driver", 63), "spec.driver: Too long: must have at most 63 bytes",
                 id="too-long-hides-value"),
    pytest.param(duplicate("spec.devices[1]", "gpu-0"), 'spec.devices[1]: Duplicate value: "gpu-0"',
                 id="duplicate"),
    pytest.param(forbidden("spec.x", "disabled by feature gate"), "spec.x: Forbidden: disabled by feature gate",
                 id="forbidden"),
    pytest.param(not_supported("spec.mode", "Some", ["All", "ExactCount"]),
                 'spec.mode: Unsupported value: "Some": supported values: "All", "ExactCount"',
                 id="not-supported"),
])
def test_error_text(err, text):
    assert str(err) == text
    assert err.cause()["field"] == text.split(": ", 1)[0]
    assert err.cause()["message"] == text.split(": ", 1)[1]


def test_duplicates_are_reported_on_later_elements():
    items = [{"name": "a"}, {"name": "b"}, {"name": "a"}, {"name": "a"}, {"name": None}]
    path = FieldPath.root("spec").child("devices")
    errs = duplicates_by(items, path, key=lambda d: d.get("name"))
    assert [e.field for e in errs] == ["spec.devices[2]", "spec.devices[3]"]


def test_aggregate_message_brackets_several_errors():
    one = required("a")
    two = invalid("b", 1, "bad")
    assert aggregate_message([one]) == "a: Required value"
    assert aggregate_message([one, two, one]) == "[a: Required value, b: Invalid value: 1: bad]"
