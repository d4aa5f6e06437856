"""What a rule may know about the request: gates, operation, old object. Nothing else.

No rule reads the environment, the clock or the network; everything arrives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.gates import FeatureGates
from webhook.patch import op_remove, plan_restore


@dataclass(slots=True)
class RuleContext:
    """Read-only by convention (rules never assign to it). Not frozen: a frozen dataclass sets each
    field through ``object.__setattr__``, and one is built per review (1.4 µs frozen, 0.4 µs not)."""

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


def plan_status_split(obj: dict[str, Any], ctx: RuleContext) -> list[dict[str, Any]]:
    """What the strategy of a kind with a ``/status`` subresource does to the two halves, as JSON
    Patch: CREATE drops the status; an UPDATE of the main resource keeps the stored status; an
    UPDATE of ``/status`` keeps the stored spec."""
    old = ctx.old if isinstance(ctx.old, dict) else {}
    if ctx.subresource == "status":
        return plan_restore("spec", obj, old) if ctx.is_update() else []
    if ctx.is_update():
        return plan_restore("status", obj, old)
    return [op_remove("/status")] if "status" in obj else []
