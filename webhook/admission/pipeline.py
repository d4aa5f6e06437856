"""The one admission pipeline: mutate → validate the mutated object → warnings → feasibility.

Used by the HTTP server (``/mutate``, ``/validate``) and by ``dra-webhook review``; the two
shells only choose which parts of the outcome go into the response. Per-kind facts come from
the rules registry; the cluster state is read once per request (one ``StateView``) and handed
to every step. Pure apart from the clock used for the deadline: no Flask, no network.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from webhook.admission.envelope import AdmissionRequest, parse_review
from webhook.admission.response import build_response, sanitize_warnings
from webhook.allocator.feasibility import feasibility_warnings
from webhook.allocator.impact import impact_warnings
from webhook.config import Settings
from webhook.defaulting import plan_capacity_defaults
from webhook.fielderrors import FieldError
from webhook.patch import PatchError, apply_patch
from webhook.rules.context import Mutation, RuleContext
from webhook.rules.kind import KindRules
from webhook.rules.registry import rules_for
from webhook.state.base import StateSource, StateView

log = logging.getLogger(__name__)

Endpoint = Literal["mutate", "validate", "review"]


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


@dataclass(frozen=True)
class Answer:
    """The AdmissionReview for one endpoint plus the facts the shells log and count."""

    review: dict[str, Any]
    allowed: bool
    warnings: list[str]
    """As sent: sanitised, capped."""
    patch: list[dict[str, Any]]
    """The JSON Patch sent (empty on ``/validate``)."""
    causes: list[str]
    """The fields of the causes of a denial."""


def evaluate(req: AdmissionRequest, settings: Settings, state: StateSource | None = None, *,
             deadline: float | None = None, endpoint: Endpoint = "review") -> Outcome:
    """Run the rules for one request. ``deadline`` is a ``time.monotonic()`` value.

    The state is read once (``StateView.of``), when the kind is one we check.
    """
    out = Outcome(req)
    if req.operation not in ("CREATE", "UPDATE") or req.obj is None:
        return out
    rules = rules_for(req.group, req.kind)
    if rules is None:
        return out
    if req.version and not rules.serves(req.version):
        out.notes.append(f"{req.kind} {req.group}/{req.version} is not checked; "
                         f"dra-webhook validates {rules.api_version()} (the version Kubernetes 1.37 serves)")
        return out
    out.handled = True
    view = StateView.of(state) if state is not None else None
    ctx = RuleContext(gates=settings.gates, operation=req.operation, old=req.old,
                      subresource=req.subresource, dry_run=req.dry_run)
    mutation, obj = _mutate(rules, req, ctx, settings, view, defaults=endpoint != "validate",
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
    out.notes.extend(_state_notes(rules, obj, view))
    if out.allowed and settings.feasibility and req.subresource == "":
        if rules.feasibility and (req.operation == "CREATE" or req.dry_run):
            out.feasibility = _feasibility(obj, settings, view, deadline)
            out.feasibility_checked = True
        elif rules.impact:
            out.feasibility = _feasibility(obj, settings, view, deadline, old=req.old, impact=True)
            out.feasibility_checked = True
    return out


def _mutate(rules: KindRules, req: AdmissionRequest, ctx: RuleContext, settings: Settings,
            view: StateView | None, *, defaults: bool,
            deadline: float | None) -> tuple[Mutation, dict[str, Any]]:
    """The rules' strips plus, when ``defaults``, capacity defaulting; and the patched object.

    ``/validate`` skips defaulting: the validating webhook cannot return a patch, and the
    capacity requests it would add are never validated (RC-EX-8), so it cannot change a verdict.
    """
    assert req.obj is not None
    mutation = rules.mutate(req.obj, ctx)
    obj = _patched(req, req.obj, mutation)
    if obj is None:
        return Mutation(), req.obj
    if defaults and rules.capacity_defaulting and req.operation == "CREATE" \
            and settings.capacity_defaulting and view is not None:
        try:
            extra = plan_capacity_defaults(obj, view.snapshot, settings.gates,
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


def _state_notes(rules: KindRules, obj: dict[str, Any], view: StateView | None) -> list[str]:
    """Kind-specific notes that need the cluster state (e.g. a pod joining a PodGroup)."""
    if view is None:
        return []
    try:
        return rules.state_warnings(obj, view.snapshot)
    except Exception:
        log.exception("state-based warnings failed")
        return []


def _feasibility(obj: dict[str, Any], settings: Settings, view: StateView | None,
                 deadline: float | None, *, old: dict[str, Any] | None = None, impact: bool = False) -> list[str]:
    """Feasibility warnings (with ``impact``: the impact preview of a write over ``old``); any
    failure here only ever becomes a warning."""
    if view is None:
        return []
    if not view.ready:
        return ["feasibility: not checked, cluster state is not synced yet"]
    now = time.monotonic()
    budget_end = _budget_end(settings, deadline)
    if budget_end <= now:
        return ["feasibility: not checked, no time left before the request deadline"]
    try:
        if impact:
            warnings = impact_warnings(obj, old, view.snapshot, settings.gates, deadline=budget_end,
                                       max_steps=settings.allocator_max_steps)
        else:
            warnings = feasibility_warnings(obj, view.snapshot, settings.gates, deadline=budget_end,
                                            max_steps=settings.allocator_max_steps)
        if view.stale:
            warnings.append(f"feasibility: {view.stale}; the answer may be out of date")
        return warnings
    except Exception as e:  # a failure in the check only ever adds a warning
        log.exception("feasibility check failed")
        return [f"feasibility: check failed: {type(e).__name__}"]


def respond(out: Outcome, settings: Settings, endpoint: Endpoint,
            api_version: str = "admission.k8s.io/v1") -> Answer:
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
    sent = sanitize_warnings(warnings, max_count=settings.max_warnings,
                             max_length=settings.max_warning_length)
    body = build_response(req.uid, allowed=allowed, errors=errors, kind=req.kind, group=req.group,
                          name=req.display_name, patch=patch, api_version=api_version, warnings=sent)
    return Answer(body, allowed, sent, patch, [e.field for e in errors])


def review(doc: Any, settings: Settings, state: StateSource | None = None, *,
           endpoint: Endpoint = "review", deadline: float | None = None) -> tuple[dict[str, Any], Outcome]:
    """Parse an AdmissionReview document, evaluate it and build the response.

    Raises ``BadReview`` when ``doc`` is not an AdmissionReview.
    """
    req = parse_review(doc)
    out = evaluate(req, settings, state, deadline=deadline, endpoint=endpoint)
    return respond(out, settings, endpoint).review, out
