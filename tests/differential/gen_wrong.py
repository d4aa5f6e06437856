"""Slices the apiserver refuses while decoding (HTTP 400, before any validation): one value of
the wrong JSON type, one integer past int64, or one unknown field under strict field validation,
somewhere in `spec` (for `gen_slices`).

Each walks the drawn spec, picks one place and changes it in place, so every member of every
kind gets its turn over a run. `metadata` is left alone (its edges belong to another generator).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from tests.differential.gen_values import choose

#: Members whose value is a map (its keys are names, not fields): an added key is not unknown.
MAPS = {"attributes", "capacity", "counters", "nodeAllocatableResources"}
#: Replacements of another JSON type, by the type of the value replaced.
WRONG: dict[type, list[Any]] = {
    str: [5, True, [], {}, 1.5],
    bool: ["true", 1, [], {}],
    int: ["1", 1.5, True, [], {}],
    float: ["1", True, [], {}],
    list: [{}, "x", 1, True],
    dict: [[], "x", 1, True],
}
UNKNOWN = ["basic", "Driver", "extra", "nodename", "Name", "value2"]
INTS_PAST_INT64 = [2**63, -(2**63) - 1, 2**64]


def _places(value: Any, name: str = "") -> Iterator[tuple[Any, Any, str]]:
    """(container, key or index, member name) for every value below ``value``."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield value, k, k
            yield from _places(v, k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield value, i, name
            yield from _places(v, name)


def wrong_type(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    places = [(c, k) for c, k, _ in _places(spec) if type(c[k]) in WRONG]
    if places:
        container, k = choose(draw, places)
        container[k] = choose(draw, WRONG[type(container[k])])


def unknown_field(draw: st.DrawFn, spec: dict[str, Any]) -> None:
    objects = [spec] + [c[k] for c, k, name in _places(spec)
                        if isinstance(c[k], dict) and not (isinstance(c, dict) and name in MAPS)]
    choose(draw, objects)[choose(draw, UNKNOWN)] = choose(draw, ["x", 1, {}, None])


def int_overflow(draw: st.DrawFn, spec: dict[str, Any], keys: list[str]) -> None:
    """An integer member (pool generation or count, an int attribute) past int64."""
    value = choose(draw, INTS_PAST_INT64)
    where = choose(draw, ["generation", "resourceSliceCount", "attribute"])
    if where != "attribute" and isinstance(spec.get("pool"), dict):
        spec["pool"][where] = value
    else:
        spec["devices"] = [{"name": "dev-0", "attributes": {choose(draw, keys): {"int": value}}}]
