"""The lexer of the CEL parser is built whole with the CEL environment (``webhook/cel/compile.py``),
so the first expressions a process compiles do not each pay for building scanners (B6's one-shot
runs); and the environment parses with ``webhook.cel.parser`` (no source positions)."""

from __future__ import annotations

from webhook.cel import compile as cel_compile
from webhook.cel import compile_result
from webhook.cel.parser import Parser


def test_every_scanner_of_the_lexer_is_built_with_the_environment() -> None:
    compile_result('device.driver == "start-up"')
    env = cel_compile._environment()
    assert isinstance(env.cel_parser, Parser)
    lexer = env.cel_parser.lark_parser.parser.lexer
    unbuilt = [state for state, basic in lexer.lexers.items() if basic._scanner is None]
    assert len(lexer.lexers) > 50 and unbuilt == []
