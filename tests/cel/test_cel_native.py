"""Native evaluation of common selector shapes (webhook/cel/native.py) answers exactly as celpy.

Each outcome is a bool or the CelRuntimeError message. ``Selector._evaluate`` is the celpy path
(``matches`` without the native shortcut); ``Selector._native`` is the translated function.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.cel import CelRuntimeError, compile_selector, device_view
from webhook.cel.native import NativeError, NativeFallback

D = "gpu.example.com"
OTHER = "other.example.com"
A = f'device.attributes["{D}"]'
C = f'device.capacity["{D}"]'
X = 'device.attributes["dra.example.com"]'

VIEWS = {
    "full": device_view(D, {
        "model": {"string": "A100"}, "index": {"int": 3}, "mig": {"bool": True}, "flag": {"bool": False},
        "ver": {"version": "1.4.0"}, "list": {"strings": ["a", "b"]}, "neg": {"int": -1},
        "dra.example.com/numa": {"int": 0}, "dra.example.com/model": {"string": "H100"},
    }, {"memory": {"value": "40Gi"}, "tiny": {"value": "100m"}, "dra.example.com/bandwidth": {"value": "1500m"}},
        False),
    "other-driver": device_view(OTHER, {"model": {"string": "A100"}, "mig": {"bool": True}},
                                {"memory": {"value": "80Gi"}}, True),
    "empty": device_view(D, {}, {}, False),
    "swapped-types": device_view(D, {"model": {"int": 1}, "mig": {"string": "yes"}, "index": {"bool": True},
                                     "flag": {"int": 0}}, {"memory": {"value": "16Gi"}}, False),
    "bad-attribute": device_view(D, {"model": {}}, {"memory": {"value": "1Gi"}}, False),
}

SIXTY = " || ".join(f'{A}.model == "M{i}"' for i in range(59)) + f' || {A}.model == "A100"'

EXPRESSIONS = [
    # 1. capacity comparisons
    *(f'{C}.memory.compareTo(quantity("{q}")) {op} {n}'
      for q, op, n in itertools.product(("16Gi", "40Gi", "40960Mi", "80Gi"), (">=", ">", "<=", "<", "==", "!="),
                                        (0, 1, -1))),
    f'{C}["memory"].compareTo(quantity("16Gi")) >= 0',
    f'{C}.tiny.compareTo(quantity("0.1")) == 0',
    f'{C}.tiny.compareTo(quantity("99m")) > 0',
    'device.capacity["dra.example.com"].bandwidth.compareTo(quantity("1.5")) == 0',
    f'{C}.memory.isGreaterThan(quantity("39Gi"))',
    f'{C}.memory.isGreaterThan(quantity("40Gi"))',
    f'{C}.memory.isLessThan(quantity("41Gi"))',
    f'{C}.memory.isLessThan(quantity("40Gi"))',
    f'0 <= {C}.memory.compareTo(quantity("16Gi"))',
    f'{C}.missing.compareTo(quantity("1")) >= 0',
    'device.capacity["nowhere"].memory.compareTo(quantity("1")) >= 0',
    f'{C}.missing.isGreaterThan(quantity("1"))',
    # 2. attribute equality, every literal type, both orders, both accessors
    *(f"{A}.{name} {op} {lit}" for name, op, lit in itertools.product(
        ("model", "index", "mig", "flag", "ver", "list", "neg", "missing"), ("==", "!="),
        ('"A100"', '"H100"', '""', "3", "0", "-1", "1", "true", "false"))),
    f'{A}["model"] == "A100"',
    f'"A100" == {A}.model',
    f"3 != {A}.index",
    f'{X}.numa == 0',
    f'{X}.model == "H100"',
    f'{X}.missing == "H100"',
    'device.attributes["nowhere"].model == "A100"',
    f'{A}.model == "A\\x31\\u0030\\60"',
    f"{A}.model == 'A100'",
    f'{A}.model == r"A100"',
    f"{A}.index == 0x3",
    # 3. bare boolean attributes
    f"{A}.mig", f"{A}.flag", f'{A}["mig"]', f"{A}.model", f"{A}.index", f"{A}.missing",
    f"{X}.numa", f"!{A}.mig", f"!{A}.flag", f"!{A}.missing", f"!{A}.model", f"!!{A}.mig",
    # semver comparisons on version attributes (pre-releases sort before the release)
    *(f'{A}.ver.{m}(semver("{v}"))' for m, v in itertools.product(
        ("isGreaterThan", "isLessThan"), ("1.3.9", "1.4.0", "1.4.0-rc.1", "1.10.0", "0.0.1"))),
    *(f'{A}.ver.compareTo(semver("{v}")) {op} 0' for v, op in itertools.product(
        ("1.4.0", "1.4.1", "1.4.0-alpha"), (">=", "==", "<"))),
    f'{A}.model.isGreaterThan(semver("1.0.0"))',
    f'{A}.missing.isGreaterThan(semver("1.0.0"))',
    f'device.driver == "{D}" && {A}.ver.isGreaterThan(semver("1.2.0"))',
    # 4. driver
    f'device.driver == "{D}"', f'device.driver != "{D}"', f'device.driver == "{OTHER}"', f'"{D}" == device.driver',
    # 5. combinations and error absorption
    f'device.driver == "{D}" && {C}.memory.compareTo(quantity("16Gi")) >= 0',
    f'device.driver == "{D}" && {A}.mig',
    f'device.driver == "{D}" && {A}.missing',
    f'{A}.missing && device.driver == "{D}"',
    f'{A}.missing && device.driver == "{OTHER}"',
    f'{A}.missing || device.driver == "{D}"',
    f'{A}.missing || device.driver == "{OTHER}"',
    f'device.driver == "{OTHER}" || {A}.missing',
    f"{A}.missing || {A}.other",
    f'{A}["missing"] || {A}["other"]',
    f"{A}.missing && {A}.other",
    f"({A}.missing || {A}.other) || {A}.third",
    f"{A}.missing || ({A}.other || {A}.third)",
    f"({A}.missing && {A}.other) || {A}.mig",
    f"({A}.missing && {A}.other) || {A}.flag",
    f"!({A}.missing || {A}.other) && {A}.third",
    f'{A}.model == "A100" && {A}.index == 3 && {A}.mig',
    f'({A}.model == "H100" && {A}.index == 3) || !{A}.mig',
    f'{A}.model == "H100" && {A}.index == 3 || !{A}.mig',
    f'!({A}.model == "A100" || {A}.index == 4) || {A}.flag',
    f'{A}.model == 1 || {A}.mig',
    f'{A}.model == 1 && {A}.flag',
    f'{A}.model == 1 || {A}.missing',
    f'{A}.flag && {A}.model == 1',
    f"{A}.model && {A}.flag",
    f"{A}.model || {A}.mig",
    f"{A}.model || {A}.index",
    f'{C}.missing.compareTo(quantity("1")) >= 0 || {C}.memory.isLessThan(quantity("1"))',
    f'{C}.memory.compareTo(quantity("1")) >= 0 && ({A}.model == "A100" || {X}.numa == 7)',
    SIXTY,
    SIXTY.replace("model", "missing"),
]


def celpy_outcome(sel, view):
    try:
        if view.error:
            raise CelRuntimeError(view.error)
        return sel._evaluate(view)
    except CelRuntimeError as e:
        return f"error: {e.message}"


def matches_outcome(sel, view):
    try:
        return sel.matches(view)
    except CelRuntimeError as e:
        return f"error: {e.message}"


def native_outcome(sel, view):
    """The translated function alone: a bool, an error, or "fallback" (celpy will answer)."""
    if view.error:
        return f"error: {view.error}"
    try:
        return sel._native(view)
    except NativeError as e:
        return f"error: {e.message}"
    except NativeFallback:
        return "fallback"


@pytest.mark.parametrize("view_name", sorted(VIEWS))
@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_native_answers_exactly_as_celpy(expr, view_name):
    view = VIEWS[view_name]
    sel = compile_selector(expr)
    assert sel._native is not None, "every shape in the table is translated"
    expected = celpy_outcome(sel, view)
    assert matches_outcome(sel, view) == expected
    native = native_outcome(sel, view)
    assert native in ("fallback", expected)
    assert type(native) is type(expected) or native == "fallback"


@pytest.mark.parametrize("expr", [e for e in EXPRESSIONS if "model == 1" not in e and "model &&" not in e
                                  and "model ||" not in e])
def test_well_typed_devices_never_fall_back(expr):
    # On a device whose attributes have the types the expression compares against, celpy is not needed.
    view = VIEWS["full"]
    sel = compile_selector(expr)
    outcome = native_outcome(sel, view)
    type_mismatch = any(f"{A}.{name} {op} {lit}" in expr for name, op, lit in itertools.product(
        ("model", "index", "mig", "flag", "ver", "list", "neg"), ("==", "!="),
        ('"A100"', '"H100"', '""', "3", "0", "-1", "1", "true", "false")))
    bare_non_bool = any(s == expr or f"!{s}" == expr for s in (f"{A}.model", f"{A}.index", f"{X}.numa"))
    type_mismatch = type_mismatch or f"{A}.model.isGreaterThan(semver(" in expr
    if not type_mismatch and not bare_non_bool:
        assert outcome != "fallback", expr


def test_double_errors_report_the_first_operand_error_on_both_paths():
    sel = compile_selector(f'({A}["missing"] || {A}.other) || {A}.third')
    message = ("error: no such key: missing (consider using has() or the in operator to check whether "
               "the key exists)")
    assert matches_outcome(sel, VIEWS["full"]) == message
    assert celpy_outcome(sel, VIEWS["full"]) == message


@pytest.mark.parametrize("expr", [
    f'has({A}.model) && {A}.model == "A100"',
    f'{A}.model.startsWith("A")',
    "device.allowMultipleAllocations",
    f'{A}.mig ? true : false',
    f'"model" in {A}',
    f'{C}.memory == quantity("40Gi")',
    f'{C}.memory.compareTo(quantity("bogus")) >= 0',
    f'{C}.memory.compareTo(quantity("1Gi")) >= {A}.index',
    f'{A}.index < 4',
    f'{A}.index == 3u',
    f'{A}.model == "A100" || {A}.model.lowerAscii() == "a100"',
    'device.attributes.gpu.model == "A100"',  # a domain (gpu) selected as a field
    f'{A}.ver.isGreaterThan(semver("not-a-version"))',
    f'{A}.ver.isGreaterThan(semver("v1", true))',
    f'{A}.index + 1 == 4',
    f"{A}.model == {A}.model",
])
def test_other_expressions_still_use_celpy(expr):
    sel = compile_selector(expr)
    assert sel._native is None
    for view in VIEWS.values():
        assert matches_outcome(sel, view) == celpy_outcome(sel, view)


# --- random expressions of the supported grammar on random devices ---------------------------

_DOMAINS = st.sampled_from([D, "dra.example.com", "nowhere"])
_IDS = st.sampled_from(["model", "index", "mig", "flag", "memory", "missing"])
_LITS = st.sampled_from(['"A100"', '"H100"', '""', "0", "3", "-1", "true", "false"])
_QUANTITIES = st.sampled_from(["0", "100m", "1", "16Gi", "40Gi", "1.5", "1e3"])
_OPS = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])


@st.composite
def _access(draw, root):
    domain, ident = draw(_DOMAINS), draw(_IDS)
    return f'device.{root}["{domain}"]' + (f".{ident}" if draw(st.booleans()) else f'["{ident}"]')


@st.composite
def _leaf(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        n = draw(st.integers(-1, 1))
        return f'{draw(_access("capacity"))}.compareTo(quantity("{draw(_QUANTITIES)}")) {draw(_OPS)} {n}'
    if kind == 1:
        method = draw(st.sampled_from(["isGreaterThan", "isLessThan"]))
        return f'{draw(_access("capacity"))}.{method}(quantity("{draw(_QUANTITIES)}"))'
    if kind == 2:
        return f'{draw(_access("attributes"))} {draw(st.sampled_from(["==", "!="]))} {draw(_LITS)}'
    if kind == 3:
        return draw(_access("attributes"))
    return f'device.driver {draw(st.sampled_from(["==", "!="]))} "{draw(st.sampled_from([D, OTHER]))}"'


_EXPR = st.recursive(_leaf(), lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
    st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
    inner.map(lambda e: f"!({e})"),
), max_leaves=8)

_ATTR_VALUES = st.sampled_from([{"string": "A100"}, {"string": "H100"}, {"string": ""}, {"int": 0}, {"int": 3},
                                {"int": -1}, {"bool": True}, {"bool": False}, {"version": "1.0.0"},
                                {"ints": [1]}])
_NAMES = st.sampled_from(["model", "index", "mig", "flag", "memory", "dra.example.com/model",
                          "dra.example.com/mig", "dra.example.com/index"])


@st.composite
def _view(draw):
    driver = draw(st.sampled_from([D, OTHER]))
    attrs = draw(st.dictionaries(_NAMES, _ATTR_VALUES, max_size=6))
    caps = draw(st.dictionaries(_NAMES, _QUANTITIES.map(lambda q: {"value": q}), max_size=4))
    return device_view(driver, attrs, caps, draw(st.booleans()))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EXPR, st.lists(_view(), min_size=1, max_size=4))
def test_random_supported_expressions_match_celpy(expr, views):
    sel = compile_selector(expr)
    assert sel._native is not None, expr
    for view in views:
        expected = celpy_outcome(sel, view)
        assert matches_outcome(sel, view) == expected, (expr, view.attrs, view.caps, view.driver)
        assert native_outcome(sel, view) in ("fallback", expected)
