"""What the commands find out, as data: ``review`` (and ``test``) per input document, ``test`` per
suite, ``simulate``, ``explain``, ``capacity``, ``gates`` and ``--compare-gates``. The commands build
these and ``render`` (``render_planning``) words them; both take the types from here, never from
each other's modules. ``Reviewed`` is the offline review's own value (``admission.offline`` builds
it); it is listed here with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webhook.admission.offline import Reviewed
from webhook.allocator.engine import Outcome as Allocation
from webhook.planning import Explanation
from webhook.workloads import Placement, Workload

__all__ = ["CaseResult", "Comparison", "Expectation", "Explained", "Result", "Reviewed", "Simulation", "Skipped",
           "Suite", "SuiteResult"]


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
class Comparison:
    """Both sides (as their JSON documents) and the differences, worded."""

    gates: list[str]
    on: Any
    off: Any
    differences: list[str]
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
