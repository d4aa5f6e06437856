"""The rest of the Kubernetes CEL base environment a DRA expression may use, for the checker.

Besides the DRA device variable, the Quantity and Semver libraries and the string functions,
the 1.37 apiserver compiles new expressions with the libraries of ``k8s.io/apiserver/pkg/cel/
environment`` (base.go): regular expressions (``find``, ``findAll``), URLs, IP addresses and
CIDRs, ``format`` (named formats and ``string.format``), ``strings.quote``, sets, the list
extensions (``flatten``, ``slice``, ``sort``, ``distinct``, ``reverse``, ``first``, ``last``,
``lists.range``), optional values, ``cel.bind`` and the two-variable comprehensions
(``all``, ``exists``, ``existsOne``, ``transformList``, ``transformMap``). Only their signatures
live here: ``check.Checker`` accepts them with the argument types cel-go requires, the cost
estimator prices them, and evaluation supports what ``library.FUNCTIONS`` implements (see
docs/cel.md for what a selector using the others does on a device).
"""

from __future__ import annotations

import ast
import re

import lark

from webhook.cel.signatures import DYN, Sig, g, m

_STR, _LIST, _OPT = "string", "list", "optional"

METHODS: dict[str, Sig] = {
    "find": m({_STR}, 1, 1, _STR, (_STR,)),
    "findAll": m({_STR}, 1, 2, _LIST, (_STR, "int")),
    "format": m({_STR}, 1, 1, _STR, (_LIST,)),
    "getScheme": m({"URL"}, 0, 0, _STR), "getHost": m({"URL"}, 0, 0, _STR),
    "getHostname": m({"URL"}, 0, 0, _STR), "getPort": m({"URL"}, 0, 0, _STR),
    "getEscapedPath": m({"URL"}, 0, 0, _STR), "getQuery": m({"URL"}, 0, 0, "map"),
    "family": m({"IP"}, 0, 0, "int"), "isUnspecified": m({"IP"}, 0, 0, "bool"),
    "isLoopback": m({"IP"}, 0, 0, "bool"), "isLinkLocalMulticast": m({"IP"}, 0, 0, "bool"),
    "isLinkLocalUnicast": m({"IP"}, 0, 0, "bool"), "isGlobalUnicast": m({"IP"}, 0, 0, "bool"),
    "containsIP": m({"CIDR"}, 1, 1, "bool"), "containsCIDR": m({"CIDR"}, 1, 1, "bool"),
    "ip": m({"CIDR"}, 0, 0, "IP"), "masked": m({"CIDR"}, 0, 0, "CIDR"), "prefixLength": m({"CIDR"}, 0, 0, "int"),
    "validate": m({"Format"}, 1, 1, _OPT, (_STR,)),
    "flatten": m({_LIST}, 0, 1, _LIST, ("int",)), "slice": m({_LIST}, 2, 2, _LIST, ("int", "int")),
    "sort": m({_LIST}, 0, 0, _LIST), "distinct": m({_LIST}, 0, 0, _LIST), "reverse": m({_LIST}, 0, 0, _LIST),
    "first": m({_LIST}, 0, 0, _OPT), "last": m({_LIST}, 0, 0, _OPT),
    "hasValue": m({_OPT}, 0, 0, "bool"), "value": m({_OPT}, 0, 0, DYN),
    "orValue": m({_OPT}, 1, 1, DYN), "or": m({_OPT}, 1, 1, _OPT),
}
#: Only with DRAListTypeAttributes (the environment adds ``includes`` for list-valued attributes).
LIST_TYPE_METHODS: dict[str, Sig] = {"includes": m({_LIST}, 1, 1, "bool")}

GLOBALS: dict[str, Sig] = {
    "url": g(1, 1, "URL", (_STR,)), "isURL": g(1, 1, "bool", (_STR,)),
    "ip": g(1, 1, "IP", (_STR,)), "isIP": g(1, 1, "bool", (_STR,)),
    "cidr": g(1, 1, "CIDR", (_STR,)), "isCIDR": g(1, 1, "bool", (_STR,)),
    "duration": g(1, 1, "duration", (_STR,)), "timestamp": g(1, 1, "timestamp"),
}
#: ``namespace.function``: called on a bare identifier that is not a variable.
NAMESPACED: dict[str, Sig] = {
    "sets.contains": g(2, 2, "bool", (_LIST, _LIST)), "sets.equivalent": g(2, 2, "bool", (_LIST, _LIST)),
    "sets.intersects": g(2, 2, "bool", (_LIST, _LIST)),
    "strings.quote": g(1, 1, _STR, (_STR,)), "lists.range": g(1, 1, _LIST, ("int",)),
    "ip.isCanonical": g(1, 1, "bool", (_STR,)),
    "optional.of": g(1, 1, _OPT), "optional.ofNonZeroValue": g(1, 1, _OPT), "optional.none": g(0, 0, _OPT),
    "format.named": g(1, 1, _OPT, (_STR,)),
    **{f"format.{f}": g(0, 0, "Format") for f in (
        "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
        "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date",
        "datetime")},
}
NAMESPACES = frozenset(name.split(".", 1)[0] for name in NAMESPACED) | {"cel"}

#: Macros with two iteration variables: name -> (argument counts, result type).
TWO_VARIABLE_MACROS: dict[str, tuple[tuple[int, ...], str]] = {
    "all": ((3,), "bool"), "exists": ((3,), "bool"), "existsOne": ((3,), "bool"),
    "transformList": ((3, 4), _LIST), "transformMap": ((3, 4), "map"), "transformMapEntry": ((3, 4), "map"),
}

#: The optional-field syntax (``a.?b``, ``m[?k]``), which celpy cannot parse.
OPTIONAL_SELECT = re.compile(r"\.\?(?=[A-Za-z_])|\[\?")


def string_literal(n: lark.ParseTree) -> str | None:
    """The value of a plain string literal node, else None."""
    if n.data != "literal" or not isinstance(n.children[0], lark.Token) or n.children[0].type != "STRING_LIT":
        return None
    text = str(n.children[0])
    if text[:1] in "rR":
        return text[2:-1]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


RE2_UNSUPPORTED = re.compile(r"\(\?[=!]|\(\?<[=!]|\\[1-9]|\(\?P=")
"""Look-around and back-references: Python's ``re`` has them, RE2 does not."""


def is_re2(pattern: str) -> bool:
    """Whether RE2 (Go's regexp) accepts ``pattern``, as far as Python's ``re`` can tell."""
    if RE2_UNSUPPORTED.search(pattern):
        return False
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


DURATION = re.compile(r"[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)\Z")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")
FORMAT_CLAUSE = re.compile(r"%(\.\d+)?(.?)")
FORMAT_VERBS = frozenset("sdfebxXo%")


def literal_problem(function: str, value: str) -> str | None:
    """What the environment's literal validators say about a constant argument (None: fine):
    ``duration()`` and ``timestamp()`` literals must parse, a literal format string's clauses
    must be known."""
    if function == "duration" and not DURATION.match(value):
        return "invalid duration argument"
    if function == "timestamp" and not TIMESTAMP.match(value):
        return "invalid timestamp argument"
    if function == "format":
        for clause in FORMAT_CLAUSE.finditer(value):
            if clause.group(2) not in FORMAT_VERBS:
                return f'could not parse formatting clause: unrecognized formatting clause "{clause.group(2)}"'
    return None
