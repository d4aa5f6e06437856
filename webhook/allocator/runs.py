"""Runs of consecutive candidate nodes of one class, taken together by ``engine.allocate``.

Pure. ``allocate`` walks its candidate nodes in order. Where nodes of one class follow each
other and that class was searched already (in this call, or for claims of the same content in
an earlier call of one placement: ``heldclasses.ClassMemo``), the whole run is taken at once, with
the reasons and steps of that search (``known_run``). Finding where a run ends means asking
each node its class; that is done once and kept:

- for the model's own node list (every node, in name order) in the model (``classes.run_end``);
- for a ``NodeList``, a candidate list that never changes (the nodes the node filters let one
  pod shape on: ``workloads.nodeuse``), in the model too, per list (at most ``LISTS_MAX``).

The kept ends are those of the model's classes. Nodes whose view differs from the model's in
this call (devices earlier pods or allocated input claims took: ``Failures.dirty``) have a class
of their own, so a kept run is cut at the first of them, and a run that starts at one is found
node by node. A placement of many replicas thus asks each node its class once per snapshot,
not once per replica.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from webhook.allocator.classes import class_of, node_names, run_end
from webhook.allocator.heldclasses import FITS, Failures
from webhook.allocator.model import Model

LISTS_MAX = 32
"""``NodeList``s whose runs a model keeps at most (one per pod shape asked about)."""


class NodeList(tuple[str, ...]):
    """Candidate node names, in order, that never change: ``allocate`` keeps where their runs of
    one class end (in the model, per list), so that a later call with the same list does not ask
    every node its class again."""

    __slots__ = ()


class Runs:
    """Where the runs of ``names`` end, for one ``allocate`` call: the kept ends, cut at the
    nodes whose view differs from the model's in this call."""

    __slots__ = ("model", "ends", "cuts")

    def __init__(self, model: Model, ends: dict[int, int] | None, cuts: list[int]) -> None:
        self.model = model
        self.ends = ends
        """Start -> end of the kept runs (None: the model's own list, ``classes.run_end``)."""
        self.cuts = cuts
        """The positions of the nodes whose view differs, sorted."""

    @classmethod
    def of(cls, classes: Failures, names: Sequence[str]) -> Runs | None:
        """The runs of ``names`` when they can be kept (the model's list or a ``NodeList``), else None."""
        model = classes.model
        if names is node_names(model):
            if not classes.dirty:  # no cuts: the name -> position index is not needed
                return cls(model, None, [])
            ends, index = None, _model_index(model)
        elif isinstance(names, NodeList):
            ends, index = _list_entry(model, names)
        else:
            return None
        cuts = sorted(index[n] for n in classes.dirty if n in index) if classes.dirty else []
        return cls(model, ends, cuts)

    @classmethod
    def kept(cls, model: Model, names: Sequence[str]) -> Runs | None:
        """The runs of ``names`` under the model's allocated state, when they can be kept."""
        if names is node_names(model):
            return cls(model, None, [])
        if isinstance(names, NodeList):
            return cls(model, _list_entry(model, names)[0], [])
        return None

    def end(self, names: Sequence[str], i: int) -> int:
        """Where the run of the model's class of ``names[i]`` ends (exclusive), cut at the next
        node whose view differs. ``names[i]``'s own view must be the model's."""
        if self.ends is None:
            got = run_end(self.model, i)
        else:
            got = self.ends.get(i, 0)
            if not got:
                got = self.ends[i] = _walk(self.model, names, i)
        if self.cuts:
            k = bisect_right(self.cuts, i)
            if k < len(self.cuts):
                got = min(got, self.cuts[k])
        return got


def _walk(model: Model, names: Sequence[str], i: int) -> int:
    cls = class_of(model, names[i])
    end = i + 1
    while cls is not None and end < len(names) and class_of(model, names[end]) == cls:
        end += 1
    return end


def _model_index(model: Model) -> dict[str, int]:
    got: dict[str, int] | None = model.class_data.get("index")
    if got is None:
        got = model.class_data["index"] = {n: i for i, n in enumerate(node_names(model))}
    return got


def _list_entry(model: Model, names: NodeList) -> tuple[dict[int, int], dict[str, int]]:
    """(kept run ends, name -> position) of ``names`` in ``model``. The entry holds the list, so
    its id names no other list while it is kept; serving threads may both build one: either
    is right."""
    lists: dict[int, tuple[NodeList, dict[int, int], dict[str, int]]] = model.class_data.setdefault("lists", {})
    got = lists.get(id(names))
    if got is None or got[0] is not names:
        if len(lists) >= LISTS_MAX:
            lists.clear()
        got = lists[id(names)] = (names, {}, {n: i for i, n in enumerate(names)})
    return got[1], got[2]


def known_run(out: Any, run: Any, names: Sequence[str], i: int) -> int:
    """How many nodes from ``names[i]`` on are of one class already searched (they are taken
    together, as ``engine._try_node`` takes each: same reasons, same steps, as far as the budget
    allows); 0 when ``names[i]`` must be tried on its own. ``out`` is the call's
    ``allocation.Allocation``, ``run`` its ``engine._Run`` (not imported: engine imports this)."""
    classes = run.classes
    if classes is None or run.fixed or not (classes.by_class or classes.remembers()):
        return 0
    cls = classes.class_of(names[i])
    seen = classes.known(cls) if cls is not None else None
    if seen is None or (seen[0] is FITS and not out.feasible):  # the answer's node is searched: its devices
        return 0
    runs: Any = run.runs
    if runs is not None and names[i] not in classes.dirty:
        end = runs.end(names, i)
    else:
        end = i + 1
        while end < len(names) and classes.class_of(names[end]) == cls:
            end += 1
    why, steps = seen
    k: int = end - i if steps <= 0 else min(end - i, (run.call.limits.max_steps - out.steps) // steps)
    if k <= 0:
        return 0
    out.nodes_tried += k
    out.steps += k * steps
    if why is not FITS and not out.feasible:
        out.add_nodes(why, list(names[i:i + k]))
    return k
