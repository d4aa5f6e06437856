"""``webhook.cel.parser`` against celpy's own parser: the same trees (rule names, token types,
values and positions, in order) and the same syntax errors, without source positions in the nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lark
import pytest
from celpy.celparser import CELParseError, CELParser

from webhook.cel import CelRuntimeError, compile_selector, device_view
from webhook.cel import compile as cel_compile
from webhook.cel.parser import Node, Parser

EXPRESSIONS = [
    pytest.param('device.driver == "gpu.example.com"', id="driver"),
    pytest.param('device.attributes["gpu.example.com"].profile == "1g.10gb"', id="attribute"),
    pytest.param('device.capacity["gpu.example.com"].memory.compareTo(quantity("10Gi")) >= 0', id="quantity"),
    pytest.param('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
                 id="semver"),
    pytest.param("true && !false || 1 + 2 * 3 - 4 / 5 % 6 < 7", id="operators-and-literals"),
    pytest.param('[1, 2u, 3.5, b"x", null].size() > 0 ? {"a": 1}["a"] : -1', id="lists-maps-ternary"),
    pytest.param('device.attributes.exists(d, d.startsWith("gpu")) && has(device.capacity.x)', id="macros"),
    pytest.param("a.b.c(d)[e]\n  .f", id="multi-line"),
]

BAD = [
    pytest.param("device.driver ==", id="missing-operand"),
    pytest.param('device.driver == "x', id="unclosed-string"),
    pytest.param("device..driver", id="double-dot"),
    pytest.param("1 +\n  * 2", id="second-line"),
    pytest.param("`", id="bad-character"),
]


@pytest.fixture(scope="module")
def celpy_parse() -> Callable[[str], Any]:
    """celpy's own parser (positions on), built beside the one the environment lends celpy."""
    cel_compile._environment()
    lent = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    try:
        theirs = CELParser()
        own = CELParser.CEL_PARSER
    finally:
        CELParser.CEL_PARSER = lent
    assert own is not None and own is not lent

    def parse(text: str) -> Any:
        CELParser.CEL_PARSER = own   # CELParser.parse reads the class attribute
        try:
            return theirs.parse(text)
        finally:
            CELParser.CEL_PARSER = lent
    return parse


def _ours() -> Parser:
    parser = cel_compile._environment().cel_parser
    assert isinstance(parser, Parser)
    return parser


def _shape(node: Any) -> Any:
    """A tree as plain data: rule names, token types, values and positions."""
    if isinstance(node, lark.Tree):
        return (node.data, [_shape(c) for c in node.children])
    assert isinstance(node, lark.Token)
    return (node.type, str(node), node.line, node.column)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_trees_are_celpys(celpy_parse: Callable[[str], Any], expression: str) -> None:
    ours, theirs = _ours().parse(expression), celpy_parse(expression)
    assert _shape(ours) == _shape(theirs)
    assert isinstance(ours, Node) and (ours.meta.line, ours.meta.column) == (None, None)


@pytest.mark.parametrize("expression", BAD)
def test_syntax_errors_are_celpys(celpy_parse: Callable[[str], Any], expression: str) -> None:
    with pytest.raises(CELParseError) as ours:
        _ours().parse(expression)
    with pytest.raises(CELParseError) as theirs:
        celpy_parse(expression)
    assert (str(ours.value), ours.value.line, ours.value.column) == \
        (str(theirs.value), theirs.value.line, theirs.value.column)


@pytest.mark.parametrize(("expression", "fragment"), [
    pytest.param('device.attributes["d"].missing == 1', "no such key: missing", id="missing-key"),
    pytest.param('device.attributes["d"].model.compareTo(quantity("1")) == 0', "no such overload",
                 id="no-overload"),
    pytest.param('device.attributes["d"].model', "could not be converted to bool", id="not-bool"),
])
def test_celpy_evaluation_errors_need_no_node_positions(expression: str, fragment: str) -> None:
    """celpy builds a CELEvalError from the failing node's position: its evaluation (not the
    native shortcut) still fails with the message, not an AttributeError."""
    sel = compile_selector(expression)
    with pytest.raises(CelRuntimeError) as e:
        sel._evaluate(device_view("d", {"model": {"string": "a"}}, {}, False))
    assert fragment in e.value.message
