"""The one admission pipeline: mutate → validate the mutated object → warnings → feasibility.

Used by the HTTP server (``/mutate``, ``/validate``) and by ``dra-webhook review``; the two
shells only choose which parts of the outcome go into the response. Pure apart from the
clock used for the deadline: no Flask, no network.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.response import build_response, sanitize_warnings
from webhook.config import Settings
from webhook.fielderrors import FieldError
from webhook.patch import PatchError, apply_patch
from webhook.rules import SERVED_VERSIONS, rules_for
from webhook.rules.context import Mutation, RuleContext
from webhook.state.base import ClusterSnapshot, StateSource, stale_note

log = logging.getLogger(__name__)

Endpoint = Literal["mutate", "validate", "review"]

FEASIBILITY_KINDS = ("ResourceClaim", "ResourceClaimTemplate", "PodGroup")


@dataclass
class Outcome:
    """Everything the pipeline found out about one request."""

    request: AdmissionRequest
    handled: bool = False
    errors: list[FieldError] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)
    mutated: dict[str, Any] | None = None
    mutation_warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    feasibility: list[str] = field(default_factory=list)
    feasibility_checked: bool = False

    @property
    def allowed(self) -> bool:
        return not self.errors


def evaluate(req: AdmissionRequest, settings: Settings, state: StateSource | None = None, *,
             deadline: float | None = None, endpoint: Endpoint = "review") -> Outcome:
    """Run the rules for one request. ``deadline`` is a ``time.monotonic()`` value."""
    out = Outcome(req)
    if req.operation not in ("CREATE", "UPDATE") or req.obj is None:
        return out
    rules = rules_for(req.group, req.kind)
    if rules is None:
        return out
    if req.version and req.version not in SERVED_VERSIONS.get(req.group, ()):
        served = "/".join(filter(None, (req.group, SERVED_VERSIONS.get(req.group, ("?",))[0])))
        out.notes.append(f"{req.kind} {req.group}/{req.version} is not checked; "
                         f"dra-webhook validates {served} (the version Kubernetes 1.37 serves)")
        return out
    out.handled = True
    ctx = RuleContext(gates=settings.gates, operation=req.operation, old=req.old,
                      subresource=req.subresource, dry_run=req.dry_run)
    mutation, obj = _mutate(rules, req, ctx, settings, state, defaults=endpoint != "validate",
                            deadline=deadline)
    out.patch = mutation.ops
    out.mutation_warnings = mutation.warnings
    out.mutated = obj
    if endpoint == "mutate":
        return out
    if ctx.is_update() and req.old is not None:
        out.errors = list(rules.validate_update(obj, req.old, ctx))
    else:
        out.errors = list(rules.validate(obj, ctx))
    out.notes.extend(rules.warnings(obj, ctx))
    out.notes.extend(_state_notes(rules, obj, state))
    if out.allowed and settings.feasibility and req.kind in FEASIBILITY_KINDS and (
            req.operation == "CREATE" or req.dry_run) and req.subresource == "":
        out.feasibility = _feasibility(obj, settings, state, deadline)
        out.feasibility_checked = True
    return out


def _mutate(rules: ModuleType, req: AdmissionRequest, ctx: RuleContext, settings: Settings,
            state: StateSource | None, *, defaults: bool,
            deadline: float | None) -> tuple[Mutation, dict[str, Any]]:
    """The rules' strips plus, when ``defaults``, capacity defaulting; and the patched object.

    ``/validate`` skips defaulting: the validating webhook cannot return a patch, and the
    capacity requests it would add are never validated (RC-EX-8), so it cannot change a verdict.
    """
    assert req.obj is not None
    mutation: Mutation = rules.mutate(req.obj, ctx)
    obj = _patched(req, req.obj, mutation)
    if obj is None:
        return Mutation(), req.obj
    if defaults and req.kind in ("ResourceClaim", "ResourceClaimTemplate") and req.operation == "CREATE" \
            and settings.capacity_defaulting and state is not None:
        from webhook.defaulting import plan_capacity_defaults
        try:
            extra = plan_capacity_defaults(obj, state.snapshot(), settings.gates,
                                           deadline=_budget_end(settings, deadline))
        except Exception:  # defaulting is a convenience: never fail the request for it
            log.exception("capacity defaulting failed (uid=%s)", req.uid)
            extra = Mutation()
        defaulted = _patched(req, obj, extra)
        if defaulted is not None:
            mutation.extend(extra)
            obj = defaulted
    return mutation, obj


def _patched(req: AdmissionRequest, obj: dict[str, Any], mutation: Mutation) -> dict[str, Any] | None:
    """``obj`` with the mutation applied; None (logged) when it does not apply, which is our bug:
    never let it turn into a bad patch for the apiserver."""
    if not mutation.ops:
        return obj
    try:
        patched: dict[str, Any] = apply_patch(obj, mutation.ops)
        return patched
    except PatchError:
        log.exception("internal error: patch does not apply (uid=%s kind=%s)", req.uid, req.kind)
        return None


def _budget_end(settings: Settings, deadline: float | None) -> float:
    """When optional work (defaulting, feasibility) must stop: before the request deadline
    minus the margin, and at most ``feasibility_timeout_seconds`` from now."""
    now = time.monotonic()
    end = (deadline if deadline is not None else now + settings.default_timeout_seconds) \
        - settings.deadline_margin_seconds
    return min(end, now + settings.feasibility_timeout_seconds)


def _state_notes(rules: ModuleType, obj: dict[str, Any], state: StateSource | None) -> list[str]:
    """Kind-specific notes that need the cluster state (e.g. a pod joining a PodGroup)."""
    hook = getattr(rules, "state_warnings", None)
    if hook is None or state is None:
        return []
    try:
        notes: list[str] = hook(obj, state.snapshot())
        return notes
    except Exception:
        log.exception("state-based warnings failed")
        return []


def _feasibility(obj: dict[str, Any], settings: Settings, state: StateSource | None,
                 deadline: float | None) -> list[str]:
    """Feasibility warnings; any failure here only ever becomes a warning."""
    if state is None:
        return []
    if not state.ready():
        return ["feasibility: not checked, cluster state is not synced yet"]
    now = time.monotonic()
    budget_end = _budget_end(settings, deadline)
    if budget_end <= now:
        return ["feasibility: not checked, no time left before the request deadline"]
    try:
        from webhook.allocator.feasibility import feasibility_warnings
        snap: ClusterSnapshot = state.snapshot()
        warnings: list[str] = feasibility_warnings(
            obj, snap, settings.gates, deadline=budget_end, max_steps=settings.allocator_max_steps)
        note = stale_note(state)
        if note:
            warnings.append(f"feasibility: {note}; the answer may be out of date")
        return warnings
    except Exception as e:  # a failure in the check only ever adds a warning
        log.exception("feasibility check failed")
        return [f"feasibility: check failed: {type(e).__name__}"]


def respond(out: Outcome, settings: Settings, endpoint: Endpoint,
            api_version: str = "admission.k8s.io/v1") -> dict[str, Any]:
    """The AdmissionReview for one endpoint.

    ``mutate``: allowed, the patch and the mutation warnings (never a denial: validation is the
    validating webhook's job). ``validate``: the verdict plus every warning, never a patch.
    ``review`` (CLI): everything.
    """
    req = out.request
    if endpoint == "mutate":
        warnings = out.mutation_warnings + out.notes
        allowed, errors, patch = True, [], out.patch
    else:
        warnings = out.mutation_warnings + out.notes + out.feasibility
        allowed, errors = out.allowed, out.errors
        patch = out.patch if endpoint == "review" else []
    return build_response(
        req.uid, allowed=allowed, errors=errors, kind=req.kind, group=req.group,
        name=req.display_name, patch=patch, api_version=api_version,
        warnings=sanitize_warnings(warnings, max_count=settings.max_warnings,
                                   max_length=settings.max_warning_length))


def review(doc: Any, settings: Settings, state: StateSource | None = None, *,
           endpoint: Endpoint = "review", deadline: float | None = None) -> tuple[dict[str, Any], Outcome]:
    """Parse an AdmissionReview document, evaluate it and build the response.

    Raises ``BadReview`` when ``doc`` is not an AdmissionReview.
    """
    req = parse_review(doc)
    out = evaluate(req, settings, state, deadline=deadline, endpoint=endpoint)
    return respond(out, settings, endpoint), out
