"""Containers shared between the model of a snapshot and the model of the next one, so that one
watch event costs what changed, not a copy of every node's entry. Pure, stdlib only.

- ``Layered``: a mapping kept as a shared base plus an overlay of this model's changes (removals
  included); ``child()`` gives the next model its own overlay over the same base. The base is never
  written once shared; a large overlay is folded into a new base when a child is made, so a child's
  overlay stays small and the fold is paid once per many events.
- ``Chunked``: a sequence kept in chunks; replacing, inserting or removing one item copies its
  chunk and the list of chunks, not the whole sequence.
- ``runs_after``: which of a model's cached runs of nodes (``classes.run_end``) still hold after
  one node changed.

Readers see plain mapping and sequence protocols (``get``, ``in``, ``len``, iteration).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_GONE: Any = object()
"""An overlay's value for a key the base holds and this mapping does not."""
_ABSENT: Any = object()
FOLD_MIN = 64
"""A child's overlay is folded into a new base once it holds more than this many entries and more
than ``1 / FOLD_SHARE`` of the base's."""
FOLD_SHARE = 16


class Layered(Mapping[K, V]):
    """A mutable mapping read through ``over`` (this mapping's changes) then ``base`` (shared)."""

    __slots__ = ("base", "over", "_len")

    def __init__(self, base: dict[K, V] | None = None) -> None:
        self.base: dict[K, V] = base if base is not None else {}
        self.over: dict[K, Any] = {}
        self._len = len(self.base)

    def child(self) -> Layered[K, V]:
        """A mapping with this one's content that shares its base: writes to either are not seen
        by the other. Folds a large overlay into a new base first (once; later children share it)."""
        over = dict(self.over)  # one C-level copy: serving threads may be writing to it
        if len(over) > FOLD_MIN and len(over) * FOLD_SHARE > len(self.base):
            base = {**self.base, **over}
            for k in [k for k, v in over.items() if v is _GONE]:
                del base[k]
            got: Layered[K, V] = Layered(base)
            return got
        got = Layered.__new__(Layered)
        got.base, got.over, got._len = self.base, over, self._len
        return got

    def get(self, key: K, default: Any = None) -> Any:
        got = self.over.get(key, _ABSENT)
        if got is _ABSENT:
            return self.base.get(key, default)
        return default if got is _GONE else got

    def __getitem__(self, key: K) -> V:
        got = self.get(key, _ABSENT)
        if got is _ABSENT:
            raise KeyError(key)
        return got  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        got = self.over.get(key, _ABSENT)  # type: ignore[arg-type]
        return key in self.base if got is _ABSENT else got is not _GONE

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        over = self.over
        if not over:
            return iter(self.base)
        return itertools.chain((k for k in self.base if k not in over),
                               (k for k, v in over.items() if v is not _GONE))

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self:
            self._len += 1
        self.over[key] = value

    def setdefault(self, key: K, value: V) -> V:
        got = self.get(key, _ABSENT)
        if got is _ABSENT:
            self[key] = got = value
        return got  # type: ignore[no-any-return]

    def pop(self, key: K, default: Any = None) -> Any:
        got = self.get(key, _ABSENT)
        if got is _ABSENT:
            return default
        self._len -= 1
        if key in self.base:
            self.over[key] = _GONE
        else:
            del self.over[key]
        return got

    def __delitem__(self, key: K) -> None:
        if self.pop(key, _ABSENT) is _ABSENT:
            raise KeyError(key)

    def same_keys(self, other: Layered[K, V]) -> bool:
        """Whether both hold the same keys (C-speed when neither has changes of its own)."""
        if not self.over and not other.over:
            return self.base.keys() == other.base.keys()
        return len(self) == len(other) and all(k in other for k in self)


CHUNK = 256
"""Items a ``Chunked`` puts in one chunk when it is built."""


class Chunked(Sequence[T]):
    """An immutable sequence kept as a tuple of tuples; ``spliced`` shares every chunk but one."""

    __slots__ = ("chunks", "starts", "_len")

    def __init__(self, items: Iterable[T] = ()) -> None:
        flat = tuple(items)
        self.chunks: tuple[tuple[T, ...], ...] = tuple(flat[i:i + CHUNK] for i in range(0, len(flat), CHUNK))
        self.starts: list[int] = list(range(0, len(flat), CHUNK))
        """Where each chunk starts in the sequence."""
        self._len = len(flat)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[T]:
        return itertools.chain.from_iterable(self.chunks)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...

    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        c = bisect_right(self.starts, i) - 1
        return self.chunks[c][i - self.starts[c]]

    def __contains__(self, item: object) -> bool:
        return any(item in chunk for chunk in self.chunks)

    def index(self, item: Any, start: int = 0, stop: int | None = None) -> int:
        for c, chunk in enumerate(self.chunks):
            if item in chunk:
                i = self.starts[c] + chunk.index(item)
                if start <= i and (stop is None or i < stop):
                    return i
        raise ValueError("not in sequence")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Chunked | tuple | list):
            return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Chunked({list(self)!r})"

    def spliced(self, i: int, old: T | None, new: T | None) -> Chunked[T] | None:
        """This sequence with ``old`` (at ``i``) replaced by ``new`` or removed, or ``new`` inserted
        at ``i`` (``old`` None); None when ``old`` is not at ``i`` or ``i`` is out of range."""
        n = self._len
        if not 0 <= i <= n or (old is not None and i == n) or (old is None and new is None):
            return None
        if n == 0:
            return Chunked((new,)) if new is not None else None
        c = bisect_right(self.starts, i) - 1 if i < n else len(self.chunks) - 1
        chunk, at = self.chunks[c], i - self.starts[c]
        if old is not None and chunk[at] is not old:
            return None
        tail = chunk[at + 1:] if old is not None else chunk[at:]
        piece = chunk[:at] + ((new,) if new is not None else ()) + tail
        got: Chunked[T] = Chunked.__new__(Chunked)
        delta = len(piece) - len(chunk)
        if len(piece) > 2 * CHUNK:  # grown by inserts: split in two
            half = len(piece) // 2
            got.chunks = self.chunks[:c] + (piece[:half], piece[half:]) + self.chunks[c + 1:]
            got.starts = [*self.starts[:c + 1], self.starts[c] + half, *(s + delta for s in self.starts[c + 1:])]
        elif piece:
            got.chunks = self.chunks[:c] + (piece,) + self.chunks[c + 1:]
            got.starts = self.starts if not delta else self.starts[:c + 1] + [s + delta for s in self.starts[c + 1:]]
        else:  # the chunk's last item removed
            got.chunks = self.chunks[:c] + self.chunks[c + 1:]
            got.starts = self.starts[:c] + [s - 1 for s in self.starts[c + 1:]]
        got._len = n + delta
        return got


def splice(items: Chunked[T] | None, i: int, old: T | None, new: T | None, size: int) -> Chunked[T] | None:
    """``items`` with ``old`` (at ``i``) replaced by ``new``, removed, or ``new`` inserted at
    ``i``; None (built again when asked) when ``items`` is None, does not have ``size`` items
    (``size`` -1: any), or ``old`` is not at ``i``. ``i`` -1: ``old`` is not in it (unchanged)."""
    if items is None or (size >= 0 and len(items) != size):
        return None
    if i < 0:
        return items
    return items.spliced(i, old, new)


def runs_after(ends: Mapping[int, int], names: Sequence[str],
               node: str) -> tuple[int, dict[int, int], dict[int, int]] | None:
    """Cached runs of nodes of one class (start -> end, exclusive, in ``names``, sorted) after
    ``node`` changed, the node list being the same: (its position ``j``, the runs that do not read
    it, those that do), or None when ``node`` is not in ``names``. A run reads the nodes from its
    start to its end inclusive (the first node of another class stops it), so it holds as it is
    only when ``j`` is outside; one that reads ``j`` holds when ``j``'s class did not change."""
    j = bisect_left(names, node)
    if j == len(names) or names[j] != node:
        return None
    kept: dict[int, int] = {}
    held: dict[int, int] = {}
    for i, e in ends.items():
        (held if i <= j <= e else kept)[i] = e
    return j, kept, held
