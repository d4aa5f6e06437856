"""The declarative core (`webhook.rules.declarative`): NO_OLD, ratcheting and the merge every
family of declarative rules uses."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.fielderrors import FieldError, invalid, required
from webhook.rules.declarative import NO_OLD, merge, old_member, unchanged

HAND = invalid("spec.x", 1, "by hand")
SAME_PLACE = invalid("spec.x", 2, "by tag")  # same field and reason as HAND
ELSEWHERE = required("spec.y")


@pytest.mark.parametrize(("old", "key", "want"), [
    pytest.param(NO_OLD, "a", NO_OLD, id="no-old-stays-no-old"),
    pytest.param({"a": 1}, "a", 1, id="member"),
    pytest.param({"a": 1}, "b", None, id="missing-member-is-null"),
    pytest.param(None, "a", None, id="below-null-is-null"),
    pytest.param([1], "a", None, id="below-a-non-object-is-null"),
])
def test_old_member(old: Any, key: str, want: Any) -> None:
    assert old_member(old, key) is want or old_member(old, key) == want


@pytest.mark.parametrize(("new", "old", "want"), [
    pytest.param(1, NO_OLD, False, id="no-old-value-is-checked"),
    pytest.param(1, 1, True, id="equal-old-value-ratchets"),
    pytest.param(1, 2, False, id="changed-value-is-checked"),
    pytest.param(None, None, True, id="null-is-an-old-value"),
])
def test_unchanged(new: Any, old: Any, want: bool) -> None:
    assert unchanged(new, old, lambda a, b: bool(a == b)) is want


@pytest.mark.parametrize(("declarative", "dedupe", "want", "shadowed"), [
    pytest.param([], True, [HAND], 0, id="nothing-declarative"),
    pytest.param([SAME_PLACE], True, [HAND], 1, id="covered-by-a-handwritten-error"),
    pytest.param([ELSEWHERE], True, [HAND, ELSEWHERE], 0, id="added-after-the-handwritten-ones"),
    pytest.param([ELSEWHERE, ELSEWHERE], True, [HAND, ELSEWHERE], 0, id="a-repeat-dropped-with-dedupe"),
    pytest.param([ELSEWHERE, ELSEWHERE], False, [HAND, ELSEWHERE, ELSEWHERE], 0, id="a-repeat-kept-without"),
])
def test_merge(declarative: list[FieldError], dedupe: bool, want: list[FieldError], shadowed: int) -> None:
    out = merge([HAND], declarative, dedupe=dedupe)
    assert out == want
    assert len(out[0].shadows) == shadowed
    assert not out[0].declarative and all(e.declarative for e in out[1:])
