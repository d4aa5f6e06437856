"""``lazy_device_view`` answers exactly as ``device_view``: attributes read on demand, same error."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.cel import compile_selector
from webhook.cel.view import _attribute_value, _supported, device_view, lazy_device_view

DRIVER = "gpu.example.com"
CAPS = {"memory": {"value": "80Gi"}}

CASES: dict[str, dict[str, Any]] = {
    "scalars": {"model": {"string": "a100"}, "index": {"int": 3}, "ok": {"bool": True}},
    "qualified-and-bare-same-id-last-wins": {"model": {"string": "a"}, f"{DRIVER}/model": {"string": "b"}},
    "bare-after-qualified-last-wins": {f"{DRIVER}/model": {"string": "b"}, "model": {"string": "a"}},
    "unsupported-then-supported-same-id": {"model": {"string": "a"}, f"{DRIVER}/model": {"int": True}},
    "other-domain": {"example.org/zone": {"string": "z1"}, "model": {"string": "a"}},
    "domain-with-only-unsupported": {"example.org/bad": {}, "model": {"string": "a"}},
    "version-and-lists": {"v": {"version": "1.2.3"}, "l": {"strings": ["x", "y"]}, "n": {"ints": [1, 2]}},
    "bad-version": {"v": {"version": "not-a-version"}},
    "string-that-is-a-number": {"model": {"string": 5}},
    "null-then-another-kind": {"model": {"int": None, "string": "a"}},
    "two-kinds-first-wins": {"model": {"string": "a", "int": 3}},
    "empty": {},
}
EXPRS = ['device.attributes["gpu.example.com"].model == "a"', 'device.attributes["example.org"].zone == "z1"',
         '"model" in device.attributes["gpu.example.com"]', 'device.attributes["example.org"].bad == 1',
         'device.attributes["gpu.example.com"].index == 3',
         'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1Gi"))',
         'device.attributes["gpu.example.com"].v.isGreaterThan(semver("1.0.0"))',
         'size(device.attributes["gpu.example.com"]) > 1']


def _outcome(sel: Any, view: Any) -> str:
    try:
        return repr(sel.matches(view))
    except Exception as e:  # the error text is part of the answer
        return f"{type(e).__name__}: {e}"


def _plain(view: Any) -> dict[str, dict[str, Any]]:
    return {d: dict(m.items()) for d, m in view.attrs.items()}


@pytest.mark.parametrize("attrs", CASES.values(), ids=CASES.keys())
def test_lazy_view_answers_as_the_eager_one(attrs: dict[str, Any]) -> None:
    eager = device_view(DRIVER, attrs, CAPS, True)
    lazy = lazy_device_view(DRIVER, attrs, device_view(DRIVER, None, CAPS, False), True)
    assert lazy.error == eager.error
    assert _plain(lazy) == _plain(eager)
    for d, m in _plain(eager).items():
        for i, v in m.items():
            assert lazy.attrs.get(d, {}).get(i) == v
    assert lazy.attrs.get("nowhere.example") is None
    for expr in EXPRS:
        sel = compile_selector(expr)
        assert hasattr(sel, "matches"), (expr, sel)
        assert _outcome(sel, lazy) == _outcome(sel, eager), expr


class _Int(int):
    pass


@pytest.mark.parametrize("raw", [
    {"int": 3}, {"int": True}, {"int": _Int(3)}, {"int": None}, {"int": 1.5}, {"string": "a"}, {"string": 5},
    {"bool": False}, {"bool": 0}, {"version": "1.2.3"}, {"version": "1.2"}, {"version": 1}, {"strings": ["a"]},
    {"ints": [1]}, {"versions": ["1.0.0"]}, {"versions": ["x"]}, {}, {"other": 1}, {"int": None, "string": "a"},
    {"string": "a", "int": 3}, None, "text", [],
], ids=repr)
def test_supported_says_what_converting_says(raw: Any) -> None:
    # The view's validity check answers from the types for one-key attributes; it must agree with
    # the conversion the evaluation does, whatever the value.
    assert _supported(raw) == (_attribute_value(raw) is not None)
