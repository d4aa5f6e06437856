"""Zero-ish items at list and map positions, for every generator family: a ``null``, an empty
object or an empty string as a list item or a map value, somewhere in the object.

kubectl sends `- null` and a bare `-` in YAML as a JSON ``null`` item; the apiserver decodes such
an item into the Go zero value of the item's type (an empty struct, ``""``, a zero quantity), then
defaults and validates it like any other (`webhook/admission/decode.py`). An empty object or an
empty string in the same place is the same thing written out, or (an empty string where an object
belongs) a decode error. Each generator calls :func:`zero_item` on a share of its objects, with its
own way of choosing; the positions are every list and map the drawn object has under the given
top-level members, so every one gets its turn over a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tests.differential.gen_common import Chooser

#: What goes into the chosen position; null most often (what a bare `-` is).
ZEROS: tuple[Any, ...] = (None, None, {}, "")
#: How the position gets it: an item replaced, or one added at the start or the end.
HOW = ("replace", "replace", "prepend", "append")
#: The name of a map entry added (a valid name in every map of our kinds).
NEW_KEY = "zz"

Choose = Callable[[Sequence[Any]], Any]
"""A generator's own way of picking one of a sequence."""


def uniform(c: Chooser) -> Choose:
    """A ``Choose`` for the Chooser-based generators: the item itself (``Chooser.choice`` copies
    lists and dicts), uniformly, from a generator seeded by one choice of ``c``."""
    rng = c.rng()
    return lambda items: items[rng.randrange(len(items))]


def containers(value: Any) -> Iterator[list[Any] | dict[str, Any]]:
    """Every list and every dict below ``value`` (``value`` included)."""
    if isinstance(value, list):
        yield value
        for item in value:
            yield from containers(item)
    elif isinstance(value, dict):
        yield value
        for item in value.values():
            yield from containers(item)


def positions(obj: dict[str, Any], members: Sequence[str]) -> list[list[Any] | dict[str, Any]]:
    """The lists and dicts under ``obj[member]`` for each member (the members themselves too)."""
    return [c for m in members if isinstance(obj.get(m), list | dict) for c in containers(obj[m])]


def zero_item(choose: Choose, obj: dict[str, Any], members: Sequence[str] = ("spec",)) -> bool:
    """Put one zero-ish item into one list or dict under ``members`` of ``obj`` (in place).

    A dict gets it as the value of an entry (a struct's member set to null is "absent", which the
    generators cover already; a map's value set to null is the zero value: both are exercised,
    since a dict here may be either). False when ``obj`` has no list or dict there.
    """
    places = positions(obj, members)
    if not places:
        return False
    lists = [p for p in places if isinstance(p, list)]
    # Lists twice as often as dicts: most dicts are structs, whose members are varied elsewhere.
    where = choose(lists if lists and choose((True, True, False)) else places)
    zero = choose(ZEROS)
    how = choose(HOW)
    if isinstance(where, list):
        if how == "replace" and where:
            where[choose(range(len(where)))] = zero
        elif how == "prepend":
            where.insert(0, zero)
        else:
            where.append(zero)
        return True
    if how == "replace" and where:
        where[choose(sorted(where))] = zero
    else:
        where[NEW_KEY] = zero
    return True


def has_zero_item(obj: Any, zero: Any) -> bool:
    """Whether some list item or dict value below ``obj`` is ``zero`` (``None``, ``{}`` or ``""``)."""
    for c in containers(obj):
        items = c if isinstance(c, list) else list(c.values())
        if any(type(i) is type(zero) and i == zero for i in items):
            return True
    return False
