"""What the commands find out, as data: ``review`` (and ``test``) per input document, ``test`` per
suite, ``simulate``, ``explain``, ``capacity``, ``gates`` and ``--compare-gates``. The commands build
these and ``render`` (``render_planning``) words them; both take the types from here, never from
each other's modules. ``Reviewed`` is the offline review's own value (``admission.offline`` builds
it); it is listed here with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from webhook.admission.offline import Reviewed
from webhook.allocator.allocation import Allocation
from webhook.planning import Explanation
from webhook.workloads import Placement, Workload, report

__all__ = ["CaseResult", "Difference", "Expectation", "Explained", "GateRow", "Result", "ReviewComparison",
           "Reviewed", "Simulation", "SimulationComparison", "Skipped", "Suite", "SuiteResult"]


@dataclass(frozen=True)
class Skipped:
    """A document that is not a Kubernetes object (a note, or with ``--strict`` a failure)."""

    origin: str
    problem: str
    strict: bool = False

    @property
    def failed(self) -> bool:
        return self.strict


Result = Reviewed | Skipped


class GateRow(TypedDict):
    """One row of ``dra-webhook gates`` (also its JSON output)."""

    name: str
    stage: str
    default: bool
    locked: bool
    enabled: bool
    effect: str


@dataclass(frozen=True)
class Simulation:
    """The allocator's answer for the input objects (claims), or where their pods go."""

    outcome: Allocation
    mode: str
    claims: int
    seconds: float = 0.0
    """The allocation alone (model build and search; the state was loaded before)."""
    placement: Placement | None = None
    """Pods and workloads: where each pod went (``outcome`` is then the first unplaced pod's)."""
    sources: tuple[Workload, ...] = ()
    """The Pods and workloads placed, in input order."""

    @property
    def workloads(self) -> bool:
        """A workload kind is among the inputs (the JSON then says ``placed`` and ``replicas``)."""
        return any(w.kind != "Pod" for w in self.sources)

    @property
    def feasible(self) -> bool:
        return self.placement.feasible if self.placement is not None else self.outcome.feasible

    @property
    def exit_code(self) -> int:
        return 0 if self.feasible else 1

    @property
    def allocations(self) -> list[dict[str, Any]]:
        """Every claim allocated (``{"claim", "results"}``), as DESIGN.md's ``allocations``."""
        return self.placement.allocations if self.placement is not None else self.outcome.allocations()

    @property
    def allocated(self) -> list[tuple[str, dict[str, Any]]]:
        """``(claim, result)`` for each device allocated, in ``allocations`` order."""
        return [(a["claim"], r) for a in self.allocations for r in a["results"]]

    @property
    def reasons(self) -> list[str]:
        """Why not (or notes), worded by ``allocator.reasons``, most useful first: for pods and
        workloads nothing when every pod was placed, else why the first unplaced one was not; for
        claims the outcome's reasons, then its message when not feasible."""
        if self.placement is not None:
            return [] if self.placement.feasible else report.reason_texts(self.placement)
        reasons = self.outcome.reason_texts()
        if not self.outcome.feasible and self.outcome.message and self.outcome.message not in reasons:
            reasons.append(self.outcome.message)
        return reasons


@dataclass(frozen=True)
class Expectation:
    """What one resource of a test suite must get (``expect[]`` of the suite file)."""

    resource: str
    result: str = "allowed"
    causes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    stripped: tuple[str, ...] = ()
    pool_findings: tuple[str, ...] = ()
    fits: int | None = None
    """Pods and workloads: how many of the replicas ``simulate`` must place."""


@dataclass(frozen=True)
class Suite:
    """A test suite as its file states it (paths resolved against the file)."""

    file: Path
    name: str
    gates: dict[str, bool]
    cluster_state: Path | None
    resources: tuple[Path, ...]
    expect: tuple[Expectation, ...]


@dataclass
class CaseResult:
    """One resource (or expectation) of a suite: what failed, if anything."""

    resource: str
    origin: str
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class SuiteResult:
    """One suite's run: a case per resource or expectation."""

    suite: Suite
    cases: list[CaseResult]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)


@dataclass(frozen=True)
class Difference:
    """One thing that differs between the two sides of ``--compare-gates``."""

    subject: str
    """The object it concerns (``Kind name``); "" for a simulation (one answer for all inputs)."""
    what: str
    """``verdict`` or ``feasible`` (then ``on`` and ``off`` are both set), else the kind of item
    one side has and the other lacks: ``patch``, ``cause``, ``warning``, ``allocation``, ``reason``."""
    on: Any
    """The value with the gates on: a bool, or the item (a patch op, a ``FieldError``, a warning, an
    allocation ``(claim, result)``, a reason) when only this side has it; None otherwise."""
    off: Any
    failing: str = ""
    """The sides on which the subject is denied / infeasible (``on``, ``off``, ``on and off``); ""
    when both pass. A difference with a failing side is part of a run that exits 1."""


@dataclass(frozen=True)
class ReviewComparison:
    """``review --compare-gates``: every object reviewed with the gates on and off, and what differs."""

    gates: list[str]
    on: list[Reviewed]
    off: list[Reviewed]
    """In the same order as ``on``: one entry per object."""
    differences: list[Difference]
    failing: list[tuple[str, str]]
    """(subject, sides) of every object denied on a side (``Difference.failing``)."""
    exit_code: int


@dataclass(frozen=True)
class SimulationComparison:
    """``simulate --compare-gates``: the simulation with the gates on and off, and what differs."""

    gates: list[str]
    on: Simulation
    off: Simulation
    differences: list[Difference]
    exit_code: int


@dataclass(frozen=True)
class Explained:
    """``explain``'s answer and, for a live pod, the scheduler's own last word on it."""

    explanation: Explanation
    scheduler: str | None = None
    """The message of the scheduler's latest FailedScheduling event (None: none, or not live)."""
    live: bool = False

    @property
    def exit_code(self) -> int:
        return self.explanation.exit_code
