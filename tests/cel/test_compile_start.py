"""celpy's lexer is built whole with the CEL environment (``webhook/cel/compile.py``), so the
first expressions a process compiles do not each pay for building scanners (B6's one-shot runs)."""

from __future__ import annotations

from celpy.celparser import CELParser

from webhook.cel import compile_result


def test_every_scanner_of_the_lexer_is_built_with_the_environment() -> None:
    compile_result('device.driver == "start-up"')
    lexer = CELParser.CEL_PARSER.parser.lexer
    unbuilt = [state for state, basic in lexer.lexers.items() if basic._scanner is None]
    assert len(lexer.lexers) > 50 and unbuilt == []
