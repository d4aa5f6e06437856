"""The Kubernetes CEL extension functions DRA selectors use, on top of cel-python (``celpy``).

Owns the ``Quantity`` and ``Semver`` CEL values and the function table (quantity, semver and the
``ext.Strings``/lists helpers). Pure: no I/O. A function never raises on user data: a bad argument
becomes a ``CELEvalError`` *value*, which CEL's ``&&``/``||`` can absorb, as cel-go does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from functools import total_ordering
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from webhook.quantity import INT64_MAX, Quantity, QuantityError, parse_quantity


def err(message: str) -> CELEvalError:
    """A CEL error value carrying ``message`` (what CelRuntimeError will show)."""
    return CELEvalError(message, ValueError, None)


# --- Quantity ----------------------------------------------------------------------------------


class CelQuantity:
    """A Kubernetes ``Quantity`` as a CEL value (type name ``Quantity``)."""

    __slots__ = ("q",)
    cel_type = "Quantity"

    def __init__(self, q: Quantity) -> None:
        self.q = q

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelQuantity) and self.q.value == other.q.value

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.q.value)

    def __repr__(self) -> str:
        return f"quantity({str(self.q)!r})"


# --- Semver ------------------------------------------------------------------------------------

_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER_RE = re.compile(
    rf"({_NUM})\.({_NUM})\.({_NUM})(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\Z")
_LOOSE_RE = re.compile(r"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?([-+].*)?\Z")


@total_ordering
class CelSemver:
    """A semantic version (semver.org 2.0.0) as a CEL value (type name ``Semver``)."""

    __slots__ = ("major", "minor", "patch", "pre", "build")
    cel_type = "Semver"

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[str, ...] = (),
                 build: str = "") -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def _key(self) -> tuple[Any, ...]:
        """The precedence key of semver.org section 11."""
        # A release sorts after its pre-releases; numeric identifiers sort before alphanumeric.
        pre: tuple[tuple[int, int | str], ...] = tuple(
            (0, int(p)) if p.isdigit() else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        # Build metadata does not take part in precedence (semver.org section 10).
        return isinstance(other, CelSemver) and self._key() == other._key()

    def __lt__(self, other: CelSemver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(self.pre)
        return f"semver({s!r})"


def parse_semver(text: str, normalize: bool = False) -> CelSemver | None:
    """Strict semver 2.0.0 parse; with ``normalize`` a leading ``v``, missing minor/patch and
    leading zeros are tolerated (as the Kubernetes semver library does). None when invalid."""
    if normalize:
        m = _LOOSE_RE.match(text)
        if not m:
            return None
        rest = m.group(4) or ""
        text = ".".join(str(int(g or "0")) for g in m.group(1, 2, 3)) + rest
    m = _SEMVER_RE.match(text)
    if not m:
        return None
    major, minor, patch = (int(g) for g in m.group(1, 2, 3))
    # The Kubernetes library keeps the parts in uint64/int64: larger numbers do not parse.
    if max(major, minor, patch) > INT64_MAX:
        return None
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return CelSemver(major, minor, patch, pre, m.group(5) or "")


# --- functions -----------------------------------------------------------------------------


def _no_overload(name: str, *args: Any) -> CELEvalError:
    """cel-go's "no such overload" error value for a call with these argument types."""
    types = ", ".join(type_name(a) for a in args)
    return err(f"no such overload: {name}({types})")


def type_name(v: Any) -> str:
    """The CEL type name of a runtime value (for messages)."""
    if isinstance(v, (CelQuantity, CelSemver)):
        return v.cel_type
    names = {celtypes.BoolType: "bool", celtypes.IntType: "int", celtypes.UintType: "uint",
             celtypes.DoubleType: "double", celtypes.StringType: "string",
             celtypes.BytesType: "bytes", celtypes.ListType: "list", celtypes.MapType: "map"}
    for cls, name in names.items():
        if isinstance(v, cls):
            return name
    return "null" if v is None else type(v).__name__


def f_quantity(s: Any) -> Any:
    """``quantity(s)``: the Quantity ``s`` denotes, or an error value."""
    if not isinstance(s, celtypes.StringType):
        return _no_overload("quantity", s)
    try:
        return CelQuantity(parse_quantity(str(s)))
    except QuantityError as e:
        return err(f"quantity({str(s)!r}): {e}")


def f_is_quantity(s: Any) -> Any:
    """``isQuantity(s)``: whether ``s`` parses as a Quantity."""
    if not isinstance(s, celtypes.StringType):
        return _no_overload("isQuantity", s)
    try:
        parse_quantity(str(s))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def f_semver(s: Any, normalize: Any = None) -> Any:
    """``semver(s[, normalize])``: the Semver ``s`` denotes, or an error value."""
    if not isinstance(s, celtypes.StringType) or not (
            normalize is None or isinstance(normalize, celtypes.BoolType)):
        return _no_overload("semver", s)
    v = parse_semver(str(s), bool(normalize))
    return v if v is not None else err(f"semver({str(s)!r}): not a valid semantic version")


def f_is_semver(s: Any, normalize: Any = None) -> Any:
    """``isSemver(s[, normalize])``: whether ``s`` parses as a Semver."""
    if not isinstance(s, celtypes.StringType):
        return _no_overload("isSemver", s)
    return celtypes.BoolType(parse_semver(str(s), bool(normalize)) is not None)


def _operand(name: str, a: Any, b: Any) -> tuple[Any, Any] | CELEvalError:
    """The two comparable values of a quantity/semver method call, or an error value."""
    if isinstance(a, CelQuantity) and isinstance(b, CelQuantity):
        return a.q.value, b.q.value
    if isinstance(a, CelSemver) and isinstance(b, CelSemver):
        return a._key(), b._key()
    return _no_overload(name, a, b)


def f_compare_to(a: Any, b: Any) -> Any:
    """``a.compareTo(b)``: -1, 0 or 1 for two Quantities or two Semvers."""
    pair = _operand("compareTo", a, b)
    if isinstance(pair, CELEvalError):
        return pair
    x, y = pair
    return celtypes.IntType((x > y) - (x < y))


def f_is_greater_than(a: Any, b: Any) -> Any:
    """``a.isGreaterThan(b)`` for two Quantities or two Semvers."""
    pair = _operand("isGreaterThan", a, b)
    return pair if isinstance(pair, CELEvalError) else celtypes.BoolType(pair[0] > pair[1])


def f_is_less_than(a: Any, b: Any) -> Any:
    """``a.isLessThan(b)`` for two Quantities or two Semvers."""
    pair = _operand("isLessThan", a, b)
    return pair if isinstance(pair, CELEvalError) else celtypes.BoolType(pair[0] < pair[1])


def _arith(name: str, sign: int) -> Callable[[Any, Any], Any]:
    """``q.add(x)`` / ``q.sub(x)`` with a Quantity or an int."""
    def fn(a: Any, b: Any) -> Any:
        if not isinstance(a, CelQuantity):
            return _no_overload(name, a, b)
        other: Fraction | int
        if isinstance(b, CelQuantity):
            other = b.q.value
        elif isinstance(b, celtypes.IntType) and not isinstance(b, celtypes.BoolType):
            other = int(b)
        else:
            return _no_overload(name, a, b)
        return CelQuantity(a.q.with_value(a.q.value + sign * other))
    return fn


def f_as_integer(a: Any) -> Any:
    """``q.asInteger()``: an int64, or an error when not a whole number in range."""
    if not isinstance(a, CelQuantity):
        return _no_overload("asInteger", a)
    v = a.q.value
    if v.denominator != 1 or not (-INT64_MAX - 1 <= v <= INT64_MAX):
        return err("cannot convert value to integer")
    return celtypes.IntType(int(v))


def f_is_integer(a: Any) -> Any:
    """``q.isInteger()``: whether ``asInteger`` would succeed."""
    if not isinstance(a, CelQuantity):
        return _no_overload("isInteger", a)
    v = a.q.value
    return celtypes.BoolType(v.denominator == 1 and -INT64_MAX - 1 <= v <= INT64_MAX)


def f_as_approximate_float(a: Any) -> Any:
    """``q.asApproximateFloat()``: the nearest double."""
    if not isinstance(a, CelQuantity):
        return _no_overload("asApproximateFloat", a)
    return celtypes.DoubleType(float(a.q.value))


def f_sign(a: Any) -> Any:
    """``q.sign()``: -1, 0 or 1."""
    if not isinstance(a, CelQuantity):
        return _no_overload("sign", a)
    v = a.q.value
    return celtypes.IntType((v > 0) - (v < 0))


def _semver_part(name: str) -> Callable[[Any], Any]:
    """``v.major()`` / ``minor()`` / ``patch()``."""
    def fn(a: Any) -> Any:
        if not isinstance(a, CelSemver):
            return _no_overload(name, a)
        return celtypes.IntType(getattr(a, name))
    return fn


# --- ext.Strings and lists (the parts DRA users write) -----------------------------------------


def _str_fn(name: str, fn: Callable[..., Any], nargs: tuple[type, ...]) -> Callable[..., Any]:
    """A string extension: checks the receiver and argument types, turns Python errors into error values."""
    def wrapped(s: Any, *args: Any) -> Any:
        if not isinstance(s, celtypes.StringType) or len(args) > len(nargs) or not all(
                isinstance(a, t) for a, t in zip(args, nargs, strict=False)):
            return _no_overload(name, s, *args)
        try:
            return fn(str(s), *args)
        except (ValueError, IndexError) as e:  # an error value: && and || may still absorb it
            return err(f"{name}: {e}")
    return wrapped


def _ascii(s: str, upper: bool) -> celtypes.StringType:
    """ASCII-only case mapping, as ext.Strings does (other letters are left alone)."""
    table = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ") if upper else \
        str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
    return celtypes.StringType(s.translate(table))


def _substring(s: str, start: Any, end: Any = None) -> Any:
    """``s.substring(start[, end])``, in code points, erring outside the string."""
    stop = len(s) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(s):
        raise IndexError(f"index out of range: {int(start)}, {stop}")
    return celtypes.StringType(s[int(start):stop])


def _split(s: str, sep: Any, n: Any = None) -> celtypes.ListType:
    """``s.split(sep[, n])``: n < 0 means all parts, 0 none, else at most n."""
    if n is not None and int(n) == 0:  # Go's strings.SplitN: n == 0 gives no parts at all
        return celtypes.ListType([])
    parts = s.split(str(sep)) if (n is None or int(n) < 0) else s.split(str(sep), int(n) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _index_of(s: Any, sub: Any, last: bool = False) -> Any:
    """``indexOf``/``lastIndexOf`` of a substring in a string or an element in a list; -1 when absent."""
    if isinstance(s, celtypes.ListType):  # the lists extension: element positions
        idx = [i for i, x in enumerate(s) if x == sub]
        return celtypes.IntType((idx[-1] if last else idx[0]) if idx else -1)
    if isinstance(s, celtypes.StringType) and isinstance(sub, celtypes.StringType):
        return celtypes.IntType(str(s).rfind(str(sub)) if last else str(s).find(str(sub)))
    return _no_overload("lastIndexOf" if last else "indexOf", s, sub)


def _join(lst: Any, sep: Any = None) -> Any:
    """``list.join([sep])`` of a list of strings."""
    if not isinstance(lst, celtypes.ListType) or not all(isinstance(x, celtypes.StringType) for x in lst):
        return _no_overload("join", lst)
    return celtypes.StringType(("" if sep is None else str(sep)).join(str(x) for x in lst))


def _list_agg(name: str) -> Callable[[Any], Any]:
    """``isSorted``, ``sum``, ``min``, ``max`` of a list (mixed types are no overload)."""
    def fn(lst: Any) -> Any:
        if not isinstance(lst, celtypes.ListType):
            return _no_overload(name, lst)
        # Elements are any CEL values (ours included); mixed types raise TypeError below.
        items: list[Any] = list(lst)
        try:
            if name == "isSorted":
                return celtypes.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))
            if name == "sum":  # start from the first element so a list of doubles stays double
                return sum(items[1:], items[0]) if items else celtypes.IntType(0)
            if not items:
                return err(f"{name}(list) argument must not be empty")
            return min(items) if name == "min" else max(items)
        except TypeError:
            return _no_overload(name, lst)
    return fn


def _replace(s: str, old: Any, new: Any, n: Any = None) -> celtypes.StringType:
    """``s.replace(old, new[, n])``: at most n replacements (all when absent or negative)."""
    return celtypes.StringType(s.replace(str(old), str(new), -1 if n is None else int(n)))


_S, _I = celtypes.StringType, celtypes.IntType

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": f_quantity,
    "isQuantity": f_is_quantity,
    "semver": f_semver,
    "isSemver": f_is_semver,
    "compareTo": f_compare_to,
    "isGreaterThan": f_is_greater_than,
    "isLessThan": f_is_less_than,
    "add": _arith("add", 1),
    "sub": _arith("sub", -1),
    "asInteger": f_as_integer,
    "isInteger": f_is_integer,
    "asApproximateFloat": f_as_approximate_float,
    "sign": f_sign,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "lowerAscii": _str_fn("lowerAscii", lambda s: _ascii(s, False), ()),
    "upperAscii": _str_fn("upperAscii", lambda s: _ascii(s, True), ()),
    "trim": _str_fn("trim", lambda s: celtypes.StringType(s.strip()), ()),
    "replace": _str_fn("replace", _replace, (_S, _S, _I)),
    "split": _str_fn("split", _split, (_S, _I)),
    "substring": _str_fn("substring", _substring, (_I, _I)),
    "charAt": _str_fn("charAt", lambda s, i: celtypes.StringType(s[int(i)] if int(i) < len(s) else ""),
                      (_I,)),
    "indexOf": lambda s, sub: _index_of(s, sub),
    "lastIndexOf": lambda s, sub: _index_of(s, sub, last=True),
    "join": _join,
    "isSorted": _list_agg("isSorted"),
    "sum": _list_agg("sum"),
    "min": _list_agg("min"),
    "max": _list_agg("max"),
}
"""Extension functions by name; method calls ``x.f(y)`` arrive as ``f(x, y)``."""
