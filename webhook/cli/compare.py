"""``--compare-gates``: the same objects with named gates on and off, side by side.

``review --compare-gates`` compares what gets stripped, the verdict and causes, and warnings;
``simulate --compare-gates`` compares feasibility, chosen devices and reasons (pools that become
incomplete or skipped show up there). Both sides are computed here and compared as data (the
pipeline's answers, the allocator's results), never as printed text; ``render`` words the
``ReviewComparison`` / ``SimulationComparison`` (``-o json``: ``{"gates", "on", "off",
"differences"}``). Exit code: 1 when either side is denied / infeasible, else 0.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from webhook.cli.common import EXIT_DENIED, EXIT_OK
from webhook.cli.results import Difference, ReviewComparison, Reviewed, Simulation, SimulationComparison
from webhook.config import Settings
from webhook.gates import FeatureGates


def _with(settings: Settings, names: list[str], value: bool) -> Settings:
    """The settings with ``names`` on or off (and what they require on / what requires them off)."""
    return replace(settings, gates=settings.gates.toggled(names, value))


def failing_sides(on: bool, off: bool) -> str:
    """``Difference.failing`` from whether each side passes."""
    return " and ".join(side for side, ok in (("on", on), ("off", off)) if not ok)


def only_on_one_side(subject: str, what: str, on: Sequence[Any], off: Sequence[Any],
                     key: Callable[[Any], Hashable], failing: str) -> list[Difference]:
    """A difference for each item of one side whose ``key`` the other side lacks (on's first)."""
    keys_on, keys_off = [key(x) for x in on], [key(x) for x in off]
    return ([Difference(subject, what, x, None, failing) for x, k in zip(on, keys_on, strict=True) if k not in keys_off]
            + [Difference(subject, what, None, x, failing) for x, k in zip(off, keys_off, strict=True)
               if k not in keys_on])


def _patch_key(op: dict[str, Any]) -> Hashable:
    return op["op"], op["path"]


def _same(x: Any) -> Hashable:
    return repr(x)  # FieldErrors may carry unhashable values; equal errors have equal reprs


def review_differences(on: Reviewed, off: Reviewed) -> list[Difference]:
    """What differs for one object: verdict, then patch ops, causes and warnings one side has."""
    who, a, b = on.subject, on.answer, off.answer
    failing = failing_sides(a.allowed, b.allowed)
    out = [Difference(who, "verdict", a.allowed, b.allowed, failing)] if a.allowed != b.allowed else []
    out += only_on_one_side(who, "patch", a.patch, b.patch, _patch_key, failing)
    out += only_on_one_side(who, "cause", on.outcome.errors if not a.allowed else [],
                            off.outcome.errors if not b.allowed else [], _same, failing)
    out += only_on_one_side(who, "warning", a.warnings, b.warnings, _same, failing)
    return out


def compare_review(review: Callable[[Settings], list[Reviewed]], settings: Settings,
                   names: list[str]) -> ReviewComparison:
    """``review(settings)`` with the named gates on, then off."""
    on, off = (review(_with(settings, names, value)) for value in (True, False))
    differences = [d for a, b in zip(on, off, strict=True) for d in review_differences(a, b)]
    failing = [(a.subject, sides) for a, b in zip(on, off, strict=True)
               if (sides := failing_sides(a.answer.allowed, b.answer.allowed))]
    return ReviewComparison(names, on, off, differences, failing, EXIT_DENIED if failing else EXIT_OK)


def _allocation_key(item: tuple[str, dict[str, Any]]) -> Hashable:
    claim, r = item
    return claim, r["request"], r["pool"], r["device"]


def compare_simulate(simulate: Callable[[FeatureGates], Simulation], settings: Settings,
                     names: list[str]) -> SimulationComparison:
    """``simulate(gates)`` with the named gates on, then off."""
    on, off = (simulate(_with(settings, names, v).gates) for v in (True, False))
    failing = failing_sides(on.feasible, off.feasible)
    differences = [Difference("", "feasible", on.feasible, off.feasible, failing)] \
        if on.feasible != off.feasible else []
    differences += only_on_one_side("", "allocation", on.allocated, off.allocated, _allocation_key, failing)
    differences += only_on_one_side("", "reason", on.reasons, off.reasons, _same, failing)
    return SimulationComparison(names, on, off, differences, EXIT_DENIED if failing else EXIT_OK)
