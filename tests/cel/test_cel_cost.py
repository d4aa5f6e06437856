"""CEL cost, bounded the way upstream bounds it: a static worst-case estimate with size bounds
(denied at validation over 1,000,000), a run-time cost meter, and a deadline that stops an
evaluation in the middle.

Before: a list that was not a literal was assumed to hold 32 elements, so
``"a,a,...".split(",").exists(x, "a,a,...".split(",").exists(y, x == y + "z"))`` passed the
check and ran in quadratic time (400 x 400: 18 s for one review with ``?timeout=1s``).
"""

from __future__ import annotations

import time

import pytest

from webhook.cel import (
    CelCompileError,
    CelDeadlineExceeded,
    CelRuntimeError,
    compile_result,
    deadline_scope,
    device_view,
)
from webhook.cel.compile import _environment
from webhook.cel.cost import MAX_COST, estimate
from webhook.fielderrors import FieldPath
from webhook.gates import FeatureGates
from webhook.rules.claims.common import check_cel

VIEW = device_view("gpu.example.com", {"model": {"string": "a100"}}, {"memory": {"value": "80Gi"}}, False)
L10 = "[" + ",".join(str(i) for i in range(10)) + "]"


def quadratic(n: int, compare: str = 'x == y + "z"') -> str:
    """Two nested exists over an n-part split of a literal (the issue's attack)."""
    parts = ",".join(["a"] * n)
    return f'"{parts}".split(",").exists(x, "{parts}".split(",").exists(y, {compare}))'


def cost(expr: str) -> int:
    return estimate(_environment().compile(expr))


@pytest.mark.parametrize(("expr", "want"), [
    # The figures upstream's own tests pin (k8s.io/dynamic-resource-allocation/cel).
    pytest.param('device.driver == "dra.example.com"', 4, id="driver-equals-a-literal"),
    pytest.param('device.attributes["dra.example.com"].name', 4, id="attribute-lookup"),
    pytest.param('"dra.example.com" in device.attributes', 3, id="domain-check"),
    pytest.param('device.attributes["dra.example.com"].name > 0', 5, id="attribute-compare"),
    pytest.param('device.attributes["dra.example.com"].name.exists(x, x > 0)', 5 + 6 * 64,
                 id="macro-over-an-attribute-value-of-64"),
])
def test_estimate_matches_upstream_on_its_pinned_cases(expr, want):
    assert cost(expr) == want


@pytest.mark.parametrize(("expr", "over"), [
    pytest.param(quadratic(100), True, id="nested-exists-over-split-100x100"),
    # Upstream bounds how many parts split() makes but not how long each is: comparing two parts
    # is unbounded, whatever the number of parts (checked against the 1.37 apiserver).
    pytest.param(quadratic(2), True, id="nested-exists-over-split-comparing-parts-2x2"),
    pytest.param(quadratic(45, 'y == "z"'), False, id="nested-exists-over-split-45x45-against-a-literal"),
    pytest.param(f'{L10}.all(a, "{"A" * 3000}".lowerAscii().startsWith("a"))', False,
                 id="lowerascii-of-3000-chars-10-times"),
    pytest.param(f'{L10}.all(a, {L10}.all(b, {L10}.all(c, "{"A" * 3000}".lowerAscii() != "")))', False,
                 id="lowerascii-of-3000-chars-1000-times"),
    pytest.param(f'{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, "{"A" * 3000}".lowerAscii() != ""))))',
                 True, id="lowerascii-of-3000-chars-10000-times"),
    pytest.param(f'{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, {L10}.all(e, a >= 0)))))', False,
                 id="five-nested-macros-over-10"),
    pytest.param(f'{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, {L10}.all(e, {L10}.all(f, a >= 0))))))',
                 True, id="six-nested-macros-over-10"),
    pytest.param(f'"{"b" * 4000}".split("").all(c, ("{"c" * 200}" + c).size() > 0)', True,
                 id="concatenation-per-character-of-a-4000-char-split"),
    pytest.param('device.attributes["d"].x.split("").all(c, c != "")', False,
                 id="split-of-an-attribute-is-bounded-by-64-chars"),
    pytest.param(f'{L10}.map(a, "{"q" * 500}" + "{"q" * 500}").all(s, s.split("").all(t, t != ""))', False,
                 id="map-builds-1000-char-strings-then-splits-them"),
    pytest.param(f'{L10}.map(a, "{"q" * 500}" + "{"q" * 500}").all(s, {L10}.all(b, {L10}.all(c, '
                 f's.split("").all(t, t != ""))))', True, id="the-same-a-hundred-times-more"),
])
def test_size_bounds_drive_the_estimate(expr, over):
    assert (cost(expr) > MAX_COST) is over, cost(expr)


def test_over_the_limit_is_denied_at_validation_with_the_apiservers_error():
    path = FieldPath.root("spec").child("devices", "requests").index(0).child("exactly", "selectors").index(0) \
        .child("cel", "expression")
    errs, _ = check_cel(quadratic(400), path, FeatureGates.defaults())
    assert [(e.type.value, e.field, e.detail) for e in errs] == [
        ("FieldValueForbidden", str(path), "too complex, exceeds cost limit")]
    result = compile_result(quadratic(400))
    assert isinstance(result, CelCompileError) and result.too_complex


def test_the_runtime_meter_stops_an_evaluation_at_its_budget(monkeypatch):
    import webhook.cel.compile as compiled
    sel = compile_result(quadratic(45, 'y == "z"'))
    assert not isinstance(sel, Exception)
    monkeypatch.setattr(compiled, "MAX_COST", 2_000)
    with pytest.raises(CelRuntimeError) as info:
        sel.matches(VIEW)
    assert info.value.message == "operation cancelled: actual cost limit exceeded"
    monkeypatch.undo()
    assert sel.matches(VIEW) is False  # the same evaluation finishes with the real budget


def test_a_deadline_stops_an_evaluation_in_the_middle():
    sel = compile_result(f"{L10}.all(a, {L10}.all(b, {L10}.all(c, {L10}.all(d, a + b + c + d >= 0))))")
    assert not isinstance(sel, Exception) and sel.cost < MAX_COST  # allowed, yet ~3 s in celpy
    started = time.monotonic()
    with deadline_scope(started + 0.1), pytest.raises(CelDeadlineExceeded):
        sel.matches(VIEW)
    assert time.monotonic() - started < 0.3
    with deadline_scope(time.monotonic() - 1), pytest.raises(CelDeadlineExceeded):
        sel.matches(VIEW)  # already past: not even started


def test_ordinary_selectors_are_not_affected_by_a_deadline_scope():
    sel = compile_result('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0')
    assert not isinstance(sel, Exception)
    with deadline_scope(time.monotonic() + 5):
        assert sel.matches(VIEW) is True
