"""The CEL parser: celpy's grammar in a lark LALR parser whose trees carry no source positions.

celpy's own parser has lark propagate positions into every tree node. That doubles the cost of
a parse (about 0.2 ms against 0.1 ms for a selector; a one-shot ``simulate`` parses each selector
it meets once, inside its clock) for positions nothing here reads:

- the checker places its errors by tokens (``check._position``), and tokens carry their line and
  column (all but ``true``/``false``, which celpy's literal callback makes anew, in both parsers);
- celpy reads a node's position only to fill ``CELEvalError.line``/``column``, which no message of
  ours shows. Nodes answer those reads with None ("unknown").

The trees are otherwise celpy's: the same grammar file (read from the installed celpy), the same
start rule, priorities and literal callback, so the checker, the cost estimate, the native
translation and celpy's evaluator see the same shapes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import celpy.celparser
import lark
from celpy.celparser import CELParseError, CELParser
from lark.exceptions import LexError, ParseError, UnexpectedCharacters, UnexpectedToken

_NOWHERE = lark.tree.Meta()  # type: ignore[no-untyped-call]
_NOWHERE.line = None  # type: ignore[assignment]
_NOWHERE.column = None  # type: ignore[assignment]


class Node(lark.Tree):  # type: ignore[type-arg]
    """A parse tree node without a source position (its ``meta`` says line and column None)."""

    @property
    def meta(self) -> lark.tree.Meta:
        return _NOWHERE


def build() -> lark.Lark:
    """A new parser of celpy's grammar (~0.3 s: lark builds the LALR tables)."""
    grammar = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
    return lark.Lark(grammar, parser="lalr", start="expr", g_regex_flags=re.M,
                     lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
                     propagate_positions=False, maybe_placeholders=False, priority="invert",
                     tree_class=Node)


class Parser(CELParser):
    """What ``celpy.Environment.compile`` calls (``parse``), over ``lark_parser`` instead of
    celpy's singleton; syntax errors become ``CELParseError``s as celpy's own parser makes them."""

    def __init__(self, lark_parser: lark.Lark) -> None:  # celpy's __init__ would build its own
        self.lark_parser = lark_parser
        self.text = ""

    def parse(self, text: str) -> Any:
        self.text = text
        try:
            return self.lark_parser.parse(text)
        except (UnexpectedToken, UnexpectedCharacters) as e:
            raise CELParseError(e.get_context(text), *e.args, line=e.line, column=e.column) from e
        except (LexError, ParseError) as e:
            raise CELParseError(str(e.args[0]).splitlines()[0] if e.args else str(e), *e.args) from e
