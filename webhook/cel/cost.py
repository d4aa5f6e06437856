"""Worst-case cost of a DRA selector, estimated statically the way upstream estimates it.

Upstream (cel-go's estimator with the Kubernetes library's call costs and DRA's size bounds)
prices every node of the checked expression and knows the largest size of every value: a
device attribute holds at most 64 characters, a domain at most 63, an id at most 32, each map
at most 32 entries, a literal its own length, ``split()`` at most as many parts as its input has
characters (each of unknown length), ``+`` the sum of both sides. Comprehensions cost their range's largest size times
their body, so nested macros multiply. The same model is restated here over celpy's parse tree;
an expression whose worst case is over ``MAX_COST`` is refused at validation ("too complex,
exceeds cost limit"). Unit costs are cel-go's: 1 per identifier, field selection, index and
plain call, string traversal at 0.1 per character, list creation 10, map creation 30.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import lark

MAX_COST = 1_000_000
"""Upstream's per-expression cost limit for DRA selectors (static and at run time)."""
UNBOUNDED = 1 << 40
"""Size of a value nothing bounds; any comprehension over it is over the limit."""

TRAVERSAL = 0.1
"""Cost per character of reading a string (cel-go's string traversal factor)."""
REGEX = 0.25
"""Cost factor per character of a regular expression."""
LIST_CREATE, MAP_CREATE = 10, 30

ATTRIBUTE_VALUE_MAX = 64
DOMAIN_MAX, ID_MAX, DRIVER_MAX = 63, 32, 63
MAP_ENTRIES_MAX = 32


@dataclass(frozen=True)
class Size:
    """Largest size of a value: characters of a string, elements of a list or map; ``elem`` is
    the size of a list's elements or a map's values, ``key`` of a map's keys."""

    max: int
    elem: Size | None = None
    key: Size | None = None


# Numbers, bools and our value types count as size 1; a value of unknown origin is unbounded
# at every level, so anything iterating it is refused, as cel-go refuses it.
_SCALAR = Size(1)
_UNKNOWN = Size(UNBOUNDED, Size(UNBOUNDED), Size(UNBOUNDED))
_ATTRIBUTE = Size(ATTRIBUTE_VALUE_MAX, Size(ATTRIBUTE_VALUE_MAX))
_DEVICE_FIELDS = {
    "driver": Size(DRIVER_MAX),
    "attributes": Size(MAP_ENTRIES_MAX, Size(MAP_ENTRIES_MAX, _ATTRIBUTE, Size(ID_MAX)), Size(DOMAIN_MAX)),
    "capacity": Size(MAP_ENTRIES_MAX, Size(MAP_ENTRIES_MAX, _SCALAR, Size(ID_MAX)), Size(DOMAIN_MAX)),
    "allowMultipleAllocations": _SCALAR,
}
_DEVICE = Size(len(_DEVICE_FIELDS))
_WRAPPERS = frozenset(("expr", "conditionalor", "conditionaland", "relation", "addition",
                       "multiplication", "unary", "member", "primary"))
_MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
#: Two-variable comprehensions (index or key, and value) and whether they build a collection.
_TWO_VARIABLE = {"all": False, "exists": False, "existsOne": False, "transformList": True,
                 "transformMap": True, "transformMapEntry": True}
_NAMESPACES = frozenset(("sets", "strings", "lists", "ip", "optional", "format", "cel"))


def _traverse(n: int) -> int:
    """Cost of reading ``n`` characters."""
    return math.ceil(n * TRAVERSAL)


def estimate(tree: lark.ParseTree) -> int:
    """The largest cost evaluating ``tree`` on any device can have (cel-go cost units)."""
    return _Estimator().cost(tree)[0]


class _Estimator:
    """Walks the tree once; ``scope`` maps comprehension variables to their value's size."""

    def __init__(self) -> None:
        self.scope: dict[str, Size] = {}

    def cost(self, node: lark.ParseTree | lark.Token) -> tuple[int, Size]:
        """(cost, size) of a sub-expression."""
        if not isinstance(node, lark.Tree):
            return 0, _SCALAR
        data = str(node.data)
        kids = [c for c in node.children if isinstance(c, lark.Tree)]
        # Precedence wrappers with one child (expr → conditionalor → ... → primary) cost nothing.
        if data in _WRAPPERS and len(node.children) == 1 and kids:
            return self.cost(kids[0])
        method = getattr(self, "n_" + data, None)
        if method is not None:
            got: tuple[int, Size] = method(node, kids)
            return got
        # A shape not priced above (e.g. a message literal): its parts, and a size nothing bounds.
        total = sum(self.cost(k)[0] for k in kids)
        return total, _UNKNOWN

    # -- operators ----------------------------------------------------------------------------
    def n_expr(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``c ? a : b``: the condition plus the dearer branch."""
        (c, _), (a, sa), (b, sb) = (self.cost(k) for k in kids)
        return c + max(a, b), sa if sa.max >= sb.max else sb

    def n_conditionalor(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``a || b`` (and ``&&``): both sides, as the worst case evaluates both."""
        return sum(self.cost(k)[0] for k in kids), _SCALAR

    n_conditionaland = n_conditionalor

    def n_relation(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """Comparisons read the shorter operand; ``in`` scans a list (a map lookup is 1)."""
        op, right = kids
        left_cost, left = self.cost(_only(op))
        right_cost, rsize = self.cost(right)
        if op.data == "relation_in":
            # A list is scanned element by element (each compared); a map is one hash lookup.
            per = 1 + _traverse((rsize.key or rsize.elem or _SCALAR).max)
            step = 1 if rsize.key is not None else rsize.max * per  # map lookup vs list scan
            return left_cost + right_cost + step, _SCALAR
        return left_cost + right_cost + max(1, _traverse(min(left.max, rsize.max))), _SCALAR

    def n_addition(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``a + b`` on strings or lists builds a value as long as both; numbers cost 1."""
        op, right = kids
        left_cost, left = self.cost(_only(op))
        right_cost, rsize = self.cost(right)
        if op.data != "addition_add":
            return left_cost + right_cost + 1, _SCALAR
        joined = Size(left.max + rsize.max, _larger(left.elem, rsize.elem))
        return left_cost + right_cost + max(1, _traverse(joined.max)), joined

    def n_multiplication(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``*``, ``/``, ``%``: numbers only, 1."""
        op, right = kids
        return self.cost(_only(op))[0] + self.cost(right)[0] + 1, _SCALAR

    def n_unary(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``!x``, ``-x``: 1 on top of the operand."""
        return self.cost(kids[-1])[0] + 1, _SCALAR

    # -- values -------------------------------------------------------------------------------
    def n_literal(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """Literals are free; a string literal's size is its length."""
        tok = node.children[0]
        if isinstance(tok, lark.Token) and tok.type in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            return 0, Size(len(str(tok)))  # the token's length bounds the value's
        return 0, _SCALAR

    def n_list_lit(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """A list literal: creation plus its items; its size is the item count."""
        items = [self.cost(e) for k in kids for e in k.children if isinstance(e, lark.Tree)]
        elem = max((s for _, s in items), key=lambda s: s.max, default=_SCALAR)
        return LIST_CREATE + sum(c for c, _ in items), Size(len(items), elem)

    def n_map_lit(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """A map literal: creation plus its keys and values."""
        items = [self.cost(e) for k in kids for e in k.children if isinstance(e, lark.Tree)]
        keys, values = items[0::2], items[1::2]
        key = max((s for _, s in keys), key=lambda s: s.max, default=_SCALAR)
        value = max((s for _, s in values), key=lambda s: s.max, default=_SCALAR)
        return MAP_CREATE + sum(c for c, _ in items), Size(len(values), value, key)

    def n_paren_expr(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``(x)`` costs what ``x`` costs."""
        return self.cost(kids[0])

    def n_ident(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """An identifier: ``device`` or a macro variable (sized by its range)."""
        name = str(node.children[0])
        if name == "device":
            return 1, _DEVICE
        return 1, self.scope.get(name, _UNKNOWN)

    n_dot_ident = n_ident

    def n_member_dot(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``x.f``: 1; the size comes from the device's fields or the map's values."""
        target_cost, target = self.cost(node.children[0])
        name = str(node.children[1])
        if target is _DEVICE:  # device.driver, .attributes...: sizes from the API's limits
            return target_cost + 1, _DEVICE_FIELDS.get(name, _UNKNOWN)
        return target_cost + 1, target.elem or _UNKNOWN  # a map's field: one of its values

    def n_member_index(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """``x[i]``: 1; the size is that of the list's items or the map's values."""
        (target_cost, target), (index_cost, _) = (self.cost(k) for k in kids)
        return target_cost + index_cost + 1, target.elem or _UNKNOWN

    # -- calls --------------------------------------------------------------------------------
    def n_ident_arg(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """A global function call; conversions and parsers read their string argument."""
        name = str(node.children[0])
        args = [self.cost(a) for a in _exprs(node.children[1] if len(node.children) > 1 else None)]
        cost = sum(c for c, _ in args)
        sizes = [s for _, s in args]
        if name in ("quantity", "isQuantity", "semver", "isSemver"):
            return cost + max(1, _traverse(sizes[0].max if sizes else 0)), _SCALAR
        if name == "matches" and len(sizes) == 2:
            return cost + _regex(sizes[0], sizes[1]), _SCALAR
        if name == "string" and sizes:
            return cost + max(1, _traverse(sizes[0].max)), sizes[0]
        if name == "dyn" and sizes:
            return cost, sizes[0]
        if name == "type":  # a type value has no size: comparing two is unbounded upstream
            return cost + 1, _UNKNOWN
        if name in ("url", "ip", "cidr", "isURL", "isIP", "isCIDR") and sizes:
            return cost + max(1, _traverse(sizes[0].max)), sizes[0] if name == "url" else _SCALAR
        return cost + 1, _SCALAR

    n_dot_ident_arg = n_ident_arg

    def n_member_dot_arg(self, node: lark.ParseTree, kids: list[lark.ParseTree]) -> tuple[int, Size]:
        """A macro, or a method priced by ``_method`` from its receiver's size."""
        target_node, name_tok = node.children[0], node.children[1]
        name = str(name_tok)
        arg_nodes = _exprs(node.children[2] if len(node.children) > 2 else None)
        ns = _ident(target_node) if isinstance(target_node, lark.Tree) else None
        if ns in _NAMESPACES and ns not in self.scope:
            return self._namespaced(f"{ns}.{name}", arg_nodes)
        if name in _TWO_VARIABLE and len(arg_nodes) >= 3 and isinstance(target_node, lark.Tree):
            return self._two_variable(name, target_node, arg_nodes)
        if name in _MACROS and isinstance(target_node, lark.Tree):
            return self._macro(name, target_node, arg_nodes)
        target_cost, t = self.cost(target_node)
        args = [self.cost(a) for a in arg_nodes]
        cost = target_cost + sum(c for c, _ in args)
        return _method(name, t, [s for _, s in args], arg_nodes, cost)

    def _namespaced(self, name: str, arg_nodes: list[lark.ParseTree]) -> tuple[int, Size]:
        """``sets.*`` (both sizes multiplied, as the sets library prices them), ``strings.quote``,
        ``lists.range``, ``cel.bind`` (its initializer once, then the body with the variable)."""
        if name == "cel.bind" and len(arg_nodes) == 3:
            init_cost, init = self.cost(arg_nodes[1])
            body_cost, body = self._with(_ident(arg_nodes[0]), init, arg_nodes[2])
            return init_cost + body_cost, body
        args = [self.cost(a) for a in arg_nodes]
        cost, sizes = sum(c for c, _ in args), [z for _, z in args]
        if name.startswith("sets.") and len(sizes) == 2:
            factor = 2 if name == "sets.equivalent" else 1
            return cost + 1 + factor * sizes[0].max * sizes[1].max, _SCALAR
        if name == "strings.quote" and sizes:
            return cost + _traverse(sizes[0].max), Size(2 * sizes[0].max + 2)
        if name == "lists.range" and arg_nodes:
            n = _int_literal(arg_nodes[0])
            return cost + 1, Size(n if n is not None and n >= 0 else UNBOUNDED, _SCALAR)
        return cost + 1, _SCALAR

    def _with(self, var: str | None, size: Size, node: lark.ParseTree) -> tuple[int, Size]:
        """The cost of ``node`` with ``var`` bound to a value of ``size``."""
        with self._bound({var: size}):
            return self.cost(node)

    @contextmanager
    def _bound(self, bindings: dict[str | None, Size]) -> Iterator[None]:
        """Comprehension variables in scope while a body is priced; each shadows an outer one of
        the same name, which is back afterwards (a None name binds nothing)."""
        named = {v: size for v, size in bindings.items() if v}
        saved = {v: self.scope.get(v) for v in named}
        self.scope.update(named)
        try:
            yield
        finally:
            for v, old in saved.items():
                if old is None:
                    self.scope.pop(v, None)
                else:
                    self.scope[v] = old

    def _two_variable(self, name: str, target: lark.ParseTree, args: list[lark.ParseTree]) -> tuple[int, Size]:
        """A comprehension with two variables (index or key, value): priced like its one-variable
        form, both variables in scope."""
        range_cost, r = self.cost(target)
        first, second = _ident(args[0]), _ident(args[1])
        key = r.key if r.key is not None else _SCALAR
        value = r.elem or _UNKNOWN
        with self._bound({first: key, second: value}):
            body = [self.cost(a) for a in args[2:]]
        step = sum(c for c, _ in body) + (LIST_CREATE + 2 if _TWO_VARIABLE[name] else 4)
        out = Size(r.max, body[-1][1]) if _TWO_VARIABLE[name] and body else _SCALAR
        return range_cost + 1 + r.max * step, out

    def _macro(self, name: str, target: lark.ParseTree, args: list[lark.ParseTree]) -> tuple[int, Size]:
        """A comprehension: the range once, then its largest size times the loop's step."""
        range_cost, r = self.cost(target)
        var = _ident(args[0]) if args else None
        bound = r.key if r.key is not None else r.elem  # a map is iterated by its keys
        with self._bound({var: bound or _UNKNOWN}):
            body = [self.cost(a) for a in args[1:]]
        step = sum(c for c, _ in body)
        # What cel-go's expansion of each macro adds per step: the accumulator update, and for
        # exists the loop condition as well; map and filter append to a new list each time.
        if name in ("map", "filter"):
            # accu + [item]: a list is built per step.
            step += LIST_CREATE + 2
            out = Size(r.max, body[-1][1] if name == "map" and body else bound)
        else:
            step += 4 if name in ("exists", "exists_one") else 3  # loop condition and step
            out = _SCALAR
        return range_cost + 1 + r.max * step, out


def _method(name: str, t: Size, sizes: list[Size], arg_nodes: list[lark.ParseTree],
            cost: int) -> tuple[int, Size]:
    """Cost and result size of ``t.name(args)`` given the receiver's and arguments' sizes."""
    if name in ("lowerAscii", "upperAscii", "trim", "substring"):
        return cost + max(1, _traverse(t.max)), t
    if name in ("indexOf", "lastIndexOf"):
        if t.elem is not None:  # a list: compare each element
            return cost + t.max * (1 + _traverse(t.elem.max)), _SCALAR
        return cost + max(1, _traverse(t.max)), _SCALAR  # a string: one scan of the receiver
    if name == "contains" and sizes:  # every position of the receiver against the whole argument
        return cost + _traverse(t.max) * _traverse(sizes[0].max), _SCALAR
    if name in ("startsWith", "endsWith") and sizes:  # as long as the argument
        return cost + _traverse(sizes[0].max), _SCALAR
    if name == "charAt":
        return cost + 1, Size(1)
    if name in ("matches", "find", "findAll") and sizes:
        found = Size(t.max) if name == "find" else Size(t.max, Size(t.max)) if name == "findAll" else _SCALAR
        return cost + _regex(t, sizes[0]), found
    if name in ("flatten", "reverse", "slice", "distinct", "sort", "first", "last"):
        per = 1 + _traverse((t.elem or _SCALAR).max) if name in ("distinct", "sort") else 1
        return cost + 1 + t.max * per, t if name not in ("first", "last") else (t.elem or _UNKNOWN)
    if name == "split":
        # Worst case: an empty separator, one part per character. Upstream bounds the number of
        # parts only: the parts' own sizes are unknown, so comparing or reading one is unbounded.
        parts = t.max
        limit = _int_literal(arg_nodes[1]) if len(arg_nodes) > 1 else None
        if limit is not None and limit >= 0:
            parts = min(parts, limit)
        return cost + max(1, _traverse(2 * t.max)), Size(parts, Size(UNBOUNDED))
    if name == "replace" and len(sizes) >= 2:
        new = sizes[1]
        smallest_old = _literal_len(arg_nodes[0])
        if smallest_old == 0 or smallest_old is None:  # "" (or unknown) is replaced between every character
            grown = (t.max + 1) * new.max + t.max
        else:
            grown = max(t.max, math.ceil(t.max / smallest_old) * new.max)
        return cost + max(1, _traverse(2 * t.max)), Size(grown)
    if name == "join":
        # Every element at its largest, plus a separator between each pair. Upstream knows the
        # elements' size only from the device's declared bounds: a device value is dyn there (no
        # element size at all: 0), any other list's elements are unbounded.
        sep = sizes[0].max if sizes else 0
        elem = 0 if t is _ATTRIBUTE else UNBOUNDED
        out = Size(t.max * elem + max(0, t.max - 1) * sep)
        return cost + max(1, _traverse(out.max)), out
    if name in ("isSorted", "sum", "min", "max"):
        return cost + 1 + t.max, t.elem or _SCALAR
    # size(), quantity and semver methods, charAt...: constant work.
    return cost + 1, _SCALAR  # size(), quantity and semver methods: constant


def _regex(text: Size, pattern: Size) -> int:
    """Cost of matching a pattern against a text: both lengths, as cel-go prices ``matches``."""
    return max(1, _traverse(text.max + 1) * max(1, math.ceil(pattern.max * REGEX)))


def _larger(a: Size | None, b: Size | None) -> Size | None:
    """The larger of two optional sizes."""
    if a is None or b is None:
        return a or b
    return a if a.max >= b.max else b


def _only(op: lark.ParseTree) -> lark.ParseTree:
    """The left operand inside an operator node (``relation_eq: relation "=="``)."""
    return next(c for c in op.children if isinstance(c, lark.Tree))


def _exprs(node: lark.ParseTree | lark.Token | None) -> list[lark.ParseTree]:
    """The expression children of an (optional) expression list."""
    if not isinstance(node, lark.Tree):
        return []
    return [c for c in node.children if isinstance(c, lark.Tree)]


def _unwrap(node: lark.ParseTree) -> lark.ParseTree:
    """Skip the single-child precedence wrappers (expr, conditionalor... primary)."""
    while len(node.children) == 1 and isinstance(node.children[0], lark.Tree) and node.data in _WRAPPERS:
        node = node.children[0]
    return node


def _ident(node: lark.ParseTree) -> str | None:
    """The name when ``node`` is a plain identifier, else None."""
    n = _unwrap(node)
    return str(n.children[0]) if n.data == "ident" else None


def _literal_token(node: lark.ParseTree) -> lark.Token | None:
    """The token of a literal, else None."""
    n = _unwrap(node)
    if n.data == "literal" and isinstance(n.children[0], lark.Token):
        return n.children[0]
    return None


def _literal_len(node: lark.ParseTree) -> int | None:
    """The length of a string literal's value (quotes excluded), None for anything else."""
    tok = _literal_token(node)
    if tok is None or tok.type not in ("STRING_LIT", "MLSTRING_LIT"):
        return None
    text = str(tok).lstrip("rR")
    quote = 3 if text[:3] in ('"""', "'''") else 1
    return max(0, len(text) - 2 * quote)


def _int_literal(node: lark.ParseTree) -> int | None:
    """The value of an int literal (``split``'s limit), else None."""
    tok = _literal_token(node)
    if tok is None or tok.type != "INT_LIT":
        return None
    try:
        return int(str(tok), 0)
    except ValueError:
        return None
