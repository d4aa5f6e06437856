"""The core every family of declarative rules shares: ``NO_OLD``, ratcheting and ``merge``. Pure.

The 1.37 apiserver validates an object twice: by hand (``pkg/apis/.../validation``) and from the
``+k8s:`` tags of its API types. Three families restate the second pass: ResourceSlices
(``slices/declarative.py``), claims, templates and classes (``claims/declarative.py``) and the
scheduling types (``scheduling/declarative.py``, the only pass there). They share three facts,
owned here:

1. ``NO_OLD`` stands for "no old value to compare with" (CREATE, or a list item new to its
   list), as opposed to an old value that is null.
2. **Ratcheting.** On UPDATE a value equal to its old one is not validated again
   (:func:`unchanged`); the old value of a member is :func:`old_member` of the old parent. What
   "equal" means is the family's (Go's semantic equality of its types), passed in.
3. **Merging.** The answer is the handwritten errors, then each declarative one that does not
   repeat a handwritten error's field and reason (:func:`merge`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from webhook.fielderrors import FieldError


class _NoOld:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_OLD"


NO_OLD: Any = _NoOld()
"""The value has no old counterpart (CREATE, or a list item new on UPDATE)."""


def old_member(old: Any, key: str) -> Any:
    """The old value of member ``key`` (below ``NO_OLD`` still ``NO_OLD``; a missing member, or a
    member of an old value that is not an object, is null)."""
    if old is NO_OLD:
        return NO_OLD
    return old.get(key) if isinstance(old, dict) else None


def unchanged(new: Any, old: Any, equal: Callable[[Any, Any], bool]) -> bool:
    """Ratcheting: ``new`` has an old value and ``equal`` says they are the same."""
    return old is not NO_OLD and equal(new, old)


def merge(handwritten: list[FieldError], declarative: Iterable[FieldError], *,
          dedupe: bool = True) -> list[FieldError]:
    """The handwritten errors, then each declarative one (marked ``declarative``) that does not
    repeat a handwritten error's field and reason; a repeat is kept on that error's ``shadows``
    (upstream replaces the covered error with the tag's; an older version's answer shows it,
    ``webhook.versions.reporting``). With ``dedupe``, a declarative error repeating an earlier
    declarative one is dropped too."""
    out = list(handwritten)
    first: dict[tuple[str, Any], int] | None = None  # built on the first declarative error only
    for d in declarative:
        if first is None:
            first = {(e.field, e.type): i for i, e in reversed(list(enumerate(out)))}
        i = first.get((d.field, d.type))
        if i is not None and i < len(handwritten):
            out[i] = replace(out[i], shadows=(*out[i].shadows, d))
        elif i is None or not dedupe:
            first.setdefault((d.field, d.type), len(out))
            out.append(d if d.declarative else replace(d, declarative=True))
    return out
