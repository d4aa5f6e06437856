"""Constraint kinds (``webhook/allocator/constraints.py``): parsing yields a kind or a fatal reason,
and each kind admits a value as docs/allocator.md §6.8 says."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.allocator.constraints import (
    EMPTY,
    KINDS,
    LIST,
    Constraint,
    DistinctAttribute,
    MatchAttribute,
    Value,
    parse_constraint,
)
from webhook.allocator.reasons import Code, Reason, text

A = "driver.example.com/a"
EMPTY_CONSTRAINT = "claim ns/c, constraint #1: empty constraint (unsupported constraint type?)"


@pytest.mark.parametrize(("raw", "stable", "want"), [
    pytest.param({"matchAttribute": A}, False, MatchAttribute, id="match"),
    pytest.param({"distinctAttribute": A}, False, DistinctAttribute, id="distinct"),
    pytest.param({"matchAttribute": A}, True, MatchAttribute, id="match-in-the-stable-variant"),
    pytest.param({"distinctAttribute": A}, True, EMPTY_CONSTRAINT, id="distinct-unknown-to-the-stable-variant"),
    pytest.param({"matchAttribute": A, "distinctAttribute": A}, False, MatchAttribute, id="both-match-first"),
    pytest.param({"requests": ["r"]}, False, EMPTY_CONSTRAINT, id="no-kind"),
    pytest.param({"matchAttribute": ""}, False, EMPTY_CONSTRAINT, id="empty-attribute"),
    pytest.param({"futureAttribute": A}, False, EMPTY_CONSTRAINT, id="unknown-kind"),
])
def test_parsing_yields_a_kind_or_a_fatal_reason(raw: dict[str, Any], stable: bool, want: Any) -> None:
    got = parse_constraint(raw, frozenset({"r"}), "ns/c", 1, stable)
    if isinstance(want, str):
        assert isinstance(got, Reason) and got.code == Code.FATAL and text(got) == want
    else:
        assert type(got) is want and got.attribute == A and got.requests == frozenset({"r"})


def test_every_kind_names_its_field_once() -> None:
    assert [k.field for k in KINDS] == ["matchAttribute", "distinctAttribute"]
    assert [k.binds for k in KINDS] == [True, False]


def s(*vals: Any, kind: str = "string") -> Value:
    return (kind, frozenset(vals))


MATCH, DISTINCT = MatchAttribute(A, frozenset()), DistinctAttribute(A, frozenset())


@pytest.mark.parametrize(("c", "val", "seen", "lists", "admits"), [
    pytest.param(MATCH, s("x"), [], False, True, id="match-first-device"),
    pytest.param(MATCH, s("x"), [s("x")], False, True, id="match-same-value"),
    pytest.param(MATCH, s("y"), [s("x")], False, False, id="match-other-value"),
    pytest.param(MATCH, s(1, kind="int"), [s("1")], False, False, id="match-other-type"),
    pytest.param(MATCH, s("b", "c"), [s("a", "b"), s("b", "c")], True, True, id="match-lists-intersection-kept"),
    pytest.param(MATCH, s("a", "c"), [s("a", "b"), s("b", "c")], True, False,
                 id="match-lists-meets-each-not-all"),
    pytest.param(MATCH, LIST, [], False, True, id="match-untyped-first-device"),
    pytest.param(MATCH, LIST, [s("x")], False, False, id="match-untyped-later-device"),
    pytest.param(MATCH, EMPTY, [], True, False, id="match-empty-list-with-list-semantics"),
    pytest.param(DISTINCT, s("y"), [s("x")], False, True, id="distinct-other-value"),
    pytest.param(DISTINCT, s("x"), [s("y"), s("x")], False, False, id="distinct-same-as-an-earlier-one"),
    pytest.param(DISTINCT, s(1, kind="int"), [s("1")], False, True, id="distinct-other-type"),
    pytest.param(DISTINCT, s("c", "d"), [s("a", "b")], True, True, id="distinct-lists-disjoint"),
    pytest.param(DISTINCT, s("b", "d"), [s("a", "b")], True, False, id="distinct-lists-overlap"),
    pytest.param(DISTINCT, LIST, [s("x")], False, False, id="distinct-untyped-later-device"),
])
def test_each_kind_admits_a_value_next_to_those_in_scope(c: Constraint, val: Value, seen: list[Value], lists: bool,
                                                        admits: bool) -> None:
    assert c.admits(val, seen, lists) is admits


class _Slot:
    def __init__(self, name: str, parent: str) -> None:
        self.name, self.parent = name, parent


@pytest.mark.parametrize(("requests", "slot", "applies"), [
    pytest.param(frozenset(), _Slot("r", "r"), True, id="no-requests-named-covers-all"),
    pytest.param(frozenset({"r"}), _Slot("r", "r"), True, id="the-request-named"),
    pytest.param(frozenset({"r"}), _Slot("other", "other"), False, id="another-request"),
    pytest.param(frozenset({"r"}), _Slot("r/sub", "r"), True, id="a-subrequest-by-its-request"),
    pytest.param(frozenset({"r/sub"}), _Slot("r/sub", "r"), True, id="a-subrequest-by-its-own-name"),
    pytest.param(frozenset({"r/other"}), _Slot("r/sub", "r"), False, id="another-subrequest"),
])
def test_a_constraint_covers_the_requests_it_names(requests: frozenset[str], slot: _Slot, applies: bool) -> None:
    assert MatchAttribute(A, requests).applies(slot) is applies
