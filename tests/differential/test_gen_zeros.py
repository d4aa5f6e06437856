"""The zero-item mutator (`gen_zeros`) and its reach: every generator family puts a null, an empty
object and an empty string as list items somewhere (no Go needed)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from tests.differential.gen_claims import objects as claim_objects
from tests.differential.gen_meta import META_OBJECTS
from tests.differential.gen_scheduling import PODGROUPS, WORKLOADS
from tests.differential.gen_slices import resource_slices
from tests.differential.gen_zeros import containers, zero_item
from tests.differential.generated import draw_many

SAMPLE = 400


def _first(items: Any) -> Any:
    return items[0]


def _last(items: Any) -> Any:
    return items[-1]


@pytest.mark.parametrize(("choose", "obj", "want"), [
    pytest.param(_first, {"spec": {"devices": [{"name": "a"}]}}, {"spec": {"devices": [None]}},
                 id="first-choices-replace-the-first-list-item-with-null"),
    pytest.param(_last, {"spec": {"devices": [{"name": "a"}]}}, {"spec": {"devices": [{"name": "a", "zz": ""}]}},
                 id="last-choices-add-to-the-last-dict"),
    pytest.param(_last, {"spec": {"a": [1, 2]}}, {"spec": {"a": [1, 2, ""]}}, id="last-choices-append-to-a-list"),
    pytest.param(_last, {"spec": {"m": {"k": "v"}}}, {"spec": {"m": {"k": "v", "zz": ""}}}, id="new-map-entry"),
])
def test_zero_item_puts_one_zero_in_place(choose: Callable[[Any], Any], obj: dict[str, Any], want: Any) -> None:
    assert zero_item(choose, obj)
    assert obj == want


def test_nothing_to_change_without_lists_or_maps() -> None:
    obj = {"spec": "x"}
    assert not zero_item(random.Random(1).choice, obj) and obj == {"spec": "x"}


def _reaches(objs: list[Any]) -> set[str]:
    got = set()
    for o in objs:
        for c in containers(o):
            if isinstance(c, list):
                for item in c:
                    for name, z in (("null", None), ("empty-object", {}), ("empty-string", "")):
                        if type(item) is type(z) and item == z:
                            got.add(name)
    return got


@pytest.mark.parametrize("strategy", [
    pytest.param(resource_slices(), id="slices"),
    pytest.param(claim_objects(), id="claims"),
    pytest.param(PODGROUPS, id="podgroups"),
    pytest.param(WORKLOADS, id="workloads"),
    pytest.param(META_OBJECTS, id="metadata"),
])
def test_every_family_puts_zero_items_in_lists(strategy: Any) -> None:
    # Three seeds: what one seed draws can depend on what the session drew before (a full run
    # once missed the empty object among the workloads' 400 draws that a lone run reaches).
    drawn = [o for salt in (7, 8, 9) for o in draw_many(strategy, SAMPLE, salt)]
    assert _reaches(drawn) == {"null", "empty-object", "empty-string"}
