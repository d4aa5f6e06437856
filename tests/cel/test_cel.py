"""CEL selectors: compile checks per supported form, evaluation on device views, runtime errors, cache."""

from __future__ import annotations

import threading

import celpy
import pytest

from webhook.cel import (
    CelCompileError,
    CelRuntimeError,
    Selector,
    cache_info,
    compile_result,
    compile_selector,
    device_view,
)

DRV = "gpu.example.com"
VIEW = device_view(
    DRV,
    {
        "model": {"string": "A100-SXM"},
        "index": {"int": 3},
        "mig": {"bool": True},
        "driverVersion": {"version": "1.4.0-rc.1"},
        "dra.example.com/numa": {"int": 0},
    },
    {"memory": {"value": "40Gi"}, "dra.example.com/bandwidth": {"value": "1500m"}},
    True,
)
MEM = f'device.capacity["{DRV}"].memory'
ATTR = f'device.attributes["{DRV}"]'

VALID_TRUE = [
    ('device.driver == "gpu.example.com"', "driver-equality"),
    (f'{ATTR}.model == "A100-SXM"', "string-attribute"),
    (f'{ATTR}["index"] == 3', "int-attribute-index-form"),
    (f"{ATTR}.mig", "bare-bool-attribute"),
    ('device.attributes["dra.example.com"].numa == 0', "qualified-attribute-own-domain"),
    ("device.allowMultipleAllocations", "allow-multiple"),
    (f'{MEM}.compareTo(quantity("16Gi")) >= 0', "quantity-compareTo"),
    (f'{MEM}.isGreaterThan(quantity("39Gi"))', "quantity-isGreaterThan"),
    (f'{MEM}.isLessThan(quantity("41Gi"))', "quantity-isLessThan"),
    (f'{MEM} == quantity("40960Mi")', "quantity-equality-by-value"),
    (f'{MEM}.add(quantity("1Gi")) == quantity("41Gi")', "quantity-add"),
    (f'{MEM}.sub(1073741824) == quantity("39Gi")', "quantity-sub-int"),
    (f"{MEM}.asInteger() == 42949672960", "quantity-asInteger"),
    (f"{MEM}.asApproximateFloat() > 4.0e10", "quantity-asApproximateFloat"),
    ('isQuantity("1Gi") && !isQuantity("1 Gi")', "isQuantity"),
    ('device.capacity["dra.example.com"].bandwidth.isInteger() == false', "quantity-isInteger"),
    (f'{ATTR}.driverVersion.isLessThan(semver("1.4.0"))', "semver-prerelease-sorts-first"),
    (f'{ATTR}.driverVersion.compareTo(semver("1.3.9")) == 1', "semver-compareTo"),
    (f'{ATTR}.driverVersion.isGreaterThan(semver("v1.3", true))', "semver-normalize"),
    (
        f"{ATTR}.driverVersion.major() == 1 && {ATTR}.driverVersion.minor() == 4 && "
        f"{ATTR}.driverVersion.patch() == 0",
        "semver-parts",
    ),
    ('isSemver("1.2.3") && !isSemver("v1.2") && isSemver("v1.2", true)', "isSemver"),
    (f'{ATTR}.model.matches("^A1[0-9]+")', "matches"),
    (f'{ATTR}.model.startsWith("A1") && {ATTR}.model.endsWith("SXM")', "startsWith-endsWith"),
    (f'{ATTR}.model.contains("100")', "contains"),
    (f'{ATTR}.model.lowerAscii() == "a100-sxm" && {ATTR}.model.upperAscii() == "A100-SXM"', "ascii-case"),
    (f'{ATTR}.model.split("-")[1] == "SXM" && {ATTR}.model.substring(0, 4) == "A100"', "split-substring"),
    (f'{ATTR}.model.replace("-", "_") == "A100_SXM" && {ATTR}.model.indexOf("-") == 4', "replace-indexOf"),
    (f"has({ATTR}.model) && !has({ATTR}.nope)", "has-macro"),
    (f'"model" in {ATTR} && !("x" in device.attributes)', "in-operator"),
    ('!(device.driver == "other" && device.attributes["other"].missing)', "and-short-circuits"),
    ('device.driver == "gpu.example.com" || device.attributes["other"].missing', "or-short-circuits"),
    ("[1, 2, 3].exists(x, x == 3) && [1, 2].all(x, x > 0)", "macros"),
    (f"size({ATTR}) == 4", "size-of-domain-map"),
    ('device.attributes["unknown.domain"] == {}', "missing-domain-is-empty-map"),
]


@pytest.mark.parametrize("expr", [pytest.param(e, id=i) for e, i in VALID_TRUE])
def test_supported_form_compiles_and_matches(expr: str) -> None:
    assert compile_selector(expr).matches(VIEW) is True


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        pytest.param("device.driver ==", "Syntax error", id="syntax-error"),
        pytest.param("device.vendor == 'x'", "undefined field 'vendor'", id="unknown-device-field"),
        pytest.param("gpu.memory > 1", "undeclared reference to 'gpu'", id="undeclared-variable"),
        pytest.param("device.driver.fancy()", "undeclared reference to 'fancy'", id="unknown-method"),
        pytest.param('nope("x")', "undeclared reference to 'nope'", id="unknown-function"),
        pytest.param("device.driver == 1", "no matching overload for '_==_'", id="type-mismatch-equality"),
        pytest.param(
            'quantity("1") < quantity("2")', "no matching overload for '_<_'", id="quantity-has-no-less-than"
        ),
        pytest.param(
            'quantity(1) == quantity("1")', "no matching overload for 'quantity'", id="quantity-of-int"
        ),
        pytest.param(
            'semver("1.0.0").compareTo(quantity("1"))',
            "no matching overload for 'compareTo'",
            id="compareTo-mixed-types",
        ),
        pytest.param(
            "device.driver.startsWith(1)", "no matching overload for 'startsWith'", id="bad-arg-type"
        ),
        pytest.param("has(device)", "invalid argument to has() macro", id="has-needs-selection"),
        pytest.param("device.driver", "must evaluate to bool", id="string-result"),
        pytest.param("1 + 2", "must evaluate to bool", id="int-result"),
        pytest.param("", "Syntax error", id="empty"),
        pytest.param("x" * 10241, "at most 10240 bytes", id="too-long"),
        pytest.param("(" * 300 + "true" + ")" * 300, "recursion limit", id="nesting-too-deep"),
    ],
)
def test_invalid_expression_is_a_compile_error(expr: str, fragment: str) -> None:
    with pytest.raises(CelCompileError) as info:
        compile_selector(expr)
    assert fragment in info.value.message


def test_cost_limit_marks_too_complex() -> None:
    big = "[" + ",".join(["1"] * 40) + "]"
    with pytest.raises(CelCompileError) as info:
        compile_selector(f"{big}.all(a, {big}.all(b, {big}.all(c, {big}.all(d, a == d))))")
    assert info.value.too_complex and info.value.message == "too complex, exceeds cost limit"


def test_long_chain_within_limits_compiles() -> None:
    expr = " || ".join(f'device.attributes["{DRV}"].model == "m{i}"' for i in range(150))
    assert compile_selector(expr).matches(VIEW) is False


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        pytest.param(f"{ATTR}.nope", "no such key: nope", id="missing-key-dot"),
        pytest.param(f'{ATTR}["nope"] == 1', "no such key: nope", id="missing-key-index"),
        pytest.param(f"{ATTR}.model", "could not be converted to bool", id="non-bool-result"),
        pytest.param('quantity("lots").isInteger()', "quantity", id="bad-quantity-literal"),
        pytest.param('semver("1.0").major() == 1', "semver", id="bad-semver-literal"),
        pytest.param(
            f'{ATTR}.model.compareTo(quantity("1")) == 0', "no such overload", id="dyn-wrong-receiver"
        ),
    ],
)
def test_runtime_errors(expr: str, fragment: str) -> None:
    sel = compile_selector(expr)
    with pytest.raises(CelRuntimeError) as info:
        sel.matches(VIEW)
    assert fragment in info.value.message


def test_attribute_without_value_fails_every_selector() -> None:
    view = device_view(DRV, {"empty": {}}, {}, False)
    with pytest.raises(CelRuntimeError, match="unsupported attribute value"):
        compile_selector("true").matches(view)


def test_unqualified_names_filed_under_driver_domain() -> None:
    view = device_view("other.io", {"model": {"string": "x"}}, {"mem": {"value": "1"}}, False)
    assert compile_selector(
        'device.attributes["other.io"].model == "x" && device.capacity["other.io"].mem == quantity("1")'
    ).matches(view)


def test_list_attributes_convert() -> None:
    view = device_view(DRV, {"ids": {"ints": [1, 2]}, "vs": {"versions": ["1.0.0"]}}, {}, False)
    assert compile_selector(f'2 in {ATTR}.ids && {ATTR}.vs[0] == semver("1.0.0")').matches(view)


def test_compiled_selectors_are_cached() -> None:
    expr = 'device.driver == "cache-me"'
    first = compile_selector(expr)
    assert compile_selector(expr) is first
    entries, capacity = cache_info()
    assert 0 < entries <= capacity


def test_compile_errors_are_cached_too() -> None:
    with pytest.raises(CelCompileError) as a:
        compile_selector("device.cached_error")
    with pytest.raises(CelCompileError) as b:
        compile_selector("device.cached_error")
    assert a.value is b.value


def test_matches_is_thread_safe() -> None:
    sel = compile_selector(f'{MEM}.compareTo(quantity("16Gi")) >= 0')
    results: list[bool] = []

    def work() -> None:
        results.extend(sel.matches(VIEW) for _ in range(20))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 80


def test_and_of_two_failing_operands_reports_the_first_error_like_cel_go():
    from webhook.cel import CelRuntimeError, compile_selector, device_view

    sel = compile_selector('device.attributes["d"].type == "mig" && device.attributes["d"].profile == "x"')
    view = device_view("d", {"other": {"string": "x"}}, {}, False)
    with pytest.raises(CelRuntimeError, match=r"^no such key: type \(consider using has\(\)"):
        sel.matches(view)


GUARDED = [
    'device.driver == "gpu.example.com"',
    "device.driver == 'gpu.example.com'",
    ' device.driver=="gpu.example.com"  ',
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100"',
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].missing == 1',
    'device.driver == "gpu.example.com" && false || true',
    'device.driver == "gpu.example.com" && (true || false)',
    'device.driver == "gpu.example.com" ? true : false',
    'device.driver == "x" || true',
]


@pytest.mark.parametrize("expr", GUARDED)
@pytest.mark.parametrize("driver", ["gpu.example.com", "other.example.com"])
def test_native_driver_guard_answers_exactly_as_cel(expr, driver):
    from webhook.cel import CelRuntimeError, compile_selector, device_view
    from webhook.cel.compile import _runtime_message

    sel = compile_selector(expr)
    view = device_view(driver, {"model": {"string": "A100"}}, {}, False)

    def outcome(fn):
        try:
            return bool(fn())
        except CelRuntimeError as e:
            return f"error: {e}"

    def plain_cel():
        import celpy
        try:
            return sel._program.evaluate({"device": view.value})
        except celpy.CELEvalError as e:
            raise CelRuntimeError(_runtime_message(e)) from None

    assert outcome(lambda: sel.matches(view)) == outcome(plain_cel)


@pytest.mark.parametrize("depth", [200, 600, 1200], ids=lambda d: f"parens-{d}")
def test_deep_expression_compiles_after_another_celpy_environment(depth: int) -> None:
    """Building a celpy.Environment lowers the process's recursion limit to 2500; a deep (but
    allowed) expression compiled afterwards still gets an answer, not a RecursionError (found by
    the generated claims: a test had built its own environment)."""
    celpy.Environment()
    expr = "(" * depth + "device.driver == 'a' || true" + ")" * depth
    got = compile_result(expr + " " * (depth % 7))
    assert isinstance(got, Selector | CelCompileError)
