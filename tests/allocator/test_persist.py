"""``persist``: a ``Layered`` map reads as the dict it stands for after any mix of writes, removals
and children (the parent unchanged by a child's writes, folded or not); a ``Chunked`` sequence
spliced at any place reads as the tuple spliced the same way; ``runs_after`` splits cached runs
at the changed node."""

from __future__ import annotations

import random
from typing import Any

import pytest

from webhook.allocator import persist
from webhook.allocator.persist import Chunked, Layered, runs_after, splice

# (id, base size, operations): ("set", k, v), ("pop", k), ("child",): later operations go to a
# child of the mapping so far, and the parent must still read as it did.
LAYERED: list[tuple[str, int, list[tuple[Any, ...]]]] = [
    ("empty-then-writes", 0, [("set", "a", 1), ("set", "b", 2), ("pop", "a")]),
    ("pop-a-base-key-hides-it", 10, [("pop", "k3"), ("child",), ("set", "k3", 7)]),
    ("pop-missing-is-a-no-op", 5, [("pop", "zz"), ("child",), ("pop", "zz")]),
    ("overwrite-then-pop", 5, [("set", "k1", "x"), ("child",), ("pop", "k1"), ("set", "k1", "y")]),
    ("children-of-children", 20, [("child",), ("pop", "k0"), ("child",), ("set", "new", 1), ("child",),
                                  ("pop", "new"), ("set", "k0", 0)]),
    ("large-overlay-folds", 8, [*(("set", f"n{i}", i) for i in range(200)), ("pop", "k2"), ("child",),
                                ("pop", "n5"), ("set", "k2", 2)]),
]


def _base(n: int) -> dict[str, Any]:
    return {f"k{i}": i for i in range(n)}


def _reads(m: Layered[str, Any], keys: list[str]) -> tuple[Any, ...]:
    return (dict(m.items()), len(m), [k in m for k in keys], [m.get(k, "-") for k in keys], list(m))


@pytest.mark.parametrize(("base", "ops"), [c[1:] for c in LAYERED], ids=[c[0] for c in LAYERED])
def test_a_layered_map_reads_as_the_dict_it_stands_for(base: int, ops: list[tuple[Any, ...]]) -> None:
    m: Layered[str, Any] = Layered(_base(base))
    ref = _base(base)
    keys = [*ref, "a", "b", "zz", "new", "n5", "n199"]
    history: list[tuple[Layered[str, Any], tuple[Any, ...]]] = []
    for op in ops:
        if op[0] == "child":
            history.append((m, _reads(m, keys)))
            m = m.child()
        elif op[0] == "set":
            m[op[1]] = op[2]
            ref[op[1]] = op[2]
        else:
            assert m.pop(op[1], "-") == ref.pop(op[1], "-")
        assert (dict(m.items()), len(m)) == (ref, len(ref))
        assert list(m) == list(ref) or sorted(m) == sorted(ref)
    assert [m.get(k, "-") for k in keys] == [ref.get(k, "-") for k in keys]
    assert [k in m for k in keys] == [k in ref for k in keys]
    for parent, seen in history:  # a child's writes never reach its parent
        assert _reads(parent, keys) == seen


def test_a_child_shares_its_parents_base_until_its_overlay_grows() -> None:
    m: Layered[str, int] = Layered(_base(10_000))
    c = m.child()
    c.pop("k1")
    assert c.base is m.base and len(c.over) == 1
    for i in range(persist.FOLD_MIN + 1):
        c[f"x{i}"] = i
    assert c.child().base is c.base  # small against its base: still shared
    for i in range(10_000 // persist.FOLD_SHARE):
        c[f"y{i}"] = i
    folded = c.child()
    assert folded.base is not c.base and not folded.over and dict(folded.items()) == dict(c.items())


@pytest.mark.parametrize("size", [0, 1, persist.CHUNK - 1, persist.CHUNK, 3 * persist.CHUNK + 5], ids=str)
def test_a_chunked_sequence_spliced_anywhere_reads_as_the_tuple(size: int) -> None:
    r = random.Random(size)
    items = [object() for _ in range(size)]
    seq, ref = Chunked(items), tuple(items)
    for _ in range(60):
        kind = r.choice(["replace", "remove", "insert"]) if ref else "insert"
        if kind == "insert":
            i, new = r.randint(0, len(ref)), object()
            got = seq.spliced(i, None, new)
            ref = ref[:i] + (new,) + ref[i:]
        else:
            i = r.randrange(len(ref))
            new = object() if kind == "replace" else None
            got = seq.spliced(i, ref[i], new)
            ref = ref[:i] + ((new,) if new is not None else ()) + ref[i + 1:]
        assert got is not None
        before = tuple(seq)
        seq = got
        assert tuple(seq) == ref and len(seq) == len(ref)
        assert all(seq[j] is ref[j] for j in range(0, len(ref), 7))
        if ref:
            k = r.randrange(len(ref))
            assert seq.index(ref[k]) == k and ref[k] in seq and seq[-1] is ref[-1]
        assert tuple(Chunked(before)) == before  # the sequence spliced is unchanged


@pytest.mark.parametrize(("i", "old_at", "size", "why"), [
    (3, 4, -1, "old-not-at-i"), (50, None, -1, "past-the-end"), (0, 0, 99, "size-differs")],
    ids=lambda v: v if isinstance(v, str) else None)
def test_a_splice_that_cannot_apply_asks_for_a_rebuild(i: int, old_at: int | None, size: int, why: str) -> None:
    items = [object() for _ in range(10)]
    old = items[old_at] if old_at is not None else None
    assert splice(Chunked(items), i, old, object(), size) is None


@pytest.mark.parametrize(("ends", "j", "kept", "held"), [
    ({0: 3, 3: 5, 5: 9}, 4, {0: 3, 5: 9}, {3: 5}),
    ({0: 3, 3: 5}, 3, {}, {0: 3, 3: 5}),  # a run reads its end node: j there may extend it
    ({0: 1, 2: 4}, 1, {2: 4}, {0: 1}),
    ({5: 9}, 2, {5: 9}, {}),
], ids=["inside-one-run", "at-a-runs-end-and-start", "at-the-end-of-a-run-of-one", "before-every-run"])
def test_runs_after_keeps_the_runs_that_do_not_read_the_changed_node(
        ends: dict[int, int], j: int, kept: dict[int, int], held: dict[int, int]) -> None:
    names = [f"node-{i:02d}" for i in range(10)]
    assert runs_after(ends, names, names[j]) == (j, kept, held)
    assert runs_after(ends, names, "node-xx") is None  # not a node of the list: nothing carried
