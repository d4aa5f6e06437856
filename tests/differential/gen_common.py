"""Pieces the scheduling and metadata generators share: choosers, names at their edges, and
UPDATE edits as data (so a disagreement prints the edit that caused it).

Hypothesis decides where an object is at an edge and which edge it is; the valid rest of the
object (most of it) comes from a generator seeded by one hypothesis draw. Both are behind one
small interface, `Chooser`, so every field function is written once: hypothesis draws cost
tens of microseconds each, and a Workload has hundreds of choices in it.

Every name function mostly gives valid names at the interesting lengths (1, the limit - 1, the
limit) and otherwise one thing wrong with them: one past the limit, a bad character at the
start, the end or inside, upper case, empty. ``ok=True`` gives only the valid ones.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"

    def __copy__(self) -> _Absent:
        return self

    def __deepcopy__(self, memo: Any) -> _Absent:
        return self


#: A key left out of the object (as opposed to present with null).
ABSENT: Any = _Absent()

LOWER = "abcdefghijklmnopqrstuvwxyz0123456789"
MIXED = LOWER + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Characters no Kubernetes name allows, and some that only some names allow.
BAD_CHARS = ("A", "Z", "_", ".", "-", "/", " ", "%", ":", "@", "é", "\u00e9t", "\t", "*", "\x00")


# --- choosers ----------------------------------------------------------------------------------


@functools.cache
def _index(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n - 1)


_SEED = st.integers(0, 2**32 - 1)


class Chooser:
    """Where choices come from: hypothesis (``draw``) or a seeded generator (``rng``)."""

    def __init__(self, draw: st.DrawFn | None = None, rng: random.Random | None = None) -> None:
        self._draw, self._rng = draw, rng

    def index(self, n: int) -> int:
        """0 <= i < n."""
        if self._draw is not None:
            return int(self._draw(_index(n))) if n > 1 else 0
        assert self._rng is not None
        return self._rng.randrange(n)

    def integer(self, lo: int, hi: int) -> int:
        return lo + self.index(hi - lo + 1)

    def boolean(self) -> bool:
        return self.index(2) == 1

    def choice(self, items: Sequence[Any]) -> Any:
        return _copied(items[self.index(len(items))])

    def rng(self) -> random.Random:
        """A generator for bulk text (seeded by one choice)."""
        if self._draw is not None:
            return random.Random(self._draw(_SEED))
        assert self._rng is not None
        return self._rng

    def filler(self) -> Chooser:
        """The chooser for the valid rest of an object, seeded from this one. (Only from it: what
        hypothesis draws next may depend on the filler, so the filler must be the same whenever
        hypothesis replays the same choices.)"""
        return Chooser(rng=random.Random(self.rng().getrandbits(64)))

    def sample(self, items: Sequence[Any], k: int) -> list[Any]:
        """``k`` distinct items in a chosen order."""
        pool, out = list(items), []
        for _ in range(min(k, len(pool))):
            out.append(pool.pop(self.index(len(pool))))
        return out


def pick(c: Chooser, options: Sequence[tuple[int, Any]]) -> Any:
    """One of ``options`` ((weight, value)); a ``Lazy`` is built only when chosen, any other value
    is copied."""
    total = 0
    for w, _ in options:
        total += w
    r = c.index(total)
    for w, v in options:
        if r < w:
            return v.make() if isinstance(v, Lazy) else _copied(v)
        r -= w
    raise AssertionError("unreachable")


def _copied(value: Any) -> Any:
    """``value``, copied when it could be changed later (a dict or a list)."""
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


@dataclass(frozen=True)
class Lazy:
    """An option of :func:`pick` built only when chosen."""

    make: Callable[[], Any]


def put(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    if value is not ABSENT:
        d[key] = value
    return d


def how_many_edges(c: Chooser, fields: Sequence[str]) -> set[str]:
    """Which fields of an object get edge values (the rest stay valid): none for one object in
    seven, one for half, two or three for the rest; one wrong thing at a time is what tells a
    missing rule from a wrong one."""
    return set(c.sample(fields, pick(c, [(15, 0), (50, 1), (25, 2), (10, 3)])))


def strategy(fn: Callable[[Chooser], Any]) -> st.SearchStrategy[Any]:
    """The hypothesis strategy of a generator written against :class:`Chooser`."""
    return st.composite(lambda draw: fn(Chooser(draw)))()


# --- names ------------------------------------------------------------------------------------


def _run(c: Chooser, n: int, ends: str, inner: str) -> str:
    """``n`` characters, the first and last from ``ends``, the rest from ``ends + inner``."""
    if n <= 0:
        return ""
    rng = c.rng()
    text = rng.choices(ends + inner, k=n)
    text[0], text[-1] = rng.choice(ends), rng.choice(ends)
    return "".join(text)


def subdomain_text(c: Chooser, n: int) -> str:
    """A valid DNS subdomain of exactly ``n`` characters (dots only between alphanumerics)."""
    chars = list(_run(c, n, LOWER, "-."))
    for i in range(1, len(chars) - 1):
        if chars[i] == "." and (chars[i - 1] in "-." or chars[i + 1] in "-."):
            chars[i] = "a"
    return "".join(chars)


def spoiled(c: Chooser, name: str) -> str:
    """``name`` with one character replaced where it hurts (start, end, inside), or upper-cased."""
    bad, where = c.choice(BAD_CHARS), c.choice(("start", "end", "inside", "upper"))
    if where == "upper":
        return name.upper() if name.upper() != name else "X" + name
    if where == "start" or not name:
        return bad + name[1:]
    if where == "end":
        return name[:-1] + bad
    i = c.index(len(name))
    return name[:i] + bad + name[i + 1:]


def _length(c: Chooser, limit: int) -> int:
    return int(pick(c, [(1, Lazy(lambda: c.choice((1, 2, limit - 1, limit)))), (1, Lazy(lambda: c.integer(1, 20)))]))


def dns_label(c: Chooser, ok: bool = False) -> str:
    """RFC 1123 label (≤ 63)."""
    good = _run(c, _length(c, 63), LOWER, "-")
    if ok:
        return good
    return str(pick(c, [(10, good), (3, Lazy(lambda: spoiled(c, good))), (1, Lazy(lambda: _run(c, 64, LOWER, "-"))),
                        (1, "")]))


def dns_subdomain(c: Chooser, ok: bool = False) -> str:
    """RFC 1123 subdomain (≤ 253, dotted)."""
    n = int(pick(c, [(1, Lazy(lambda: c.choice((1, 63, 64, 100, 252, 253)))), (1, Lazy(lambda: c.integer(1, 30)))]))
    good = subdomain_text(c, n)
    if ok:
        return good
    return str(pick(c, [(10, good), (3, Lazy(lambda: spoiled(c, good))), (1, Lazy(lambda: subdomain_text(c, 254))),
                        (1, good[:1] + ".." + good[1:] if n > 1 else ".."), (1, "")]))


def qualified_name(c: Chooser, ok: bool = False) -> str:
    """``[prefix/]name`` (label keys, finalizers, topology keys): name ≤ 63 of
    ``[A-Za-z0-9][-A-Za-z0-9_.]*``, prefix a DNS subdomain ≤ 253."""
    name = _run(c, _length(c, 63), MIXED, "-_.")
    prefixes = [(3, ABSENT), (3, Lazy(lambda: subdomain_text(c, c.integer(1, 20)))),
                (1, Lazy(lambda: subdomain_text(c, 253)))]
    if not ok:
        prefixes += [(1, Lazy(lambda: subdomain_text(c, 254))), (1, ""),
                     (1, Lazy(lambda: spoiled(c, subdomain_text(c, 8))))]
    prefix = pick(c, prefixes)
    good = name if prefix is ABSENT else f"{prefix}/{name}"
    if ok:
        return good
    return str(pick(c, [(10, good), (3, Lazy(lambda: spoiled(c, good))), (1, Lazy(lambda: _run(c, 64, MIXED, "-_."))),
                        (1, "a/b/c"), (1, "example.com/"), (1, "")]))


def label_value(c: Chooser, ok: bool = False) -> str:
    """Empty, or ≤ 63 of ``[A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]``."""
    good = _run(c, _length(c, 63), MIXED, "-_.")
    if ok:
        return str(pick(c, [(1, ""), (4, good)]))
    return str(pick(c, [(3, ""), (10, good), (3, Lazy(lambda: spoiled(c, good))),
                        (1, Lazy(lambda: _run(c, 64, MIXED, "-_.")))]))


SEGMENTS_GOOD = ("Job", "JobSet", "my-job", "Deployment", "a", "A.b_c", "x" * 253)
SEGMENTS_BAD = (".", "..", "a/b", "%", "a%2F", "/", "...", ".a", "a..", " ")


def path_segment(c: Chooser, ok: bool = False) -> str:
    """Path-segment names: anything but ``.``, ``..`` and text with ``/`` or ``%``."""
    if ok:
        return str(c.choice(SEGMENTS_GOOD))
    return str(pick(c, [(8, Lazy(lambda: c.choice(SEGMENTS_GOOD))), (3, Lazy(lambda: c.choice(SEGMENTS_BAD))),
                        (2, Lazy(lambda: _run(c, c.choice((1, 300)), MIXED, "-_.:~"))), (1, "")]))


def text(c: Chooser, max_size: int = 40) -> str:
    """Any text (annotation values): ASCII, control characters, Latin-1, CJK, emoji; no lone
    surrogates (JSON cannot carry them to the apiserver unchanged)."""
    rng = c.rng()
    ranges = ((0x20, 0x7E), (0x00, 0x1F), (0xA0, 0xFF), (0x4E00, 0x4E80), (0x1F600, 0x1F640))
    out = []
    for _ in range(rng.randint(0, max_size)):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def mapping(c: Chooser, key: Callable[[], str], value: Callable[[], Any], lo: int, hi: int) -> dict[str, Any]:
    return {key(): value() for _ in range(c.integer(lo, hi))}


# --- UPDATE edits ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """Changes to make to the stored object: ``(path, value)`` pairs, ABSENT deletes the key.

    A path through a list index or a key that is not there is skipped (the stored object may
    lack what the edit was drawn for); a missing dict on the way is created.
    """

    ops: tuple[tuple[tuple[Any, ...], Any], ...]
    name: str = ""
    notes: dict[str, Any] = field(default_factory=dict, compare=False)

    def __call__(self, stored: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(stored)
        for path, value in self.ops:
            assign(out, path, copy.deepcopy(value))
        return out

    def __repr__(self) -> str:
        return f"Edit({self.name or ''}{list(self.ops)!r})"


def assign(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    cur = doc
    for key in path[:-1]:
        if isinstance(key, int):
            if not isinstance(cur, list) or not -len(cur) <= key < len(cur):
                return
            cur = cur[key]
        else:
            if not isinstance(cur, dict):
                return
            if not isinstance(cur.get(key), (dict, list)):
                cur[key] = {}
            cur = cur[key]
    last = path[-1]
    if isinstance(last, int):
        if isinstance(cur, list) and -len(cur) <= last < len(cur):
            if value is ABSENT:
                del cur[last]
            else:
                cur[last] = value
        elif isinstance(cur, list) and last == len(cur) and value is not ABSENT:
            cur.append(value)
    elif isinstance(cur, dict):
        if value is ABSENT:
            cur.pop(last, None)
        else:
            cur[last] = value


# --- judging UPDATE pairs --------------------------------------------------------------------


def judge_updates(oracle: Any, family: str, pairs: Sequence[tuple[dict[str, Any], Edit]],
                  profiles_of: Any) -> tuple[list[Any], int]:
    """Store each old object for real in its profiles, dry-run the edit of what was stored, and
    compare with our verdict on the same (old, new); (disagreements, comparisons made).

    A pair whose old object upstream refuses (or does not serve) is not a comparison.
    """
    from tests.differential.compare import compare
    from tests.differential.ours import our_verdict
    from tests.differential.profiles import profiles

    profs = profiles()
    oracle.prepare([o for o, _ in pairs] + [e({"metadata": {}}) for _, e in pairs])
    jobs = [(p, i, old, edit) for i, (old, edit) in enumerate(pairs) for p in profiles_of(i)]
    answers = oracle.update_many([(p, old, edit) for p, _, old, edit in jobs])
    found, total = [], 0
    for (p, i, _, edit), (first, new, up) in zip(jobs, answers, strict=True):
        if new is None or first.stored is None or not up.served:
            continue
        total += 1
        ours = our_verdict(new, profs[p], old=first.stored)
        if (d := compare(f"{family}#{i} {edit!r}", p, new, ours, up, old=first.stored)) is not None:
            found.append(d)
    return found, total


def served_rotation(kinds_need_generic: bool) -> Any:
    """``profiles_of`` for judge(): `all-on` and one other profile in turn, leaving out the
    profiles that do not serve the kind (GenericWorkload off: no PodGroup, no Workload)."""
    from tests.differential.profiles import profiles

    others = [p for p in profiles() if p != "all-on"
              and not (kinds_need_generic and not profiles()[p].get("GenericWorkload", False))]
    if not others:
        return lambda i: ["all-on"]
    return lambda i: ["all-on", others[i % len(others)]]


def rotation_by_kind(kinds: Sequence[str]) -> Callable[[int], list[str]]:
    """``profiles_of`` for objects of several kinds (``kinds[i]`` is object i's): PodGroups and
    Workloads only in the profiles that serve them."""
    everything, served = served_rotation(False), served_rotation(True)
    return lambda i: (served if kinds[i] in ("PodGroup", "Workload") else everything)(i)


def draw_unique(strat: st.SearchStrategy[Any], n: int, salt: int) -> list[Any]:
    """``n`` distinct examples (hypothesis mutates earlier examples and repeats some): draws
    more, with further seeds, until there are ``n`` different ones (or the strategy runs dry)."""
    from tests.differential.generated import draw_many

    seen: set[str] = set()
    out: list[Any] = []
    for round_ in range(6):
        for x in draw_many(strat, max(n - len(out), 1) * 3 // 2 + 10, salt + 7919 * round_):
            key = json.dumps(x, sort_keys=True, default=repr)
            if key not in seen:
                seen.add(key)
                out.append(x)
        if len(out) >= n:
            return out[:n]
    return out
