"""Kubernetes resource quantities: upstream's parser restated, exact arithmetic, upstream formatting.

One module for the rules and the allocator. Stdlib only; values are exact ``Fraction``s.

Parsing follows the apiserver's JSON decoding of a ``resource.Quantity`` (1.37), quirks and all:

- the text is the raw JSON value: spaces around it are trimmed, but a character a JSON encoder
  escapes (a tab, a newline, a quote, a backslash) makes it unparsable;
- digits may be missing: ``Gi``, ``e3``, ``-`` and ``.`` are zero;
- a suffix is a decimal SI one (``n`` .. ``E``), a binary one (``Ki`` .. ``Ei``) or an exponent
  ``e``/``E`` with a signed int64 (read as int32, wrapping);
- precision finer than one nano is rounded away from zero, to the next nano;
- binary-suffixed values beyond MaxInt64 are capped at MaxInt64 (decimal ones are not).

Each parsed quantity also keeps upstream's internal form (an int64 amount with a scale, or an
arbitrary-precision decimal), which decides ``Value()``'s rounding and the text of ``AsDec()``.
Refused where upstream accepts (DoS guards, docs/upstream-differences.md): texts longer than
256 characters and exponents beyond ±1000.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache, total_ordering
from math import ceil
from typing import Any

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

BINARY_SI = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in DECIMAL_SI.items()}
_BINARY_BY_EXP = {i + 1: k for i, k in enumerate(BINARY_SI)}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_EXPONENT_MAX = 1000
QUANTITY_LENGTH_MAX = 256

EXPECTED = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
BAD_SUFFIX = "unable to parse quantity's suffix"
BAD_NUMBER = "unable to parse numeric part of quantity"

BINARY, DECIMAL, EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"
_NANO_SCALE = 9


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def _pow10(k: int) -> int:
    """10**k for k >= 0 (typed: ``int ** int`` may be a float to a type checker)."""
    return int(10**k)


def _scale_up(base: int, k: int) -> int:
    """Upstream ``positiveScaleInt64`` as ``ScaledValue`` reads it (the ok flag ignored): for 10,
    100, 1000, 10^6 and 10^9 one multiplication that wraps on overflow, for other powers a loop
    that gives up with 0."""
    if k == 0:
        return base
    if k in (1, 2, 3, 6, 9):
        return 0 if base == INT64_MIN else _wrap64(base * _pow10(k))
    result = base * _pow10(k)
    return result if INT64_MIN <= result <= INT64_MAX else 0


def _wrap64(v: int) -> int:
    """``v`` as a Go int64 after two's-complement overflow."""
    return (v + 2**63) % 2**64 - 2**63


def _go_int64_of_big(v: int) -> int:
    """Go ``big.Int.Int64()``: the low 64 bits of |v| as int64, then the sign."""
    low = _wrap64(abs(v) & (2**64 - 1))
    return _wrap64(-low) if v < 0 else low


@total_ordering
class Quantity:
    """An exact quantity, the format it was written in (which decides its canonical form) and,
    for parsed ones, upstream's internal form ``(decimal-backed, unscaled, scale)`` with
    ``value == unscaled / 10**scale``."""

    __slots__ = ("value", "format", "rep")

    def __init__(self, value: Fraction | int, fmt: str = DECIMAL,
                 rep: tuple[bool, int, int] | None = None) -> None:
        self.value = Fraction(value)
        self.format = fmt
        self.rep = rep

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

    def _rep(self) -> tuple[bool, int, int]:
        """Upstream's internal form; a computed quantity is an int64 amount when one fits."""
        if self.rep is not None:
            return self.rep
        v, scale = self.value, 0
        while v.denominator != 1 and scale < 64:
            v *= 10
            scale += 1
        unscaled = ceil(v)
        return v.denominator != 1 or not INT64_MIN <= unscaled <= INT64_MAX, unscaled, scale

    def as_dec(self) -> Quantity:
        """The same quantity once upstream's ``AsDec()`` made it decimal-backed (a ``Cmp`` does
        that to its receiver when either side is decimal-backed)."""
        dec, unscaled, scale = self._rep()
        return self if dec else Quantity(self.value, self.format, (True, unscaled, scale))

    @property
    def is_dec(self) -> bool:
        return self._rep()[0]

    def scaled_value(self, scale: int) -> int:
        """Upstream ``ScaledValue(scale)``: the value in units of 10**scale as a Go int64.

        Rounded up: away from zero for an int64 amount, truncation plus one for a negative
        decimal-backed value (upstream's rounding, sign surprises included), 0 or wrapped bits
        on overflow.
        """
        dec, unscaled, s = self._rep()
        if not dec:  # int64Amount{unscaled, -s}.AsScaledInt64(scale)
            a_scale = -s
            if a_scale < scale:
                k = scale - a_scale
                q, r = divmod(abs(unscaled), _pow10(k))
                q = q + 1 if r else q
                return q if unscaled >= 0 else -q
            return _scale_up(unscaled, a_scale - scale)
        dif = s + scale  # the decimal's scale minus the target's
        if dif == 0:
            return _go_int64_of_big(unscaled)
        if dif < 0:  # int64(math.Pow10(-dif)): past int64 the float converts to MinInt64 (amd64)
            factor = _pow10(-dif) if -dif <= 18 else INT64_MIN
            return _wrap64(_go_int64_of_big(unscaled) * factor)
        if unscaled < INT64_MAX and dif < 19:
            u, d = _go_int64_of_big(unscaled), _pow10(dif)
            q = abs(u) // d * (1 if u >= 0 else -1)  # Go division truncates
            return _wrap64(q + 1) if u - q * d else q
        q, r = divmod(unscaled, _pow10(dif))
        return _wrap64(_go_int64_of_big(q) + (1 if r else 0))

    def int_value(self) -> int:
        """Upstream ``Value()``."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Upstream ``MilliValue()``."""
        return self.scaled_value(-3)

    def dec_text(self) -> str:
        """Upstream ``AsDec().String()``: the exact decimal at its internal scale (``0.500``)."""
        _, unscaled, scale = self._rep()
        sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled))
        if scale <= 0:
            return sign + digits + ("0" * -scale if unscaled else "")
        digits = digits.rjust(scale + 1, "0")
        return f"{sign}{digits[:-scale]}.{digits[-scale:]}"

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
        text = str(text)
    elif isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise QuantityError(EXPECTED)
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(EXPECTED)
    s = text.strip(" ")
    if not s:
        raise QuantityError(EXPECTED)
    if len(s) > QUANTITY_LENGTH_MAX:
        raise QuantityError("quantities must be at most 256 characters")
    if s == "0":
        return Quantity(0, DECIMAL, (False, 0, 0))
    negative, number, num, denom, suffix = _split(s)
    base, exponent, fmt = _interpret(suffix)
    if fmt == BINARY:
        mantissa, scale = 2**exponent, 0
        precision = 14 - len(num) - exponent * 3 // 10 if not denom else -1
    else:
        mantissa, scale = 1, exponent
        precision = 18 - len(num) - len(denom)
    if precision >= 0 and scale - len(denom) >= -_NANO_SCALE:
        result = int(num + denom) * mantissa
        if result <= INT64_MAX:  # upstream's int64 fast path: exact, no rounding, no cap
            result = -result if negative else result
            scale -= len(denom)
            return Quantity(Fraction(result) * Fraction(10) ** scale, fmt, (False, result, -scale))
    return _parse_decimal(number, base, exponent, fmt)


def _parse_decimal(number: str, base: int, exponent: int, fmt: str) -> Quantity:
    """Upstream's arbitrary-precision path: round |x| up to a nano, cap binary values at MaxInt64."""
    body = number[1:] if number[:1] in ("+", "-") else number
    whole, dot, frac = body.partition(".")
    if not (whole + frac) or not set(whole + frac) <= _DIGITS:
        raise QuantityError(BAD_NUMBER)
    unscaled, scale = int(whole + frac), len(frac)
    if base == 10:
        scale -= exponent
    else:
        unscaled <<= exponent
    negative = number[:1] == "-" and unscaled != 0
    if unscaled:
        if scale > _NANO_SCALE:
            q, r = divmod(unscaled, 10 ** (scale - _NANO_SCALE))
            unscaled = q + 1 if r else q
        else:
            unscaled *= 10 ** (_NANO_SCALE - scale)
        scale = _NANO_SCALE
        if fmt == BINARY and unscaled > INT64_MAX * 10**_NANO_SCALE:
            unscaled, scale = INT64_MAX, 0
        if fmt == BINARY and unscaled < 10**scale:
            fmt = DECIMAL
    if negative:
        unscaled = -unscaled
    return Quantity(Fraction(unscaled, 10**scale) if scale >= 0 else Fraction(unscaled * 10**-scale),
                    fmt, (True, unscaled, scale))


def _split(s: str) -> tuple[bool, str, str, str, str]:
    """Upstream ``parseQuantityString``: (negative, numeric text, numerator without leading
    zeros, denominator, suffix)."""
    pos, end = 0, len(s)
    negative = s[0] == "-"
    if s[0] in "+-":
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos == end:
        return negative, "0", "0", "", ""
    start = pos
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    num = s[start:pos] or "0"
    if pos == end:
        return negative, s, num, "", ""
    denom = ""
    if s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
        if pos == end:
            return negative, s, num, denom, ""
    number, start = s[:pos], pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos != end:
        raise QuantityError(EXPECTED)
    return negative, number, num, denom, s[start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix; an exponent is a Go int64 read as int32."""
    if suffix in DECIMAL_SI:
        return 10, DECIMAL_SI[suffix], DECIMAL
    if suffix in BINARY_SI:
        return 2, BINARY_SI[suffix].bit_length() - 1, BINARY
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if not body or not set(body) <= _DIGITS or not INT64_MIN <= int(digits) <= INT64_MAX:
            raise QuantityError(BAD_SUFFIX)
        exponent = (int(digits) + 2**31) % 2**32 - 2**31
        if abs(exponent) > _EXPONENT_MAX:
            raise QuantityError("quantity exponent is out of range")
        return 10, exponent, EXPONENT
    raise QuantityError(BAD_SUFFIX)


def try_parse(text: Any) -> Quantity | None:
    """``parse_quantity`` that answers ``None`` instead of raising."""
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


def format_quantity(value: Fraction, fmt: str = DECIMAL) -> str:
    """Canonical text of a value, as upstream ``Quantity.String()`` prints it (for a value it
    did not keep the written text of).

    Binary: an integer of at least 1024 in units of the largest power of 1024 dividing it;
    otherwise decimal. Decimal: ``m × 10^e`` with ``e`` a multiple of 3 and ``m`` an integer,
    ``e`` as an SI suffix (DecimalSI) or ``e<n>`` (DecimalExponent). Upstream has no SI suffix
    beyond ``E`` and then prints the mantissa alone: ``10^21`` is ``"1"``.
    """
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    v = abs(value)
    if fmt == BINARY and v >= 1024 and v.denominator == 1:
        n, e = v.numerator, 0
        while n >= 1024 and n % 1024 == 0:
            n //= 1024
            e += 1
        return f"{sign}{n}{_BINARY_BY_EXP.get(e, '')}"
    e = 0
    while v.denominator != 1 and e > -_NANO_SCALE:
        v *= 10
        e -= 1
    m = ceil(v)  # computed values finer than a nano are rounded up
    while m % 10 == 0:
        m //= 10
        e += 1
    m, e = m * 10 ** (e % 3), e - e % 3
    if fmt == EXPONENT:
        return f"{sign}{m}" + (f"e{e}" if e else "")
    return f"{sign}{m}{_DECIMAL_BY_EXP.get(e, '')}"


def canonical(text: Any) -> str:
    """Canonical form of a quantity text; the input itself when it does not parse."""
    q = try_parse(text)
    return str(q) if q is not None else str(text)


def readable(value: Any) -> str:
    """A number as a person reads a quantity: ``10G`` for a multiple of 1000, ``8Gi`` for a
    power-of-two one (what ``explain`` and ``capacity`` print for counters and capacity)."""
    f = Fraction(value)
    return format_quantity(f, DECIMAL if f.denominator != 1 or f.numerator % 1000 == 0 else BINARY)
