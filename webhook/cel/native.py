"""Native (pure Python) evaluation of the most common DRA selector shapes.

celpy interprets a selector in 100-300 µs per device. ``translate`` walks the parse tree once at
compile time and, when *every* node is one of the shapes below, returns a plain Python function
of the device that gives the same answer in about a microsecond:

* ``device.capacity["d"].id.compareTo(quantity("q")) <op> <int>`` (op: == != < <= > >=),
  ``device.capacity["d"].id.isGreaterThan(quantity("q"))`` / ``isLessThan``;
* ``device.attributes["d"].id == <lit>`` / ``!=`` (string, int or bool literal; either side);
* a bare ``device.attributes["d"].id``;
* ``device.driver == "lit"`` / ``!=``;
* ``&&``, ``||``, ``!`` and parentheses over these. ``["id"]`` works wherever ``.id`` does.

Anything else is not translated (``translate`` returns None) and celpy evaluates it as before.

Semantics are CEL's as implemented by our celpy program: a missing domain is an empty map, a
missing key raises ``NativeError`` with the "no such key" text, ``&&``/``||`` absorb errors
(``false && err`` is false, ``true || err`` is true, otherwise the leftmost error wins). Where
celpy's answer depends on run-time types we do not reproduce (an attribute compared with a
literal of another type, a bare attribute that is not a bool), the function raises
``NativeFallback`` and the caller evaluates the whole expression with celpy, so those rare
devices get exactly today's answer. Pure: no I/O.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Protocol

import lark
from celpy import celtypes
from celpy.evaluation import celstr

from webhook.cel.library import CelSemver, parse_semver
from webhook.quantity import QuantityError, parse_quantity


class NativeError(Exception):
    """A CEL runtime error; ``message`` is the text CelRuntimeError carries."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NativeFallback(Exception):
    """This device needs celpy (an operand has a type the native path does not model)."""


class NativeDevice(Protocol):
    """What the native evaluator reads of a device (``DeviceView`` provides it)."""
    driver: str
    attrs: Mapping[str, Mapping[str, Any]]
    caps: Mapping[str, Mapping[str, Any]]


NativeEval = Callable[[NativeDevice], bool]
"""Returns the selector's value; raises NativeError or NativeFallback."""

_EMPTY: Mapping[str, Any] = {}
_WRAPPERS = frozenset(("expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "unary", "member", "primary"))
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "relation_eq": operator.eq, "relation_ne": operator.ne, "relation_lt": operator.lt,
    "relation_le": operator.le, "relation_gt": operator.gt, "relation_ge": operator.ge}
_MIRROR = {"relation_eq": "relation_eq", "relation_ne": "relation_ne", "relation_lt": "relation_gt",
           "relation_le": "relation_ge", "relation_gt": "relation_lt", "relation_ge": "relation_le"}
_SCALARS = (celtypes.StringType, celtypes.IntType, celtypes.BoolType)


def no_such_key(key: str) -> str:
    """CEL's runtime error text for a missing map key."""
    return f"no such key: {key} (consider using has() or the in operator to check whether the key exists)"


# --- parse-tree recognisers -----------------------------------------------------------------
# Operand descriptors: ("lit", value) | ("driver",) | ("ref", field, domain, id)
#                      | ("cmp", domain, id, quantity value)   # x.compareTo(quantity(..))


def _unwrap(node: Any) -> Any:
    """Skip single-child precedence wrappers and parentheses."""
    while isinstance(node, lark.Tree):
        ch = node.children
        if node.data in _WRAPPERS and len(ch) == 1 and isinstance(ch[0], lark.Tree):
            node = ch[0]
        elif node.data == "paren_expr" and len(ch) == 1:
            node = ch[0]
        else:
            break
    return node


def _literal(node: Any) -> Any:
    """The celpy value of a string/int/bool literal, else None."""
    n = _unwrap(node)
    if not (isinstance(n, lark.Tree) and n.data == "literal" and len(n.children) == 1):
        return None
    tok = n.children[0]
    if not isinstance(tok, lark.Token):
        return None
    try:
        if tok.type in ("STRING_LIT", "MLSTRING_LIT"):
            return celstr(tok)
        if tok.type == "INT_LIT":
            return celtypes.IntType(tok.value)
        if tok.type == "BOOL_LIT":
            return celtypes.BoolType(tok.value.lower() == "true")
    except ValueError:  # celpy makes this an error value at run time: leave it to celpy
        return None
    return None


def _device_field(node: Any) -> str | None:
    """The field name when ``node`` is ``device.<field>``, else None."""
    n = _unwrap(node)
    if not (isinstance(n, lark.Tree) and n.data == "member_dot" and len(n.children) == 2):
        return None
    base = _unwrap(n.children[0])
    if (isinstance(base, lark.Tree) and base.data == "ident" and len(base.children) == 1
            and str(base.children[0]) == "device"):
        return str(n.children[1])
    return None


def _string_key(node: Any) -> str | None:
    """The value of a string literal used as a map key, else None."""
    lit = _literal(node)
    return str(lit) if isinstance(lit, celtypes.StringType) else None


def _ref(node: Any) -> tuple[str, str, str] | None:
    """(field, domain, id) for device.attributes["d"].id / device.capacity["d"]["id"]."""
    n = _unwrap(node)
    if not isinstance(n, lark.Tree) or len(n.children) != 2:
        return None
    if n.data == "member_dot":
        ident: str | None = str(n.children[1])
    elif n.data == "member_index":
        ident = _string_key(n.children[1])
    else:
        return None
    dom = _unwrap(n.children[0])
    if ident is None or not (isinstance(dom, lark.Tree) and dom.data == "member_index"
                             and len(dom.children) == 2):
        return None
    field = _device_field(dom.children[0])
    domain = _string_key(dom.children[1])
    if field not in ("attributes", "capacity") or domain is None:
        return None
    return field, domain, ident


def _exprs(node: Any) -> list[Any]:
    """The expression children of an (optional) expression list."""
    if not isinstance(node, lark.Tree):  # an omitted optional exprlist is None
        return []
    return [c for c in node.children if isinstance(c, lark.Tree)]


def _method_call(node: Any, source: str, function: str) -> tuple[str, str, str, str] | None:
    """(method, domain, id, literal) for ``device.<source>["d"].id.<method>(<function>("literal"))``."""
    n = _unwrap(node)
    if not (isinstance(n, lark.Tree) and n.data == "member_dot_arg" and len(n.children) == 3):
        return None
    ref = _ref(n.children[0])
    args = _exprs(n.children[2])
    if ref is None or ref[0] != source or len(args) != 1:
        return None
    call = _unwrap(args[0])
    if not (isinstance(call, lark.Tree) and call.data == "ident_arg" and len(call.children) == 2
            and str(call.children[0]) == function):
        return None
    fargs = _exprs(call.children[1])
    text = _literal(fargs[0]) if len(fargs) == 1 else None
    if not isinstance(text, celtypes.StringType):
        return None
    return str(n.children[1]), ref[1], ref[2], str(text)


def _quantity_method(node: Any) -> tuple[str, str, str, Fraction] | None:
    """(method, domain, id, value) for device.capacity["d"].id.<method>(quantity("q"))."""
    m = _method_call(node, "capacity", "quantity")
    if m is None:
        return None
    try:
        value = parse_quantity(m[3]).value
    except QuantityError:  # celpy reports the bad literal per device: leave it to celpy
        return None
    return m[0], m[1], m[2], value


def _semver_method(node: Any) -> tuple[str, str, str, tuple[Any, ...]] | None:
    """(method, domain, id, version key) for device.attributes["d"].id.<method>(semver("v"))."""
    m = _method_call(node, "attributes", "semver")
    if m is None:
        return None
    version = parse_semver(m[3])
    if version is None:  # celpy reports the bad literal per device: leave it to celpy
        return None
    return m[0], m[1], m[2], version._key()


def _operand(node: Any) -> tuple[Any, ...] | None:
    """A descriptor of a comparison operand the native path can evaluate, else None."""
    lit = _literal(node)
    if lit is not None:
        return ("lit", lit)
    if _device_field(node) == "driver":
        return ("driver",)
    ref = _ref(node)
    if ref is not None:
        return ("ref", *ref)
    m = _quantity_method(node)
    if m is not None and m[0] == "compareTo":
        return ("cmp", *m[1:])
    v = _semver_method(node)
    if v is not None and v[0] == "compareTo":
        return ("scmp", *v[1:])
    return None


# --- evaluators ------------------------------------------------------------------------------


def _lookup(table: Mapping[str, Mapping[str, Any]], domain: str, ident: str) -> Any:
    """A device's attribute or capacity value; the "no such key" error when absent."""
    v = table.get(domain, _EMPTY).get(ident)
    if v is None:
        raise NativeError(no_such_key(ident))
    return v


def _driver_eq(lit: str, negate: bool) -> NativeEval:
    """``device.driver == lit`` (or ``!=``)."""
    def ev(d: NativeDevice) -> bool:
        return (d.driver == lit) is not negate
    return ev


def _attr_eq(domain: str, ident: str, lit: Any, negate: bool) -> NativeEval:
    """``attribute == lit`` (or ``!=``); another runtime type is left to celpy."""
    want = type(lit)
    # Compare plain str/int (the unbound methods skip celpy's operator dispatch).
    eq: Callable[[Any, Any], bool] = str.__eq__ if want is celtypes.StringType else int.__eq__
    plain: Any = str(lit) if want is celtypes.StringType else int(lit)

    def ev(d: NativeDevice) -> bool:
        v = d.attrs.get(domain, _EMPTY).get(ident)
        if v is None:
            raise NativeError(no_such_key(ident))
        if type(v) is not want:  # e.g. an int attribute compared with a string: celpy decides
            raise NativeFallback
        return eq(v, plain) is not negate
    return ev


def _attr_bool(domain: str, ident: str) -> NativeEval:
    """A bare bool attribute as the condition."""
    def ev(d: NativeDevice) -> bool:
        v = d.attrs.get(domain, _EMPTY).get(ident)
        if v is None:
            raise NativeError(no_such_key(ident))
        if type(v) is not celtypes.BoolType:
            raise NativeFallback
        return bool(v)
    return ev


def _cap_compare(domain: str, ident: str, q: Fraction, op: Callable[[Any, Any], bool], rhs: int) -> NativeEval:
    """``capacity.compareTo(quantity(q)) <op> rhs``."""
    def ev(d: NativeDevice) -> bool:
        x = _lookup(d.caps, domain, ident).q.value
        return op((x > q) - (x < q), rhs)
    return ev


def _cap_method(domain: str, ident: str, q: Fraction, greater: bool) -> NativeEval:
    """``capacity.isGreaterThan/isLessThan(quantity(q))``."""
    def ev(d: NativeDevice) -> bool:
        x = _lookup(d.caps, domain, ident).q.value
        return bool(x > q if greater else x < q)
    return ev


def _version_key(d: NativeDevice, domain: str, ident: str) -> tuple[Any, ...]:
    """The precedence key of a version attribute; non-versions are left to celpy."""
    v = d.attrs.get(domain, _EMPTY).get(ident)
    if v is None:
        raise NativeError(no_such_key(ident))
    if not isinstance(v, CelSemver):
        raise NativeFallback
    return v._key()


def _semver_compare(domain: str, ident: str, key: tuple[Any, ...], op: Callable[[Any, Any], bool],
                    rhs: int) -> NativeEval:
    """``version.compareTo(semver(v)) <op> rhs``."""
    def ev(d: NativeDevice) -> bool:
        x = _version_key(d, domain, ident)
        return op((x > key) - (x < key), rhs)
    return ev


def _semver_method_eval(domain: str, ident: str, key: tuple[Any, ...], greater: bool) -> NativeEval:
    """``version.isGreaterThan/isLessThan(semver(v))``."""
    def ev(d: NativeDevice) -> bool:
        x = _version_key(d, domain, ident)
        return bool(x > key if greater else x < key)
    return ev


def _not(inner: NativeEval) -> NativeEval:
    """``!x``."""
    def ev(d: NativeDevice) -> bool:
        return not inner(d)
    return ev


def _any(terms: tuple[NativeEval, ...]) -> NativeEval:
    """``t1 || t2 || ...``: true if any term is true, else the leftmost error, else false."""
    def ev(d: NativeDevice) -> bool:
        first: NativeError | None = None
        for t in terms:
            try:
                if t(d):
                    return True
            except NativeError as e:
                if first is None:
                    first = e
        if first is not None:
            raise first
        return False
    return ev


def _all(terms: tuple[NativeEval, ...]) -> NativeEval:
    """``t1 && t2 && ...``: false if any term is false, else the leftmost error, else true."""
    def ev(d: NativeDevice) -> bool:
        first: NativeError | None = None
        for t in terms:
            try:
                if not t(d):
                    return False
            except NativeError as e:
                if first is None:
                    first = e
        if first is not None:
            raise first
        return True
    return ev


# --- translation -----------------------------------------------------------------------------


def translate(tree: lark.ParseTree) -> NativeEval | None:
    """A native evaluator equivalent to the celpy program for ``tree``, or None."""
    return _bool(tree)


def _chain(node: Any, data: str, out: list[Any]) -> None:
    """Flatten ``a || b || c`` (left-nested, possibly parenthesised) into its operands."""
    n = _unwrap(node)
    if isinstance(n, lark.Tree) and n.data == data and len(n.children) == 2:
        _chain(n.children[0], data, out)
        _chain(n.children[1], data, out)
    else:
        out.append(node)


def _bool(node: Any) -> NativeEval | None:
    """A native evaluator for a boolean node, or None when any part is not a known shape."""
    n = _unwrap(node)
    if not isinstance(n, lark.Tree):
        return None
    ch = n.children
    if n.data in ("conditionalor", "conditionaland") and len(ch) == 2:
        parts: list[Any] = []
        _chain(n, n.data, parts)
        terms = [_bool(p) for p in parts]
        if any(t is None for t in terms):  # one unknown term: the whole chain goes to celpy
            return None
        done = tuple(t for t in terms if t is not None)
        return _any(done) if n.data == "conditionalor" else _all(done)
    if n.data == "unary" and len(ch) == 2 and isinstance(ch[0], lark.Tree) and ch[0].data == "unary_not":
        inner = _bool(ch[1])
        return None if inner is None else _not(inner)
    if n.data == "relation" and len(ch) == 2 and isinstance(ch[0], lark.Tree) and ch[0].data in _OPS \
            and len(ch[0].children) == 1:
        return _relation(ch[0].data, ch[0].children[0], ch[1])
    if n.data == "member_dot_arg":
        m = _quantity_method(n)
        if m is not None and m[0] in ("isGreaterThan", "isLessThan"):
            return _cap_method(m[1], m[2], m[3], m[0] == "isGreaterThan")
        v = _semver_method(n)
        if v is not None and v[0] in ("isGreaterThan", "isLessThan"):
            return _semver_method_eval(v[1], v[2], v[3], v[0] == "isGreaterThan")
        return None
    ref = _ref(n)
    if ref is not None and ref[0] == "attributes":
        return _attr_bool(ref[1], ref[2])
    return None


def _relation(op: str, left_node: Any, right_node: Any) -> NativeEval | None:
    """A native evaluator for ``a <op> b``, literals on either side, or None."""
    left, right = _operand(left_node), _operand(right_node)
    if left is None or right is None:
        return None
    if left[0] == "lit" and right[0] != "lit":  # "x" == a is a == "x", 3 < a is a > 3
        left, right, op = right, left, _MIRROR[op]
    if right[0] != "lit" or type(right[1]) not in _SCALARS:
        return None
    lit = right[1]
    kind = type(lit)
    if left[0] in ("cmp", "scmp"):
        if kind is not celtypes.IntType:
            return None
        compare = _cap_compare if left[0] == "cmp" else _semver_compare
        return compare(left[1], left[2], left[3], _OPS[op], int(lit))
    if op not in ("relation_eq", "relation_ne"):  # ordering of strings/ints: left to celpy
        return None
    negate = op == "relation_ne"
    if left[0] == "driver":
        return _driver_eq(str(lit), negate) if kind is celtypes.StringType else None
    if left[0] == "ref" and left[1] == "attributes":
        return _attr_eq(left[2], left[3], lit, negate)
    return None
