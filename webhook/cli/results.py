"""What ``review`` (and ``test``) find out per input document; ``render`` words it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.admission.pipeline import Answer, Outcome


@dataclass(frozen=True)
class Reviewed:
    """One object's review: what the pipeline found and the AdmissionReview it answers."""

    obj: dict[str, Any]
    """The object as given (before defaults)."""
    outcome: Outcome
    answer: Answer
    request: dict[str, Any]
    """The AdmissionReview request it answers."""
    origin: str = ""
    problem: str = ""
    """Why the object was not checked (unknown kind, unserved version); "" when it was."""
    strict: bool = False
    refused: str = ""
    """The apiserver's HTTP 400 message when it would not even decode the object; "" otherwise."""

    @property
    def findings(self) -> list[str]:
        """The lint findings (pool, standard attributes), worded whole."""
        return [f.text for f in self.outcome.findings]

    @property
    def failed(self) -> bool:
        """Denied, or (with ``--strict``) not checked or with findings."""
        return not self.answer.allowed or (self.strict and bool(self.problem or self.outcome.findings))


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
