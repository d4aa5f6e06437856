"""What a rule may know about the request: gates, operation, old object. Nothing else.

No rule reads the environment, the clock or the network; everything arrives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.gates import FeatureGates


@dataclass(frozen=True, slots=True)
class RuleContext:
    gates: FeatureGates
    operation: str = "CREATE"
    """CREATE, UPDATE, DELETE or CONNECT."""
    old: dict[str, Any] | None = None
    """The stored object on UPDATE (as the apiserver sends ``oldObject``), else None."""
    subresource: str = ""
    """"" for the main resource, "status" for the status subresource."""
    dry_run: bool = False

    def is_update(self) -> bool:
        return self.operation == "UPDATE" and self.old is not None


@dataclass(slots=True)
class Mutation:
    """JSON Patch operations (RFC 6902, applied in order to the incoming object) plus warnings."""

    ops: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Mutation) -> None:
        self.ops.extend(other.ops)
        self.warnings.extend(other.warnings)
