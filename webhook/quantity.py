"""Kubernetes resource quantities: strict parsing, exact arithmetic, upstream formatting.

One module for the rules and the allocator. Stdlib only; values are exact ``Fraction``s.

Differences from ``kubernetes.utils.quantity.parse_quantity`` (built on ``Decimal(str)``):
``NaN``, ``Infinity``, ``1_000`` and inner spaces are rejected, as the apiserver rejects them.
Surrounding whitespace is trimmed, as the apiserver's JSON decoder trims it. Precision finer
than one nano is rounded *up* to the next nano, as upstream ``ParseQuantity`` does.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache, total_ordering
from math import ceil
from typing import Any

INT64_MAX = 2**63 - 1

BINARY_SI = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in DECIMAL_SI.items()}

# <signedNumber><suffix>; exponent is an integer (upstream parses it with strconv.ParseInt).
_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)\Z"
)
# Exponents beyond this are refused: they cannot be represented by int64 arithmetic anywhere in
# Kubernetes and a huge exponent would make exact arithmetic expensive (a denial-of-service lever).
_EXPONENT_MAX = 1000
QUANTITY_LENGTH_MAX = 256

EXPECTED = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

BINARY, DECIMAL, EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


@total_ordering
class Quantity:
    """An exact quantity plus the format it was written in (which decides its canonical form)."""

    __slots__ = ("value", "format")

    def __init__(self, value: Fraction | int, fmt: str = DECIMAL) -> None:
        self.value = Fraction(value)
        self.format = fmt

    # -- comparison works on the exact value; "1Gi" == "1073741824" -----------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        if isinstance(other, (int, Fraction)):
            return self.value == other
        return NotImplemented

    def __lt__(self, other: Quantity | int) -> bool:
        return self.value < (other.value if isinstance(other, Quantity) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def __k8s_str__(self) -> str:  # used by fielderrors.render_value
        return str(self)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.format)

    def int_value(self) -> int:
        """Upstream ``Value()``: the value rounded up to an integer (away from zero is not used:
        upstream rounds toward +infinity for positive and negative alike)."""
        return ceil(self.value)

    def milli_value(self) -> int:
        """Upstream ``MilliValue()``: value × 1000, rounded up."""
        return ceil(self.value * 1000)

    def is_integer(self) -> bool:
        return self.value.denominator == 1

    def is_milli_exact(self) -> bool:
        """True when the value has no precision finer than 1m."""
        return (self.value * 1000).denominator == 1

    def with_value(self, value: Fraction | int) -> Quantity:
        return Quantity(value, self.format)


def parse_quantity(text: Any) -> Quantity:
    """Parse a quantity as the apiserver decodes one from JSON (string or number).

    Raises ``QuantityError`` with upstream's message for anything else. Results for strings
    are cached (objects repeat the same few quantities); treat a returned Quantity as
    immutable.
    """
    if type(text) is str:
        return _parse_text(text)
    return _parse(text)


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Quantity:
    return _parse(text)


def _parse(text: Any) -> Quantity:
    if isinstance(text, bool) or text is None:
        raise QuantityError(EXPECTED)
    if isinstance(text, int):
        return Quantity(text, DECIMAL)
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise QuantityError(EXPECTED)
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(EXPECTED)
    s = text.strip()
    if not s or len(s) > QUANTITY_LENGTH_MAX:
        raise QuantityError(EXPECTED if s else "quantities must not be empty")
    m = _GRAMMAR.match(s)
    if not m:
        # Go prints: quantities must match the regular expression ... ; keep that text.
        raise QuantityError(EXPECTED)
    sign, num, suffix = m.group("sign"), m.group("num"), m.group("suffix")
    if "." in num:
        whole, frac = num.split(".", 1)
        mantissa = Fraction(int((whole or "0") + frac), 10 ** len(frac)) if (whole + frac) else Fraction(0)
    else:
        mantissa = Fraction(int(num))
    if suffix in BINARY_SI:
        fmt, value = BINARY, mantissa * BINARY_SI[suffix]
    elif len(suffix) > 1 and suffix[0] in ("e", "E"):
        exp = int(suffix[1:])
        if abs(exp) > _EXPONENT_MAX:
            raise QuantityError("quantity exponent is out of range")
        fmt, value = EXPONENT, mantissa * Fraction(10) ** exp
    else:
        fmt, value = DECIMAL, mantissa * Fraction(10) ** DECIMAL_SI[suffix]
    if sign == "-":
        value = -value
    # Upstream rounds anything finer than a nano up to the next nano.
    if (value / _NANO).denominator != 1:
        value = Fraction(ceil(value / _NANO)) * _NANO
    return Quantity(value, fmt)


def try_parse(text: Any) -> Quantity | None:
    """``parse_quantity`` that answers ``None`` instead of raising."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def format_quantity(value: Fraction, fmt: str = DECIMAL) -> str:
    """Canonical text of a value, as upstream ``Quantity.String()`` prints it."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    v = abs(value)
    if fmt == BINARY and v.denominator == 1 and v >= 1024:
        n = v.numerator
        for suffix, base in reversed(BINARY_SI.items()):
            if n % base == 0:
                return f"{sign}{n // base}{suffix}"
    if fmt == BINARY and v.denominator == 1:
        return f"{sign}{v.numerator}"
    # Decimal forms: mantissa × 10^exp with exp a multiple of 3 and the mantissa an integer.
    exp = -9
    mant = v * 10**9
    # mant is an integer thanks to nano rounding at parse time; computed values are rounded up.
    mant_i = ceil(mant)
    while mant_i % 1000 == 0 and exp < (18 if fmt == DECIMAL else 10**6):
        mant_i //= 1000
        exp += 3
    if fmt == EXPONENT:
        return f"{sign}{mant_i}" + (f"e{exp}" if exp else "")
    if exp > 18:
        mant_i *= 10 ** (exp - 18)
        exp = 18
    return f"{sign}{mant_i}{_DECIMAL_BY_EXP[exp]}"


def canonical(text: Any) -> str:
    """Canonical form of a quantity text; the input itself when it does not parse."""
    q = try_parse(text)
    return str(q) if q is not None else str(text)
