"""Static checks celpy does not do: declared names, known functions, simple types.

cel-python parses but does not type-check, so an unknown function or a misspelt field would only
fail when a device is evaluated. This module walks the parse tree once at compile time and
reports what cel-go's checker reports for the DRA environment, in cel-go's words. Types are
inferred only where they are certain; anything from ``device.attributes`` is ``dyn`` and never
causes an error here (the apiserver would not reject it either).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import lark

DYN = "dyn"
MAX_TREE_DEPTH = 2600
"""Deeper parse trees are refused (about 250 nested parentheses, cel-go's parser recursion limit)."""

DEVICE_FIELDS = {"driver": "string", "attributes": "map", "capacity": "map",
                 "allowMultipleAllocations": "bool"}
TYPE_IDENTS = {"int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type"}
MACROS = {"all": "bool", "exists": "bool", "exists_one": "bool", "map": "list", "filter": "list"}

# name -> (receiver types or None for a global function, min args, max args, result type)
_Q, _SV, _STR, _LIST = "Quantity", "Semver", "string", "list"


@dataclass(frozen=True)
class Sig:
    """The signature of a function or method: receiver types (None for a global function),
    argument count bounds, result type and argument types."""
    receivers: frozenset[str] | None
    min_args: int
    max_args: int
    result: str
    arg_types: tuple[str, ...] = ()


def _m(recv: set[str], lo: int, hi: int, result: str, args: tuple[str, ...] = ()) -> Sig:
    return Sig(frozenset(recv), lo, hi, result, args)


def _g(lo: int, hi: int, result: str, args: tuple[str, ...] = ()) -> Sig:
    return Sig(None, lo, hi, result, args)


METHODS: dict[str, Sig] = {
    "compareTo": _m({_Q, _SV}, 1, 1, "int"),
    "isGreaterThan": _m({_Q, _SV}, 1, 1, "bool"),
    "isLessThan": _m({_Q, _SV}, 1, 1, "bool"),
    "add": _m({_Q}, 1, 1, _Q), "sub": _m({_Q}, 1, 1, _Q),
    "asInteger": _m({_Q}, 0, 0, "int"), "isInteger": _m({_Q}, 0, 0, "bool"),
    "asApproximateFloat": _m({_Q}, 0, 0, "double"), "sign": _m({_Q}, 0, 0, "int"),
    "major": _m({_SV}, 0, 0, "int"), "minor": _m({_SV}, 0, 0, "int"), "patch": _m({_SV}, 0, 0, "int"),
    "matches": _m({_STR}, 1, 1, "bool", (_STR,)), "startsWith": _m({_STR}, 1, 1, "bool", (_STR,)),
    "endsWith": _m({_STR}, 1, 1, "bool", (_STR,)), "contains": _m({_STR}, 1, 1, "bool", (_STR,)),
    "size": _m({_STR, _LIST, "map", "bytes"}, 0, 0, "int"),
    "lowerAscii": _m({_STR}, 0, 0, _STR), "upperAscii": _m({_STR}, 0, 0, _STR),
    "trim": _m({_STR}, 0, 0, _STR), "replace": _m({_STR}, 2, 3, _STR),
    "split": _m({_STR}, 1, 2, _LIST), "substring": _m({_STR}, 1, 2, _STR),
    "charAt": _m({_STR}, 1, 1, _STR),
    "indexOf": _m({_STR, _LIST}, 1, 1, "int"), "lastIndexOf": _m({_STR, _LIST}, 1, 1, "int"),
    "join": _m({_LIST}, 0, 1, _STR), "isSorted": _m({_LIST}, 0, 0, "bool"),
    "sum": _m({_LIST}, 0, 0, DYN), "min": _m({_LIST}, 0, 0, DYN), "max": _m({_LIST}, 0, 0, DYN),
}
GLOBALS: dict[str, Sig] = {
    "quantity": _g(1, 1, _Q, (_STR,)), "isQuantity": _g(1, 1, "bool", (_STR,)),
    "semver": _g(1, 2, _SV, (_STR, "bool")), "isSemver": _g(1, 2, "bool", (_STR, "bool")),
    "size": _g(1, 1, "int"), "has": _g(1, 1, "bool"), "matches": _g(2, 2, "bool", (_STR, _STR)),
    "int": _g(1, 1, "int"), "uint": _g(1, 1, "uint"), "double": _g(1, 1, "double"),
    "string": _g(1, 1, _STR), "bool": _g(1, 1, "bool"), "bytes": _g(1, 1, "bytes"),
    "type": _g(1, 1, "type"), "dyn": _g(1, 1, DYN),
}
_NUMERIC = {"int", "uint", "double"}
_ORDERED = _NUMERIC | {"string", "bool", "bytes"}


class CheckError(Exception):
    """A compile-time problem; ``str()`` is the cel-go style message."""


@dataclass
class Checker:
    """Walks one parse tree; ``run()`` returns its result type or raises CheckError.
    (The cost is estimated separately, by ``cost.estimate``.)"""

    tree: lark.ParseTree
    scope: list[str] = field(default_factory=list)

    def run(self) -> str:
        """The expression's result type (``dyn`` when not certain). Raises CheckError."""
        if tree_depth(self.tree) > MAX_TREE_DEPTH:
            raise CheckError("ERROR: <input>:1:1: expression recursion limit exceeded")
        return self.visit(self.tree)

    # -- helpers ---------------------------------------------------------------------------
    def fail(self, node: lark.ParseTree | lark.Token, msg: str) -> CheckError:
        """A CheckError at the node's position, worded as cel-go words it."""
        line, col = _position(node)
        return CheckError(f"ERROR: <input>:{line}:{col}: {msg}")

    def no_overload(self, node: lark.ParseTree | lark.Token, op: str, types: list[str]) -> CheckError:
        """cel-go's "found no matching overload" error for an operator or function."""
        return self.fail(node, f"found no matching overload for '{op}' applied to '({', '.join(types)})'")

    def exprs(self, node: lark.ParseTree | lark.Token | None) -> list[lark.ParseTree]:
        """The expression children of an (optional) expression list."""
        if not isinstance(node, lark.Tree):  # an omitted optional exprlist is None
            return []
        return [c for c in node.children if isinstance(c, lark.Tree)]

    # -- dispatch --------------------------------------------------------------------------
    def value(self, node: lark.ParseTree) -> str:
        """Type of a sub-expression used as an operand (device maps are plain maps there)."""
        t = self.visit(node)
        return "map" if t in ("attrmap", "capmap") else t

    def visit(self, node: lark.ParseTree) -> str:
        """Dispatch to ``v_<rule>`` (or visit the children); returns the node's type."""
        method = getattr(self, "v_" + str(node.data), None)
        if method is not None:
            return str(method(node))
        kids = [c for c in node.children if isinstance(c, lark.Tree)]
        if len(kids) == 1 and len(node.children) == 1:
            return self.visit(kids[0])
        return self.generic(node)

    def generic(self, node: lark.ParseTree) -> str:
        """Visit every child (for their errors); the result type is not known."""
        for c in node.children:
            if isinstance(c, lark.Tree):
                self.visit(c)
        return DYN

    def v_expr(self, node: lark.ParseTree) -> str:
        """``c ? a : b``: the condition must be bool; the type is the branches' when they agree."""
        kids = self.exprs(node)
        if len(kids) == 1:
            return self.visit(kids[0])
        cond, a, b = (self.value(k) for k in kids)
        if cond not in (DYN, "bool"):
            raise self.no_overload(node, "_?_:_", [cond, a, b])
        return a if a == b else DYN

    def _logic(self, node: lark.ParseTree, op: str) -> str:
        """The shared check of ``||`` and ``&&``."""
        kids = self.exprs(node)
        if len(kids) == 1:
            return self.visit(kids[0])
        types = [self.value(k) for k in kids]
        if any(t not in (DYN, "bool") for t in types):
            raise self.no_overload(node, op, types)
        return "bool"

    def v_conditionalor(self, node: lark.ParseTree) -> str:
        """``a || b``: both operands bool (or dyn)."""
        return self._logic(node, "_||_")

    def v_conditionaland(self, node: lark.ParseTree) -> str:
        """``a && b``: both operands bool (or dyn)."""
        return self._logic(node, "_&&_")

    def v_relation(self, node: lark.ParseTree) -> str:
        """Comparisons and ``in``: operand types that can never be compared are an error."""
        kids = self.exprs(node)
        if len(kids) == 1:
            return self.visit(kids[0])
        op_node, right = kids
        op = str(op_node.data)
        left_t = self.value(self.exprs(op_node)[0])
        right_t = self.value(right)
        sym = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
               "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in"}[op]
        known = DYN not in (left_t, right_t)
        # cel-go has heterogeneous equality only for null: other mixed types are an error.
        if sym in ("_==_", "_!=_"):
            if known and left_t != right_t and left_t != "null" and right_t != "null":
                raise self.no_overload(node, sym, [left_t, right_t])
        elif sym == "@in":
            if right_t not in (DYN, "list", "map"):
                raise self.no_overload(node, sym, [left_t, right_t])
        else:
            for t in (left_t, right_t):
                if t not in _ORDERED and t != DYN:
                    raise self.no_overload(node, sym, [left_t, right_t])
            # Ordering across numeric types is allowed (1 < 2.0); anything else must match.
            if known and left_t != right_t and not (left_t in _NUMERIC and right_t in _NUMERIC):
                raise self.no_overload(node, sym, [left_t, right_t])
        return "bool"

    def _arith(self, node: lark.ParseTree) -> str:
        """``+ - * / %``: both sides of one type (numbers, strings, lists), dyn otherwise."""
        kids = self.exprs(node)
        if len(kids) == 1:
            return self.visit(kids[0])
        op_node, right = kids
        left_t = self.value(self.exprs(op_node)[0])
        right_t = self.value(right)
        if DYN in (left_t, right_t):  # one side unknown: only the run time can tell
            return DYN
        # No implicit conversions in CEL; bools, maps and our value types have no arithmetic.
        if left_t != right_t or left_t in ("bool", "map", "Quantity", "Semver", "null"):
            sym = {"addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
                   "multiplication_div": "_/_", "multiplication_mod": "_%_"}.get(str(op_node.data), "?")
            raise self.no_overload(node, sym, [left_t, right_t])
        return left_t

    v_addition = _arith
    v_multiplication = _arith

    def v_unary(self, node: lark.ParseTree) -> str:
        """``!x`` needs a bool, ``-x`` a number."""
        kids = self.exprs(node)
        if len(kids) == 1:
            return self.visit(kids[0])
        op, operand = kids
        t = self.value(operand)
        if op.data == "unary_not" and t not in (DYN, "bool"):
            raise self.no_overload(node, "!_", [t])
        if op.data == "unary_neg" and t not in (DYN, "int", "double"):
            raise self.no_overload(node, "-_", [t])
        return t

    def v_literal(self, node: lark.ParseTree) -> str:
        """The type of a literal, from its token."""
        tok = node.children[0]
        kind = tok.type if isinstance(tok, lark.Token) else ""
        return {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool",
                "NULL_LIT": "null"}.get(kind, DYN)

    def v_list_lit(self, node: lark.ParseTree) -> str:
        """A list literal (its items are checked)."""
        self.generic(node)
        return "list"

    def v_map_lit(self, node: lark.ParseTree) -> str:
        """A map literal (its keys and values are checked)."""
        self.generic(node)
        return "map"

    def v_paren_expr(self, node: lark.ParseTree) -> str:
        """``(x)`` has the type of ``x``."""
        return self.visit(self.exprs(node)[0])

    def v_ident(self, node: lark.ParseTree) -> str:
        """``device``, a macro variable in scope, or a type name; anything else is undeclared."""
        tok = node.children[0]
        name = str(tok)
        if name == "device":
            return "device"
        if name in self.scope:
            return DYN
        if name in TYPE_IDENTS:
            return "type"
        raise self.fail(tok, f"undeclared reference to '{name}' (in container '')")

    def v_dot_ident(self, node: lark.ParseTree) -> str:
        """``.name`` (a root-scoped identifier), as a plain identifier."""
        return self.v_ident(node)

    def v_ident_arg(self, node: lark.ParseTree) -> str:
        """A global function call: known name, argument count and argument types; ``has()`` needs a field selection."""
        tok = node.children[0]
        name = str(tok)
        args = self.exprs(node.children[1] if len(node.children) > 1 else None)
        sig = GLOBALS.get(name)
        if sig is None:
            raise self.fail(tok, f"undeclared reference to '{name}' (in container '')")
        if name == "has":  # a macro, not a function: its argument is not evaluated
            if len(args) != 1 or not _is_field_selection(args[0]):
                raise self.fail(tok, "invalid argument to has() macro")
            self.visit(args[0])
            return "bool"
        types = [self.value(a) for a in args]
        if not sig.min_args <= len(args) <= sig.max_args:
            raise self.no_overload(tok, name, types)
        for t, want in zip(types, sig.arg_types, strict=False):
            if t != DYN and t != want:
                raise self.no_overload(tok, name, types)
        return sig.result

    v_dot_ident_arg = v_ident_arg

    def v_member_dot(self, node: lark.ParseTree) -> str:
        """Field selection: ``device`` has four fields; attribute and capacity maps yield dyn and Quantity."""
        target, name_tok = node.children[0], node.children[1]
        t = self.visit(target) if isinstance(target, lark.Tree) else DYN
        name = str(name_tok)
        if t == "device":
            if name not in DEVICE_FIELDS:
                raise self.fail(name_tok, f"undefined field '{name}'")
            return DEVICE_FIELDS[name]
        if t == "attrmap":
            return DYN
        if t == "capmap":
            return "Quantity"
        if t not in (DYN, "map"):
            raise self.fail(name_tok, f"type '{t}' does not support field selection")
        return DYN

    def v_member_index(self, node: lark.ParseTree) -> str:
        """Indexing: ``device.attributes[domain]`` and ``device.capacity[domain]`` need string keys."""
        target, index = self.exprs(node)
        t = self.visit(target)
        it = self.visit(index)
        if t in ("attrmap", "capmap"):
            return DYN if t == "attrmap" else "Quantity"
        if t == "map" and _is_device_field(target, ("attributes",)):
            self._want_string_key(index, it)
            return "attrmap"
        if t == "map" and _is_device_field(target, ("capacity",)):
            self._want_string_key(index, it)
            return "capmap"
        if t not in (DYN, "list", "map"):
            raise self.no_overload(node, "_[_]", [t, it])
        return DYN

    def _want_string_key(self, index: lark.ParseTree, t: str) -> None:
        """Device attribute and capacity maps are keyed by strings (domains)."""
        if t not in (DYN, "string"):
            raise self.no_overload(index, "_[_]", ["map(string, dyn)", t])

    def v_member_dot_arg(self, node: lark.ParseTree) -> str:
        """A macro (``all``, ``exists``...) or a method call with a known receiver type."""
        target, name_tok = node.children[0], node.children[1]
        name = str(name_tok)
        args = self.exprs(node.children[2] if len(node.children) > 2 else None)
        if name in MACROS:
            assert isinstance(target, lark.Tree)  # grammar: member "." IDENT "(" [exprlist] ")"
            return self._macro(target, name_tok, args)
        recv = self.visit(target) if isinstance(target, lark.Tree) else DYN
        if recv in ("attrmap", "capmap"):
            recv = "map"
        sig = METHODS.get(name)
        if sig is None:
            raise self.fail(name_tok, f"undeclared reference to '{name}' (in container '')")
        types = [self.value(a) for a in args]
        bad_recv = recv != DYN and sig.receivers is not None and recv not in sig.receivers
        bad_args = not sig.min_args <= len(args) <= sig.max_args or any(
            t != DYN and t != want for t, want in zip(types, sig.arg_types, strict=False))
        # Quantity compares with Quantity, Semver with Semver: never across.
        if name in ("compareTo", "isGreaterThan", "isLessThan") and recv != DYN and types and \
                types[0] != DYN and types[0] != recv:
            bad_args = True
        # Quantity arithmetic takes a Quantity or an int (the Kubernetes library's overloads).
        if name in ("add", "sub") and types and types[0] not in (DYN, "int", "Quantity"):
            bad_args = True
        if bad_recv or bad_args:
            raise self.fail(name_tok, f"found no matching overload for '{name}' applied to "
                                      f"'{recv}.({', '.join(types)})'")
        return sig.result

    def _macro(self, target: lark.ParseTree, name_tok: lark.Token | lark.ParseTree, args: list[lark.ParseTree]) -> str:
        """A comprehension: the range must be iterable and the variable a plain name, which is in scope in the body."""
        name = str(name_tok)
        recv = self.visit(target)
        if recv not in (DYN, "list", "map", "attrmap", "capmap"):
            raise self.fail(name_tok, f"expression of type '{recv}' cannot be range of a "
                                      "comprehension (must be list, map, or dynamic)")
        want = (2, 3) if name == "map" else (2, 2)
        if not want[0] <= len(args) <= want[1] or _ident_name(args[0]) is None:
            raise self.fail(name_tok, f"invalid argument to {name}() macro" if args else
                            f"undeclared reference to '{name}' (in container '')")
        var = _ident_name(args[0])
        assert var is not None
        self.scope.append(var)
        try:
            for a in args[1:]:
                self.visit(a)
        finally:
            self.scope.pop()
        return MACROS[name]


def tree_depth(tree: lark.ParseTree) -> int:
    """Depth of the parse tree, computed without recursion."""
    depth = 0
    stack: list[tuple[lark.ParseTree, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in node.children if isinstance(c, lark.Tree))
    return depth


def _position(node: lark.ParseTree | lark.Token) -> tuple[int, int]:
    """(line, column) of a node (its first token), 1-based, for error messages."""
    if isinstance(node, lark.Token):
        return node.line or 1, node.column or 1
    for tok in node.scan_values(lambda v: isinstance(v, lark.Token)):
        return tok.line or 1, tok.column or 1
    return 1, 1


def _unwrap(node: lark.ParseTree) -> lark.ParseTree:
    """Skip the single-child precedence wrappers (expr → … → member → primary)."""
    while len(node.children) == 1 and isinstance(node.children[0], lark.Tree) and node.data in (
            "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
            "unary", "member", "primary"):
        node = node.children[0]
    return node


def _ident_name(node: lark.ParseTree) -> str | None:
    """The name when ``node`` is a plain identifier (macro variables must be), else None."""
    n = _unwrap(node)
    if n.data == "ident" and isinstance(n.children[0], lark.Token):
        return str(n.children[0])
    return None


def _is_field_selection(node: lark.ParseTree) -> bool:
    """Whether ``node`` is ``a.b`` or ``a[b]`` (what ``has()`` accepts)."""
    return _unwrap(node).data in ("member_dot", "member_index")


def _is_device_field(node: lark.ParseTree, names: tuple[str, ...]) -> bool:
    """Whether ``node`` is ``device.<one of names>``."""
    n = _unwrap(node)
    return (n.data == "member_dot" and str(n.children[1]) in names
            and isinstance(n.children[0], lark.Tree) and _ident_name(n.children[0]) == "device")
