"""The strict Quantity parser: grammar, canonical formatting, Value() rounding, comparisons."""

from __future__ import annotations

from fractions import Fraction

import pytest

from webhook.quantity import INT64_MAX, INT64_MIN, Quantity, QuantityError, canonical, parse_quantity, try_parse


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
        pytest.param("1000E", 10**21, "1", id="beyond-exa-prints-without-suffix"),
        pytest.param("1.0", 1, "1", id="trailing-zero"),
        pytest.param("+5", 5, "5", id="plus-sign"),
        pytest.param("-1.5", Fraction(-3, 2), "-1500m", id="negative-fraction"),
        pytest.param(".5", Fraction(1, 2), "500m", id="leading-dot"),
        pytest.param(" 1Ki ", 1024, "1Ki", id="surrounding-space-trimmed"),
        pytest.param("0.0000000001", Fraction(1, 10**9), "1n", id="sub-nano-rounds-up"),
        pytest.param("1500m", Fraction(3, 2), "1500m", id="milli-over-one"),
        pytest.param(2.5, Fraction(5, 2), "2500m", id="json-float"),
        pytest.param(7, 7, "7", id="json-int"),
        # Found by the differential tests (issue 15): upstream's parser, quirks and all.
        pytest.param("Gi", 0, "0", id="suffix-without-digits-is-zero"),
        pytest.param("e3", 0, "0", id="exponent-without-digits-is-zero"),
        pytest.param("-", 0, "0", id="sign-alone-is-zero"),
        pytest.param(".", 0, "0", id="dot-alone-is-zero"),
        pytest.param("-.Gi", 0, "0", id="sign-dot-suffix-is-zero"),
        pytest.param("5.Gi", 5 * 2**30, "5Gi", id="trailing-dot-before-suffix"),
        pytest.param("8Ei", INT64_MAX, "9223372036854775807", id="binary-capped-at-int64-max"),
        pytest.param("-16Ei", -INT64_MAX, "-9223372036854775807", id="negative-binary-capped"),
        pytest.param("9223372036854775808Ki", INT64_MAX, "9223372036854775807", id="binary-digits-capped"),
        pytest.param("10E", 10**19, "10E", id="decimal-not-capped"),
        pytest.param("-0.5n", Fraction(-1, 10**9), "-1n", id="negative-sub-nano-rounds-away-from-zero"),
        pytest.param("-1.0000000001", Fraction(-1000000001, 10**9), "-1000000001n",
                     id="negative-rounds-away-from-zero"),
        pytest.param("1e0003", 1000, "1e3", id="exponent-leading-zeros"),
        pytest.param("1E+3", 1000, "1e3", id="exponent-plus-sign"),
        pytest.param("1e-0", 1, "1", id="exponent-minus-zero"),
        pytest.param("1e4294967297", 10, "10", id="exponent-read-as-int32"),
        pytest.param("00", 0, "0", id="zeros"),
        pytest.param("1" + "0" * 21, 10**21, "1", id="digits-beyond-exa"),
        pytest.param(1e20, 10**20, "100e18", id="json-float-exponent"),
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
        pytest.param("\t2Gi", id="tab-is-escaped-in-json"),
        pytest.param("1\n", id="newline-is-escaped-in-json"),
        pytest.param("5.e", id="dot-dangling-exponent"),
        pytest.param("e", id="lone-e"),
        pytest.param("1e+", id="exponent-sign-only"),
        pytest.param("1e9223372036854775808", id="exponent-beyond-int64"),
        pytest.param("1Ki2", id="binary-suffix-with-digits"),
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
        pytest.param("-1500m", -2, -1500, id="negative-int64-rounds-away-from-zero"),
        pytest.param("-0.5", -1, -500, id="negative-half-away-from-zero"),
        pytest.param("10E", 0, 0, id="overflow-reads-zero"),
        pytest.param("1.0000000001e19", 10000000001 * 10**9 - 2**64, 0, id="overflow-by-10-to-the-9-wraps"),
        pytest.param("10000000000k", 10**13, 10**16, id="times-1000-exact"),
        pytest.param("10000000000000000k", -8446744073709551616, 1864712049423024128, id="times-1000-wraps"),
        pytest.param("-1.5Gi", -1610612736, -1610612736000, id="decimal-backed-negative-integer"),
        pytest.param("-0.5Ki", -512, -512000, id="decimal-backed-negative-binary"),
        pytest.param("-0.0000000005Ki", 1, 1, id="decimal-backed-negative-truncates-then-adds-one"),
        pytest.param("8Ei", INT64_MAX, -1000, id="milli-of-capped-wraps"),
        pytest.param("-0Ei", 0, 0, id="decimal-backed-zero"),
    ],
)
def test_value_rounding(text: str, value: int, milli: int) -> None:
    """Upstream ``Value()``/``MilliValue()``: an int64 amount rounds away from zero; a
    decimal-backed one truncates and adds one (#110653); overflow reads 0 or wraps."""
    q = parse_quantity(text)
    assert q.int_value() == value
    assert q.milli_value() == milli


@pytest.mark.parametrize(
    "text,dec,backed",
    [
        pytest.param("0", "0", False, id="zero"),
        pytest.param("0m", "0.000", False, id="zero-milli-keeps-scale"),
        pytest.param("0.5", "0.5", False, id="half"),
        pytest.param("500m", "0.500", False, id="half-in-milli"),
        pytest.param("1k", "1000", False, id="kilo"),
        pytest.param("1Gi", "1073741824", False, id="binary"),
        pytest.param("1.5Gi", "1610612736.000000000", True, id="binary-fraction-decimal-backed"),
        pytest.param("1" + "0" * 20, "100000000000000000000.000000000", True, id="many-digits"),
        pytest.param("0e-10", "0.0000000000", True, id="zero-below-nano-keeps-scale"),
    ],
)
def test_upstream_internal_form(text: str, dec: str, backed: bool) -> None:
    """``AsDec().String()`` keeps the scale the quantity was parsed at (validValues keys)."""
    q = parse_quantity(text)
    assert (q.dec_text(), q.is_dec) == (dec, backed)
    assert q.as_dec().is_dec and q.as_dec().dec_text() == dec


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


def test_decimal_backed_value_scaled_past_int64() -> None:
    """Upstream scales a decimal up with ``int64(math.Pow10(n))``, which past int64 is MinInt64
    on amd64: 12e19 reads as 12 × MinInt64 = 0, 1e19 as MinInt64 (found at DIFF_SCALE=25)."""
    assert parse_quantity("+00012e19").as_dec().int_value() == 0
    assert parse_quantity("1e19").as_dec().int_value() == INT64_MIN
    assert parse_quantity("1e18").as_dec().int_value() == 10**18
