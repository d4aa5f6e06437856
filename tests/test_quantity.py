"""The strict Quantity parser: grammar, canonical formatting, Value() rounding, comparisons."""

from __future__ import annotations

from fractions import Fraction

import pytest

from webhook.quantity import INT64_MAX, Quantity, QuantityError, canonical, parse_quantity, try_parse


@pytest.mark.parametrize(
    "text,value,canon",
    [
        pytest.param("1Gi", 2**30, "1Gi", id="binary"),
        pytest.param("1.5Gi", 3 * 2**29, "1536Mi", id="binary-fraction-rescaled"),
        pytest.param("100m", Fraction(1, 10), "100m", id="milli"),
        pytest.param("0.1", Fraction(1, 10), "100m", id="decimal-fraction"),
        pytest.param("1e3", 1000, "1e3", id="exponent"),
        pytest.param("1E3", 1000, "1e3", id="exponent-upper"),
        pytest.param("1E", 10**18, "1E", id="exa-suffix-not-exponent"),
        pytest.param("20E", 20 * 10**18, "20E", id="exa-suffix-multi-digit"),
        pytest.param("1000E", 10**21, "1000E", id="beyond-exa"),
        pytest.param("1.0", 1, "1", id="trailing-zero"),
        pytest.param("+5", 5, "5", id="plus-sign"),
        pytest.param("-1.5", Fraction(-3, 2), "-1500m", id="negative-fraction"),
        pytest.param(".5", Fraction(1, 2), "500m", id="leading-dot"),
        pytest.param(" 1Ki ", 1024, "1Ki", id="surrounding-space-trimmed"),
        pytest.param("0.0000000001", Fraction(1, 10**9), "1n", id="sub-nano-rounds-up"),
        pytest.param("1500m", Fraction(3, 2), "1500m", id="milli-over-one"),
        pytest.param(2.5, Fraction(5, 2), "2500m", id="json-float"),
        pytest.param(7, 7, "7", id="json-int"),
    ],
)
def test_parse_accepts(text: object, value: object, canon: str) -> None:
    q = parse_quantity(text)
    assert q.value == value
    assert str(q) == canon


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("NaN", id="nan"),
        pytest.param("Infinity", id="infinity"),
        pytest.param("-Inf", id="neg-inf"),
        pytest.param("1_000", id="underscore"),
        pytest.param("1 Gi", id="inner-space"),
        pytest.param("", id="empty"),
        pytest.param("1K", id="upper-k"),
        pytest.param("1ki", id="lower-ki"),
        pytest.param("0x10", id="hex"),
        pytest.param("5e", id="dangling-exponent"),
        pytest.param("1e1001", id="huge-exponent"),
        pytest.param(True, id="bool"),
        pytest.param(None, id="null"),
        pytest.param([1], id="list"),
        pytest.param(float("nan"), id="float-nan"),
        pytest.param("1.2.3", id="two-dots"),
    ],
)
def test_parse_rejects(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert try_parse(text) is None


@pytest.mark.parametrize(
    "text,value,milli",
    [
        pytest.param("100m", 1, 100, id="fraction-rounds-up"),
        pytest.param("1500m", 2, 1500, id="one-and-a-half"),
        pytest.param("2", 2, 2000, id="integer"),
        pytest.param("1n", 1, 1, id="nano-milli-rounds-up"),
        pytest.param("-1500m", -1, -1500, id="negative-rounds-toward-plus-infinity"),
    ],
)
def test_value_rounding(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert q.int_value() == value
    assert q.milli_value() == milli


def test_milli_exactness_and_integer() -> None:
    assert parse_quantity("1500m").is_milli_exact()
    assert not parse_quantity("1u").is_milli_exact()
    assert parse_quantity("2").is_integer()
    assert not parse_quantity("1.5").is_integer()


def test_comparisons() -> None:
    assert parse_quantity("1Gi") == parse_quantity("1073741824")
    assert parse_quantity("1k") == 1000
    assert parse_quantity("999m") < parse_quantity("1")
    assert parse_quantity("1Ki") > parse_quantity("1k")
    assert sorted([parse_quantity(x) for x in ("1Ki", "1", "500m")]) == [
        Quantity(Fraction(1, 2)),
        Quantity(1),
        Quantity(1024),
    ]
    assert len({parse_quantity("1Ki"), parse_quantity("1024")}) == 1


def test_arithmetic_keeps_first_format() -> None:
    assert str(parse_quantity("1M") + parse_quantity("8")) == "1000008"
    assert str(parse_quantity("1Gi") + parse_quantity("1Gi")) == "2Gi"


def test_canonical_and_max_int64() -> None:
    assert canonical("1.5Gi") == "1536Mi"
    assert canonical("not a quantity") == "not a quantity"
    assert parse_quantity(str(INT64_MAX)).int_value() == INT64_MAX
